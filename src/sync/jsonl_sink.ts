// A sync sink on a JSONL file: one item per line, appended; the checkpoint,
// the committed length and a fingerprint of the last committed line in a
// side file, replaced atomically after the lines are on disk. Everything is
// checked before anything is changed; one run at a time holds the copy.

import { rename, unlink } from "node:fs/promises";
import type { SyncSink } from "./sink.ts";
import { type FileLock, takeFileLock } from "./_file_lock.ts";
import {
  fingerprint,
  openFile,
  readRange,
  readText,
  refuseLink,
  replaceFile,
  sizeOf,
} from "./_files.ts";
import { DEFAULT_LOCK_WAIT, lockLost, runToken } from "./_lease.ts";
import {
  type Committed,
  type FileEnd,
  readSideFile,
  type Rewrite,
  sideFileText,
} from "./_jsonl_state.ts";
import { SyncError } from "./sync_error.ts";
import { tooMany, tooManyDeletes } from "./_deletes.ts";

/**
 * Options of {@linkcode createJsonlSink}.
 *
 * @example Waiting at most 5 s for another run
 * ```ts
 * import { createJsonlSink, type JsonlSinkOptions } from "@partner-api/client/sync";
 * import { equal } from "node:assert/strict";
 *
 * const options: JsonlSinkOptions = { lockWait: 5_000 };
 * const sink = createJsonlSink(".test-tmp/doc-jsonl-options.jsonl", options);
 * equal(typeof sink.lock, "function");
 * ```
 */
export interface JsonlSinkOptions {
  /**
   * How long a run waits for another that holds the copy, in ms, before it
   * gives up with `SyncError` (`"locked"`). `Infinity` waits until the
   * run's signal aborts.
   *
   * @default {30000}
   */
  lockWait?: number;
  /** Hears once that a run waits, with who holds the copy (e.g. `pid 42`). */
  onLockWait?: (holder: string) => void;
}

/**
 * A sink that appends items to a JSONL file, one JSON object per line.
 *
 * Beside it, `<path>.checkpoint.json` holds the checkpoint, the committed
 * length and a fingerprint of the last committed line; it is replaced
 * (write, sync, rename) only after the lines are synced. `load()` checks
 * the copy against it and changes nothing: a file the sink did not make,
 * a side file that is damaged, or a copy cut or changed is refused with
 * `SyncError` (`"sink-mismatch"`). Lines past the committed length (a run
 * killed mid-batch) are cut at the next write. A `full` pass writes
 * `<path>.rewrite` and renames it over the copy when it completes, so the
 * copy stays whole until then. `<path>.lock` keeps runs apart. No file is
 * opened through a symbolic link (`SyncError` `"link"`); new files are
 * 0600. Needs read and write permission on the path and on `<path>.*`.
 *
 * @param path The file.
 * @param options How long to wait for another run.
 * @returns The sink.
 *
 * @example Lines and checkpoint
 * ```ts
 * import { createJsonlSink } from "@partner-api/client/sync";
 * import { equal } from "node:assert/strict";
 *
 * await Deno.mkdir(".test-tmp", { recursive: true });
 * const path = ".test-tmp/doc-jsonl-sink.jsonl";
 * for (const file of [path, `${path}.checkpoint.json`]) await Deno.remove(file).catch(() => {});
 * const sink = createJsonlSink<{ n: number }>(path);
 * equal(await sink.load(), undefined); // no copy yet
 * const checkpoint = { version: 1 as const, path: "numbers", sortBy: "n", id: "n", query: {}, edge: { value: 1, id: "1" }, offset: 1, full: false, complete: true };
 * await sink.write([{ n: 1 }], checkpoint, ["1"]);
 * equal(await Deno.readTextFile(path), '{"n":1}\n');
 * equal((await sink.load())?.offset, 1);
 * ```
 */
