// Internal: `sync`: a list copied into a SQLite or JSONL file, progress on standard error; Ctrl-C commits what it has (130).

import { dirname } from "node:path";
import { createJsonlSink } from "../sync/jsonl_sink.ts";
import { createSqliteSink } from "../sync/sqlite_sink.ts";
import { syncList } from "../sync/sync_list.ts";
import type { SyncSink } from "../sync/sink.ts";
import type { SyncResult } from "../sync/sync_options.ts";
import { programOf, type Session } from "./_session.ts";
import { Interrupted, onCtrlC } from "./_list.ts";
import { UsageError } from "./_flag_values.ts";
import { given } from "../core/_check.ts";
import { isPermissionError } from "../core/_cause.ts";
import { counted, itemsPerSecond } from "./_render.ts";
import { SyncError, type SyncErrorReason } from "../sync/sync_error.ts";
import { REDACTED } from "../core/_redact.ts";
import { ApiError } from "../core/errors.ts";
import { type SyncRequest, tableOf } from "./_sync_plan.ts";
import { progressLine } from "./_sync_progress.ts";

/** Brings the copy up to date. */
export async function runSync(session: Session, request: SyncRequest) {
  const ctrlC = onCtrlC(session.io);
  try {
    await checkFolder(request.target);
    await syncInto(session, request, ctrlC.signal);
  } catch (error) {
    throw explained(error, request, session.io.helpHint);
  } finally {
    ctrlC.stop?.();
  }
}

async function syncInto(
  session: Session,
  request: SyncRequest,
  signal: AbortSignal,
): Promise<void> {
  const { io } = session;
  const now = io.now ?? Date.now;
  const started = now();
  // Opened first: a copy it refuses leaves no progress timer running.
  const sink = openSink(request, (holder) => {
    session.status.clear(); // a batch waits for the write lock under the progress line
    io.stderr.write(`waiting for ${request.target}, held by ${holder}\n`);
  });
  const progress = progressLine(io.stderr, now, started, request.priority);
  // Another line on standard error (--verbose) erases it first.
  session.status.clear = progress.clear;
  session.clientEvents.listener = progress.heard;
  let committed = 0;
  try {
    // The request less what is not an option of syncList; no key left undefined.
    const { path, target: _, kind: __, args: ___, id, ...options } = request;
    const result = await syncList(session.client, path, {
      ...given(options),
      id,
      sink,
      signal,
      now,
      onProgress: (step) => {
        committed = step.written;
        progress.update(step);
      },
    });
    progress.end();
    const seconds = (now() - started) / 1000;
    io.stderr.write(resultLines(request, result, seconds, now()));
  } catch (error) {
    const what = `${counted(committed, "item")} to ${request.target}`;
    throw stoppedWith(error, what, committed > 0);
  } finally {
    delete session.clientEvents.listener;
    progress.end();
    sink.close?.();
  }
}

/** A run stopped by Ctrl-C, or by the service after batches committed (`kept`): `error`, saying what it committed. */
function stoppedWith(error: unknown, what: string, kept: boolean): unknown {
  if (error instanceof Interrupted) {
    return new Interrupted(
      `interrupted: committed ${what}; run the same command again to resume`,
      error.exitCode,
    );
  }
  // A 429 without Retry-After ends the run: say what the copy kept, and how to go on.
  if (!(error instanceof ApiError) || !kept) return error;
  const { status, reason, attempts, url, bodyExcerpt } = error;
  const init = { status, url, ...given({ reason, attempts, bodyExcerpt }) };
  return new ApiError(
    `${error.message}; committed ${what} before it: run the same command again to resume`,
    { ...init, cause: error },
  );
}

