// Internal: a timer for the first request's path that does not load Node's timers where Deno would.
//
// Deno 2.9's global `setTimeout` is Node's, loaded on its first use: about 8 ms of an edge isolate's first answer (the
// token flight's watchdog and the request deadline are that first use). `AbortSignal.timeout` runs on Deno's own timers
// and loads nothing. Fake timers (a test's) replace the global, and are then used as before.

/** A timer that `clear` stops; on Deno's own timers, `signal` may set it again for the same moment. */
export interface Timer {
  clear(): void;
  /** The `AbortSignal.timeout` it waits on, when set by Deno's own timers. */
  readonly signal?: AbortSignal;
}

/** What sets timers now: the global `setTimeout`, or {@linkcode DENO_OWN} while Deno's lazy one was never replaced. */
export type TimerSource = typeof setTimeout | typeof DENO_OWN;
/** The source that stands for `AbortSignal.timeout`. */
export const DENO_OWN = "AbortSignal.timeout";

/** The source a timer set now would use; reading it loads nothing. */
export function timerSource(): TimerSource {
  const global = globalThis as { Deno?: unknown };
  const own = Object.getOwnPropertyDescriptor(global, "setTimeout");
  // Deno defines its timers as a getter until something assigns another (fake timers do).
  if (global.Deno !== undefined && own?.get !== undefined) return DENO_OWN;
  return globalThis.setTimeout;
}

/**
 * Calls `fire` once after `ms` (a delay that is not a number fires at once, as `setTimeout`'s; at most 2147483647),
 * unless cleared first. Set by `setTimeout`, it is unref'd. As an `AbortSignal.timeout` (`moment`: one set before for
 * the same moment, reused while it has not passed), it keeps the process alive until it fires or is cleared; its signal
 * lives until the moment either way, so a caller that sets a timer again and again for one moment passes `moment`.
 */
export function startTimer(
  fire: () => void,
  ms: number,
  source: TimerSource = timerSource(),
  moment?: AbortSignal,
): Timer {
  const delay = Number.isFinite(ms) ? Math.max(0, ms) : 0;
  if (source === DENO_OWN) {
    const signal = moment !== undefined && !moment.aborted
      ? moment
      : AbortSignal.timeout(delay);
    signal.addEventListener("abort", fire, { once: true });
    // Without a listener, Deno no longer counts the signal's timer as keeping the process alive.
    return { signal, clear: () => signal.removeEventListener("abort", fire) };
  }
  const clear = globalThis.clearTimeout;
  const timer = source(fire, delay);
  unrefTimer(timer);
  return { clear: () => clear(timer) };
}

/** Lets a timer run without keeping the process alive, where the runtime can. */
export function unrefTimer(timer: number | { unref?: () => void }): void {
  const deno = (globalThis as { Deno?: { unrefTimer?(id: number): void } })
    .Deno;
  if (typeof timer === "number") deno?.unrefTimer?.(timer);
  else timer.unref?.();
}
