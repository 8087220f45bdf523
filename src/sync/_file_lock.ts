// Internal: a lock file beside a copy (`<path>.lock`) holding its run's token: created exclusively, refreshed (mtime)
// while held, taken over only once stale by one run at a time (a guard file), removed only while still this run's.

import process from "node:process";
import { readText, removeFile, statOf, withFile } from "./_files.ts";
import { parsedJson } from "./_checkpoint.ts";
import { staleJudge } from "../core/_clock.ts";
import { keepRefreshed } from "../core/_deadlines.ts";
import {
  isRunToken,
  lockLost,
  type LockWait,
  REFRESH_EVERY,
  runToken,
  STALE_AFTER,
  waitForLock,
} from "./_lease.ts";

export type FileLock = Readonly<ReturnType<typeof held>>;

type LockContent = { readonly owner: string; readonly pid: number };

/** Takes the lock file at `path`, waiting as `options` say. @throws {SyncError} (`"locked"`, `"link"`) */
export function takeFileLock(
  path: string,
  options: LockWait,
  now: () => number = Date.now,
): Promise<FileLock> {
  const token = runToken();
  const stale = staleJudge(now, STALE_AFTER);
  const taken = (previous?: string) => ({
    taken: held(path, token, now, previous),
  });
  return waitForLock<FileLock>(path, options, async () => {
    if (await create(path, token, now)) return taken();
    const current = await look(path);
    if (current === undefined) return { holder: "a run that just ended" };
    const over = stale(path, current) &&
      await takeOver(path, token, current.owner, { stale, now });
    // Its owner names the dead run's files only in a token's shape (a planted `../x` would name another file).
    if (over) {
      return taken(isRunToken(current.owner) ? current.owner : undefined);
    }
    return { holder: `pid ${current.pid}` };
  });
}

function held(
  path: string,
  token: string,
  clock: () => number,
  previous: string | undefined,
) {
  let lost = false;
  // Lost once the file is gone or names another run; one that cannot be read (EMFILE, EIO) is no takeover, just not
  // refreshed this time.
  const stop = keepRefreshed(REFRESH_EVERY, async () => {
    const mine = await withFile(path, "write", async (file) => {
      if (parse(await file.readFile("utf8")).owner !== token) return false;
      const now = new Date(clock());
      await file.utimes(now, now);
      return true;
    }).catch(() => true);
    if (mine !== true) lost = true;
  });
  const ours = async () => parse(await readText(path)).owner === token;
  return {
    /** This run's token (also used to name its temporary files). */
    token,
    /** The token of the stale run this one took the lock over from: a file it was writing when it died may remain. */
    previous,
    /** @throws {SyncError} (`"lock-lost"`) Unless the lock is still this run's. */
    async assertHeld() {
      lost ||= !await ours();
      if (lost) throw lockLost(path);
    },
    async [Symbol.asyncDispose]() {
      stop();
      if (await ours().catch(() => false)) {
        await removeFile(path).catch(() => {});
      }
    },
  };
}

/** Creates the lock file with this run's token, stamped by the run's clock (which judges it); false when one exists. */
async function create(path: string, token: string, now: () => number) {
  const content: LockContent = { owner: token, pid: process.pid };
  return await withFile(path, "create", async (file) => {
    await file.writeFile(JSON.stringify(content));
    const at = new Date(now());
    await file.utimes(at, at);
    return true;
  }) ?? false;
}

/** The lock's owner and last refresh, or undefined once it is gone. A link (planted, dangling or not) is refused, naming its owner. */
async function look(path: string) {
  const info = await statOf(path, true);
  if (info === undefined) return undefined;
  return { ...parse(await readText(path)), refreshedAt: info.mtime.getTime() };
}

/**
 * Takes over the stale lock of `owner`, only under the guard file `<path>.takeover` (created exclusively; stale like a
 * lock) and after a look again: two runs cannot both take it, and a fresh lock is never moved (renaming it away and
 * back made its holder stop with "lock-lost").
 */
async function takeOver(
  path: string,
  token: string,
  owner: string,
  { stale, now }: { stale: ReturnType<typeof staleJudge>; now: () => number },
): Promise<boolean> {
  const guard = `${path}.takeover`;
  if (!await create(guard, token, now)) {
    const other = await look(guard);
    if (other !== undefined && stale(guard, other)) {
      await removeFile(guard).catch(() => {});
    }
    return false;
  }
  try {
    const current = await look(path);
    if (current !== undefined) {
      // Another run's by now, or refreshed by its owner since: not stale.
      if (current.owner !== owner || !stale(path, current)) return false;
      await removeFile(path);
    }
    return await create(path, token, now);
  } finally {
    await removeFile(guard).catch(() => {});
  }
}

/** The lock's content; a lock of no owner (not yet written, damaged) as owner "", pid 0. */
function parse(text: string | undefined): LockContent {
  const value = parsedJson(text ?? "") as Partial<LockContent> | null;
  return typeof value?.owner === "string"
    ? { owner: value.owner, pid: Number(value.pid) || 0 }
    : { owner: "", pid: 0 };
}