/** What a finished run says on standard error: its counts, then what it lacks or skipped. */
export function resultLines(
  request: SyncRequest,
  result: SyncResult,
  seconds: number,
  now: number,
): string {
  const rate = `${itemsPerSecond(result.read, seconds)} read`;
  const inserted = counted(result.inserted, "new item");
  const requests = counted(result.requests, "request");
  const resumed = result.resumed ? ", resumed" : "";
  const lines = [
    `${inserted}, ${result.updated} changed, ${result.deleted} removed (${requests}, ${rate}${resumed})`,
  ];
  // A list whose end moved on as fast as it was read holds the cycle for the run: said, lest a confirming run pass for one.
  const held = request.sweep === Infinity && result.sweepLeft > 0;
  if (held) {
    const why = request.maxDuration === undefined
      ? "the list's end moving as it was read; the copy is not verified: run again once the list holds still"
      : "stopped by --max-duration; the copy is not verified: the next run goes on with it";
    lines.push(`--sweep all did not complete its cycle, ${why}`);
  }
  const { verifiedAt } = result;
  if (result.behind > 0) {
    lines.push(behindLine(request, result.behind, result.sweepLeft));
  } else if (!held && now - (verifiedAt ?? -Infinity) > 86_400_000) {
    // Not checked whole in a day (a back-dated item would not show): when it last was, and how to check it now.
    const when = verifiedAt === undefined
      ? "never verified whole yet"
      : `last verified whole ${new Date(verifiedAt).toISOString()} (${
        Math.floor((now - verifiedAt) / 3_600_000)
      } h ago)`;
    lines.push(`${when}; --sweep all verifies it now`);
  }
  // Only a sweep at the spare rate keeps that rate; one of --sweep N requests a run goes as often as it is run.
  const spare = request.maxDuration !== undefined;
  if (spare && result.nextVerifiedAt !== undefined && result.sweepLeft > 0) {
    const next = new Date(result.nextVerifiedAt).toISOString();
    lines.push(`at this run's rate the whole copy is next verified by ${next}`);
  }
  if (result.skipped > 0) {
    const ids = result.skippedIds.slice(0, 5).map((id) => JSON.stringify(id))
      .join(", ") + (result.skipped > 5 ? ", …" : "");
    const skipped = counted(result.skipped, "item");
    lines.push(`${skipped} skipped, which it cannot store: ${ids}`);
  }
  return lines.map((line) => `${request.target}: ${line}\n`).join("");
}

/** How many items the copy is known to lack, and when the sweep will have them. */
function behindLine(request: SyncRequest, behind: number, sweepLeft: number) {
  const [them, lie] = behind === 1 ? ["it", "it lies"] : ["them", "they lie"];
  const sweep = request.sweep ?? 10;
  // Each run sweeps `--sweep` requests (a new cycle needs at least one); --max-duration alone, as long as it lasts. An
  // item inserted where the cycle has passed waits for the next.
  const runs = Math.ceil(Math.max(sweepLeft, 1) / Math.max(sweep, 1));
  const pace = request.sweep === undefined && request.maxDuration !== undefined
    ? "as --max-duration lets it"
    : `within about ${
      counted(runs, "more run")
    } where ${lie} ahead of its place, else in the cycle after`;
  const when = sweep === 0
    ? `the sweep is off (--sweep 0): run with --sweep all to bring ${them} in`
    : `the sweep brings ${them} in ${pace}, or now with --sweep all`;
  const items = behind === 1 ? "1 item is" : `${behind} items are`;
  return `${items} known to be missing (added behind the copy's last item); ${when}`;
}