export function createJsonlSink<T>(
  path: string,
  options: JsonlSinkOptions = {},
): SyncSink<T> {
  const files = { copy: path, side: `${path}.checkpoint.json` };
  const rewritePath = `${path}.rewrite`;
  let committed: Committed | undefined;
  let loaded = false;
  let lock: FileLock | undefined;
  const token = runToken();
  /** Files this run appended to: their size must stay what it committed. */
  const ours = new Set<string>();
  const load = async () => {
    committed = await checkCopy(files, rewritePath);
    loaded = true;
    return committed?.checkpoint ?? undefined;
  };
  /** The commit point: only while this run still holds the copy. */
  const save = async (next: Committed) => {
    await lock?.assertHeld();
    await replaceFile(files.side, sideFileText(next), lock?.token ?? token);
    committed = next;
  };
  const append = async (file: string, from: FileEnd, lines: Lines) => {
    const end = await appendLines(file, from, lines, async (size) => {
      // Another writer's lines past ours: this run lost the copy.
      if (ours.has(file) && size !== from.length) throw lockLost(file);
      await lock?.assertHeld();
    });
    ours.add(file);
    return end;
  };
  return {
    load,
    async lock(run = {}) {
      lock = await takeFileLock(`${path}.lock`, {
        signal: run.signal,
        wait: options.lockWait ?? DEFAULT_LOCK_WAIT,
        onWait: options.onLockWait,
      });
      return lock;
    },
    marksDeletes: false,
    async write(items, checkpoint, _ids, context) {
      if (!loaded) await load();
      // A new copy's side file comes first: a run killed in its first
      // batch leaves a copy that the next run recognises as begun.
      if (committed === undefined) await save({ checkpoint: null, end: EMPTY });
      if (committed?.renaming) {
        // A run killed between recording a finished rewrite and renaming it.
        await renameOver(rewritePath, path);
        await save({ checkpoint: committed.checkpoint, end: committed.end });
      }
      const now = committed!;
      const lines = linesOf(items);
      if (context?.phase !== "sweep") {
        const end = await append(path, now.end, lines);
        await save({ ...now, checkpoint, end, renaming: false });
        return { inserted: items.length };
      }
      const under = now.rewrite?.cycle === context.cycle
        ? now.rewrite
        : await startCycle(path, rewritePath, now.end, context.cycle);
      const end = await append(rewritePath, under.end, lines);
      const rewrite = { ...under, end, lines: under.lines + items.length };
      if (context.endsCycle === undefined) {
        await save({ ...now, checkpoint, rewrite });
        // Counted when the cycle completes: a JSONL copy has no index.
        return { inserted: 0, updated: 0 };
      }
      const counts = cycleCounts(rewrite, context.endsCycle.maxDeletes, path);
      // The head's lines since the cycle began follow the sweep's.
      const tail = await readRange(path, rewrite.mainAt, now.end.length);
      const whole = await append(rewritePath, end, tailLines(tail));
      await save({ checkpoint, end: whole, renaming: true });
      await renameOver(rewritePath, path);
      ours.delete(path);
      await save({ checkpoint, end: whole });
      return counts;
    },
  };
}

const EMPTY: FileEnd = { length: 0, last: null };

/** A batch as text, and its last line. */
interface Lines {
  readonly text: string;
  readonly last: string | undefined;
}

/** The lines of a batch, and the last one. */
function linesOf<T>(items: readonly T[]): Lines {
  const lines = items.map((item) => `${JSON.stringify(item)}\n`);
  return { text: lines.join(""), last: lines.at(-1) };
}

/**
 * Reads the side file and checks the copy (and a rewrite under way)
 * against it. Reads only.
 *
 * @throws {SyncError} (`"sink-mismatch"`, `"link"`)
 */
async function checkCopy(
  files: { copy: string; side: string },
  rewritePath: string,
): Promise<Committed | undefined> {
  const side = await readText(files.side);
  const size = await sizeOf(files.copy);
  if (side === undefined) {
    if ((size ?? 0) === 0) return undefined;
    throw mismatch(
      files,
      `${files.copy} holds ${size} bytes but ${files.side} is missing: it was not written by a sync, or its side file was lost`,
    );
  }
  const committed = readSideFile(side);
  if (committed === undefined) {
    throw mismatch(files, `${files.side} is damaged or from another version`);
  }
  if (committed.renaming && await sizeOf(rewritePath) !== undefined) {
    // Killed between its last save and the rename: the rewrite is the copy.
    await expectEnd(files, rewritePath, committed.end);
    return committed;
  }
  await expectEnd(files, files.copy, committed.end);
  if (committed.rewrite !== undefined && !committed.renaming) {
    await expectEnd(files, rewritePath, committed.rewrite.end);
  }
  return committed;
}

