// Internal: a lock file next to a sync's target, so that two runs on one
// copy do not interleave: created exclusively with the owner's PID,
// refreshed while held, taken over once it has not been refreshed for 5 s
// (its owner is gone), removed when the run ends (Ctrl-C included).

/** Not refreshed for this long, a lock's owner is gone. */
export const STALE_AFTER = 5_000;
const REFRESH_EVERY = 1_000;
const POLL_EVERY = 250;

/** A lock held; `release()` removes it. */
export interface HeldLock {
  release(): Promise<void>;
}

/** Whether a lock last refreshed at `refreshedAt` is stale at `now`. */
export function isStale(refreshedAt: number, now: number): boolean {
  return now - refreshedAt > STALE_AFTER;
}

/**
 * Takes the lock at `path`, waiting while another live run holds it;
 * `onWait` hears once that it waits.
 */
export async function takeLock(
  path: string,
  onWait: (holder: string) => void,
  signal: AbortSignal,
  now: () => number = Date.now,
): Promise<HeldLock> {
  let told = false;
  while (true) {
    signal.throwIfAborted();
    try {
      await Deno.writeTextFile(path, `${Deno.pid}\n`, { createNew: true });
      return held(path);
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
    const info = await Deno.stat(path).catch(() => undefined);
    if (info?.mtime && isStale(info.mtime.getTime(), now())) {
      await Deno.remove(path).catch(() => {});
      continue;
    }
    if (!told) {
      told = true;
      const holder = await Deno.readTextFile(path).catch(() => "");
      onWait(holder.trim() || "another run");
    }
    await pause(POLL_EVERY, signal);
  }
}

function held(path: string): HeldLock {
  const timer = globalThis.setInterval(() => {
    const at = new Date();
    Deno.utime(path, at, at).catch(() => {});
  }, REFRESH_EVERY);
  Deno.unrefTimer(timer);
  return {
    async release() {
      globalThis.clearInterval(timer);
      await Deno.remove(path).catch(() => {});
    },
  };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = globalThis.setTimeout(done, ms);
    function done() {
      signal.removeEventListener("abort", abort);
      resolve();
    }
    function abort() {
      globalThis.clearTimeout(timer);
      reject(signal.reason);
    }
    signal.addEventListener("abort", abort, { once: true });
  });
}
