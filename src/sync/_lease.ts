// Internal: every sink's lock rules, as pure functions and one waiting loop: a lock belongs to a run (a random token),
// is refreshed while held, is taken over only once stale, and a run waits a bounded time for one that is not.

import process from "node:process";
import { delay } from "../core/_deadlines.ts";
import { MAX_TIMER_MS, numberError, requireFunction } from "../core/_check.ts";
import { callListener } from "../core/_emit.ts";
import { steadyClock } from "../core/_clock.ts";
import { SyncError } from "./sync_error.ts";

/** Not refreshed this long, a lock's run is gone (or paused): by its stamp, or seen unchanged (core's staleJudge). */
export const STALE_AFTER = 5_000;
/** How often a held lock is refreshed: well inside STALE_AFTER. */
export const REFRESH_EVERY = 1_000;
const POLL_EVERY = 100;
const DEFAULT_LOCK_WAIT = 30_000;

export function isStale(refreshedAt: number, now: number): boolean {
  return now - refreshedAt > STALE_AFTER;
}

/** A new run's token: what its lock holds, so that it removes only its own; its process first, for who waits. */
export function runToken(): string {
  return `${process.pid}.${crypto.randomUUID()}`;
}

/** Whether `text` has a run token's shape: a file named after one (a dead run's) is the copy's, never a path elsewhere. */
export function isRunToken(text: string): boolean {
  return /^\d+\.[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/.test(text);
}

/** Who holds a lease: a run that stopped (`stale`), else by its `owner` token `pid 42`, or another run (a token of an older version names none). */
export function holderOf(stale: boolean, owner?: string | null): string {
  if (stale) return "a run that stopped";
  const pid = /^([0-9]+)\./.exec(owner ?? "")?.[1];
  return pid === undefined ? "another run" : `pid ${pid}`;
}

/**
 * A sink's `lockWait` (ms up to what a timer can wait, or Infinity), once `now` and `onLockWait` are functions.
 * @throws {RangeError} (`option: "lockWait"`) @throws {TypeError} (`option: "now"`, `"onLockWait"`)
 */
export function checkLockWait(
  options: { lockWait?: unknown; now?: unknown; onLockWait?: unknown } = {},
  context: string,
): number {
  requireFunction(options.now, context, "now");
  requireFunction(options.onLockWait, context, "onLockWait");
  const value = options.lockWait;
  if (value === undefined) return DEFAULT_LOCK_WAIT;
  const time = typeof value === "number" && value >= 0 && value <= MAX_TIMER_MS;
  if (time || value === Infinity) return value as number;
  const rule =
    "must be a non-negative time in ms, at most 2147483647, or Infinity";
  throw numberError(value, context, "lockWait", rule);
}

export interface LockWait {
  /** Stops the wait with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
  /** Gives up after this many ms with SyncError `"locked"`; Infinity waits on. */
  readonly wait: number;
  /** Hears that the run waits, with who holds the copy: once, and again when that changes. */
  readonly onWait?: ((holder: string) => void) | undefined;
}

/** Calls `attempt` until it takes the lock (else names who holds it) or `wait` runs out: SyncError `"locked"`. */
export async function waitForLock<L>(
  what: string,
  options: LockWait,
  attempt: () => Promise<{ taken: L } | { holder: string }>,
): Promise<L> {
  // A wait, so on the steady clock: a wall clock stepped back holds nobody.
  const clock = steadyClock(), started = clock();
  let told: string | undefined;
  while (true) {
    options.signal?.throwIfAborted();
    const result = await attempt();
    if ("taken" in result) return result.taken;
    // Told again when who holds it changes; what the listener throws is ignored, as onProgress's.
    if (result.holder !== told && options.onWait) {
      callListener(options.onWait, result.holder);
    }
    told = result.holder;
    const left = started + options.wait - clock();
    if (left <= 0) {
      const stale = `a run stopped less than ${
        STALE_AFTER / 1000
      } s ago lets go by itself`;
      const message =
        `Cannot sync: ${what} is held by ${result.holder}: try again once it ends (${stale})`;
      throw new SyncError(message, "locked", what);
    }
    await delay(Math.min(POLL_EVERY, left), options.signal);
  }
}

/** The error of a run whose lock was taken over while it was paused. */
export function lockLost(what: string): SyncError {
  return new SyncError(
    `Cannot sync: another run took ${what} over while this one was paused; this run stopped before writing: run again`,
    "lock-lost",
    what,
  );
}

/**
 * Settles as `run`, or with `signal`'s reason at most STALE_AFTER after it aborts: a sink's call that hangs (a database
 * that stopped answering) holds the run no longer than its lock stays fresh; one that ends sooner lets it release first.
 */
export function settledOrAborted<T>(
  run: Promise<T>,
  signal: AbortSignal | undefined,
): Promise<T> {
  if (signal === undefined) return run;
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const giveUp = () =>
      timer = setTimeout(() => reject(signal.reason), STALE_AFTER);
    if (signal.aborted) giveUp();
    else signal.addEventListener("abort", giveUp, { once: true });
    run.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal.removeEventListener("abort", giveUp);
    });
  });
}