/** Checks that `path` holds at least `end.length` bytes, ending with the committed line. */
async function expectEnd(
  files: { copy: string; side: string },
  path: string,
  end: FileEnd,
): Promise<void> {
  const size = await sizeOf(path) ?? 0;
  if (size < end.length) {
    throw mismatch(
      files,
      `${path} holds ${size} bytes, fewer than the ${end.length} that ${files.side} says were committed`,
    );
  }
  if (end.last === null) return;
  const bytes = await readRange(path, end.last.start, end.length);
  if (bytes === undefined || await fingerprint(bytes) !== end.last.hash) {
    throw mismatch(
      files,
      `the last committed line of ${path} is not the one ${files.side} recorded: the copy was changed`,
    );
  }
}

function mismatch(files: { copy: string; side: string }, what: string) {
  return new SyncError(
    `Cannot sync into ${files.copy}: ${what}. Nothing was changed: sync into a new file, or restore ${files.copy} and ${files.side} together`,
    "sink-mismatch",
    files.copy,
  );
}

/** A new cycle's rewrite: an empty file of its own, and the copy as it stands. */
async function startCycle(
  path: string,
  rewritePath: string,
  main: FileEnd,
  cycle: number,
): Promise<Rewrite> {
  await refuseLink(rewritePath);
  await unlink(rewritePath).catch(() => {});
  await (await openFile(rewritePath, "create")).close();
  return {
    end: EMPTY,
    cycle,
    mainAt: main.length,
    mainLines: await countLines(path, main.length),
    lines: 0,
  };
}

/**
 * What a completed cycle changes, in lines: the sweep read `lines` where the
 * copy held `mainLines`. A JSONL copy has no index, so these are net counts.
 *
 * @throws {SyncError} (`"too-many-deletes"`) When more than `maxDeletes` of
 * the copy would go.
 */
function cycleCounts(rewrite: Rewrite, maxDeletes: number, path: string) {
  const deleted = Math.max(0, rewrite.mainLines - rewrite.lines);
  if (tooMany(deleted, rewrite.mainLines, maxDeletes)) {
    throw tooManyDeletes(deleted, rewrite.mainLines, maxDeletes, path);
  }
  return {
    deleted,
    inserted: Math.max(0, rewrite.lines - rewrite.mainLines),
    updated: 0,
  };
}

/** Lines already written elsewhere, as a batch to append. */
function tailLines(bytes: Uint8Array | undefined): Lines {
  const text = new TextDecoder().decode(bytes ?? new Uint8Array());
  if (text === "") return { text, last: undefined };
  const start = text.lastIndexOf("\n", text.length - 2) + 1;
  return { text, last: text.slice(start) };
}

/** The lines in the first `length` bytes of `path`. */
async function countLines(path: string, length: number): Promise<number> {
  const CHUNK = 1 << 20;
  let lines = 0;
  for (let at = 0; at < length; at += CHUNK) {
    const bytes = await readRange(path, at, Math.min(length, at + CHUNK));
    for (const byte of bytes ?? []) if (byte === 10) lines++;
  }
  return lines;
}

/** Renames the finished rewrite over the copy, if it is still there. */
async function renameOver(rewritePath: string, path: string): Promise<void> {
  if (await sizeOf(rewritePath) === undefined) return;
  await refuseLink(path);
  await rename(rewritePath, path);
}

/**
 * Writes `lines` at `from.length` of `path` (cutting what a killed batch
 * left past it), synced; the new end.
 */
async function appendLines(
  path: string,
  from: FileEnd,
  lines: Lines,
  guard: (size: number) => Promise<void>,
): Promise<FileEnd> {
  if (lines.last === undefined) return from;
  const bytes = new TextEncoder().encode(lines.text);
  const exists = await sizeOf(path) !== undefined;
  const file = await openFile(path, exists ? "write" : "create");
  try {
    // The last look before the cut: the lock still ours, no foreign lines.
    await guard((await file.stat()).size);
    await file.truncate(from.length);
    await file.write(bytes, 0, bytes.length, from.length);
    await file.datasync();
  } finally {
    await file.close();
  }
  const lastBytes = new TextEncoder().encode(lines.last);
  const length = from.length + bytes.length;
  return {
    length,
    last: {
      start: length - lastBytes.length,
      hash: await fingerprint(lastBytes),
    },
  };
}