/** A missing folder is the caller's to create, a folder at `--to` another name to give: said before anything else. */
async function checkFolder(target: string): Promise<void> {
  // Off Deno, or not ours to look at (--allow-read names the copy's files only): the sink says what it lacks.
  if (typeof Deno === "undefined") return;
  const folder = dirname(target);
  const look = (stat: typeof Deno.stat, path: string) =>
    stat(path).catch((error) =>
      error instanceof Deno.errors.NotCapable ? null : undefined
    );
  const info = await look(Deno.stat, folder);
  const seen = await look(Deno.lstat, target);
  // The sink would refuse a folder, FIFO or device as a failure (exit 1); a link is the sink's to refuse (lstat).
  const problem = info !== null && info?.isDirectory !== true
    ? `the folder ${folder} does not exist; create it, or give --to a path in a folder that does`
    : seen?.isDirectory
    ? `${target} is a folder, not a file. Nothing was changed: give --to a new file`
    : seen && !seen.isFile && !seen.isSymlink
    ? `${target} is not a plain file (a FIFO or a device). Nothing was changed: give --to a new file`
    : undefined;
  if (problem !== undefined) throw new UsageError(`--to ${target}: ${problem}`);
}

/** The message of the service's 400 to sorting by --id's field (the sync's sort without --sort-by), if it is one. */
function sortRefused(error: unknown, { sortBy, id }: SyncRequest) {
  if (!(error instanceof ApiError) || error.status !== 400 || sortBy) return;
  // Its own words (the address always names both) speak of sorting or order, or name the field.
  const said = error.bodyExcerpt ?? "";
  const words = said.split(/[^\p{L}\p{N}_]+/u);
  return /sort|order/i.test(said) || words.includes(id)
    ? error.message
    : undefined;
}

/** The error as one line about `--to` where it is about the target: a copy this run cannot use or write (exit 2). */
function explained(
  error: unknown,
  request: SyncRequest,
  helpHint: string | undefined,
): unknown {
  const { target } = request;
  // One whose words went whole (they held a secret): said by its reason, then handled as the library's words are.
  if (error instanceof SyncError && error.message === REDACTED) {
    const hidden = "its details held a secret or token and are not shown";
    const why = `${REASONS[error.reason]} (${error.reason}; ${hidden}).`;
    error = reworded(error, `Cannot sync into ${target}: ${why}`);
  }
  // With no --sort-by the sync sorts by --id's field, which a service may refuse to sort by: a wrong --id, said as such;
  // another 400 (a refused page size) is the service's to say.
  const sortMessage = sortRefused(error, request);
  if (sortMessage !== undefined) {
    return new UsageError(
      `${sortMessage}; the sync sorts by --id's field (${request.id}) unless --sort-by names another: give --id the field that holds each item's id`,
    );
  }
  if (error instanceof SyncError) {
    if (error.reason === "too-many-deletes") {
      return confirmHint(error, request, helpHint);
    }
    if (error.reason === "file" && cannotWrite(error.cause)) {
      return usageCannotWrite(error, request);
    }
    // Items keep their id under another name than --id's; an id the service sent empty or null stays its failure.
    if (
      error.reason === "missing-id" &&
      / received undefined$/.test(error.message)
    ) {
      return new UsageError(
        `${error.message}; give --id the field that holds each item's id`,
      );
    }
    if (!["sink-mismatch", "link"].includes(error.reason)) return error;
    // In the tool's words: no flag names a table, and the sink is `partner-api sync`.
    const heads = [`Cannot sync into ${target}: `, "Cannot sync: "];
    const head = heads.find((h) => error.message.startsWith(h)) ??
      /^Cannot sync into the table \S+: /.exec(error.message)?.[0] ?? "";
    const what = error.message.slice(head.length)
      .replace(/sync into (a new|another) (table or )?/, "give --to $1 ")
      .replaceAll("this sink", "partner-api sync");
    return new UsageError(`--to ${target}: ${what}`);
  }
  if ((error as { option?: string } | null)?.option === "sink") {
    const what = (error as Error).message.replace(/^Cannot sync: 'sink' /, "");
    return new UsageError(
      `--to ${target} holds a copy made with other options (${what}); give --to another file, or the same --id, --sort-by, --sort-direction and --query`,
    );
  }
  return cannotWrite(error) ? usageCannotWrite(error, request) : error;
}

