// Internal: the lock file beside a token file of the file token store: held while its process requests a token,
// refreshed (mtime), removed by its process, on `unload` too.

import { keepRefreshed } from "../core/_deadlines.ts";
import { tried } from "../core/_check.ts";

/** How often a process refreshes the lock it holds (its mtime), in ms. */
const LOCK_REFRESH = 1_000;

/** Keeps the lock fresh (mtime) until released; removed on `unload` too, as `Deno.exit` skips `finally`. */
export function holdLock(path: string, owner: string, now: () => number) {
  const stop = keepRefreshed(LOCK_REFRESH, async () => {
    const stamp = new Date(now());
    await Deno.utime(path, stamp, stamp);
  });
  const onExit = () => removeOwnedSync(path, owner);
  globalThis.addEventListener("unload", onExit);
  return {
    release() {
      stop();
      globalThis.removeEventListener("unload", onExit);
      removeOwnedSync(path, owner);
    },
  };
}

/** A lock's content, if it is a small regular file (a FIFO planted there would hang a read); else undefined. */
export async function lockText(path: string, info?: Deno.FileInfo) {
  const seen = info ?? await Deno.lstat(path).catch(() => undefined);
  if (seen === undefined || !seen.isFile || seen.size > 1024) return undefined;
  return await Deno.readTextFile(path).catch(() => undefined);
}

/** The time (epoch ms, by its maker's `now`) a lock's content says it was made; 0 for one without (0.4.0's). */
export function stampOf(content: string): number {
  const at = (tried(() => JSON.parse(content)) as { at?: unknown } | null)?.at;
  return typeof at === "number" && Number.isFinite(at) ? at : 0;
}

/** Removes the lock at `path` if it is still `owner`'s (not taken over since). */
function removeOwnedSync(path: string, owner: string): void {
  try {
    // Read only as a small regular file: a FIFO swapped in blocked the process for good.
    const info = Deno.lstatSync(path);
    if (!info.isFile || info.size > 1024) return;
    if (Deno.readTextFileSync(path) === owner) Deno.removeSync(path);
  } catch {
    // Gone already, or unreadable: nothing of ours to remove.
  }
}