/** What each reason means and what to do, for a SyncError whose words held a token (an id quoting one) and went. */
const REASONS: Record<SyncErrorReason, string> = {
  "missing-id": "an item has no id: give --id the field that holds it",
  unordered:
    "the items came out of the asked order (ties must come by id, compared as text), without the sort field, or in pages that do not join: check --sort-by, --sort-direction and --id, or run again",
  "sink-mismatch":
    "the copy is not the one its checkpoint describes; nothing was changed: give --to another file",
  locked: "another run held the copy too long: run again once it ends",
  "lock-lost": "another run took the copy over; this run wrote nothing more",
  link:
    "a file of the copy is a link or was swapped: give --to a file of your own",
  file: "a file of the copy cannot be created, read or written: check --to",
  "repeated-page":
    "pages at different numbers answered the same items: the service ignores page",
  "too-many-deletes":
    "a sweep cycle would remove more than --max-deletes allows; nothing was committed",
};

/** `error` in other words: its reason, path and `maxDeletesNeeded` kept, itself the cause. */
function reworded(error: SyncError, message: string): SyncError {
  return Object.assign(
    new SyncError(message, error.reason, error.path, { cause: error }),
    given({ maxDeletesNeeded: error.maxDeletesNeeded }),
  );
}

function usageCannotWrite(error: unknown, request: SyncRequest): UsageError {
  const what = (error as Error).message.split("\n")[0];
  // A JSONL commit goes through a temporary file beside the copy, which no flag can name.
  const grant = request.kind === "jsonl"
    ? "its folder"
    : "it and its -wal, -shm and -journal files";
  return new UsageError(
    `--to ${request.target}: cannot write it (${what}); give --to a file you can write, with --allow-read and --allow-write for ${grant}`,
  );
}

/** The guard held a mass delete back: the command with the `--max-deletes` that lets it through. */
function confirmHint(
  error: SyncError,
  request: SyncRequest,
  helpHint: string | undefined,
): SyncError {
  const needed = error.maxDeletesNeeded;
  const command = needed === undefined
    ? "the same command with a larger --max-deletes"
    : `${programOf(helpHint)} ${confirmArgs(request.args, needed)}`;
  const what = error.message.replace(/^Cannot sync into [^:]+: /, "")
    .replace(/ If the list really lost them.*$/, "");
  return reworded(
    error,
    `${request.target}: ${what} If the list really lost them, confirm with: ${command}`,
  );
}

/**
 * `args` with `--max-deletes` set to `share` and `--sweep all` (a confirming run whose sweep ends mid-cycle confirms
 * nothing yet), each quoted for a shell where needed.
 */
export function confirmArgs(args: readonly string[], share: number): string {
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--max-deletes" || arg === "--sweep") i++;
    else if (!/^--(max-deletes|sweep)=/.test(arg)) kept.push(arg);
  }
  return [...kept, "--sweep", "all", "--max-deletes", String(share)]
    .map(shellWord)
    .join(" ");
}

/** `word` as a POSIX shell reads it back: as it is when safe, else in single quotes. */
export function shellWord(word: string): string {
  return /^[\w./:=@,+-]+$/.test(word)
    ? word
    : `'${word.replaceAll("'", "'\\''")}'`;
}

function cannotWrite(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  // Deno's refusals, told by name (off Deno, a runtime's codes say the same).
  return isPermissionError(error) || code === "EACCES" || code === "EPERM" ||
    code === "EROFS" ||
    /readonly database/.test(String((error as Error | null)?.message));
}

function openSink(
  request: SyncRequest,
  onLockWait: (holder: string) => void,
): SyncSink<unknown> & { close?(): void } {
  // A second run waits for the first until Ctrl-C.
  const lock = { lockWait: Infinity, onLockWait };
  const { target } = request;
  return request.kind === "jsonl"
    ? createJsonlSink(target, lock)
    : createSqliteSink(target, { table: tableOf(request.path), ...lock });
}
