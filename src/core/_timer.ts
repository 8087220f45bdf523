// Internal: a timer for the first request's path that does not load Node's timers where Deno would.
//
// Deno 2.9's global `setTimeout` is Node's, loaded on its first use: about 8 ms of an edge isolate's first answer (the
// token flight's watchdog and the request deadline are that first use). `AbortSignal.timeout` runs on Deno's own timers
// and loads nothing. Fake timers (a test's) replace the global, and are then used as before.

/** A timer that `clear` stops; it keeps no process alive after that. */
export interface Timer {
  clear(): void;
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
 * Calls `fire` once after `ms` (at most 2147483647), unless cleared first. Set by `setTimeout`, it is unref'd; as an
 * `AbortSignal.timeout`, it keeps the process alive only until cleared, as the work it limits does anyway.
 */
export function startTimer(
  fire: () => void,
  ms: number,
  source: TimerSource = timerSource(),
): Timer {
  if (source === DENO_OWN) {
    const signal = AbortSignal.timeout(Math.max(0, ms));
    signal.addEventListener("abort", fire, { once: true });
    // Without a listener, Deno no longer counts the signal's timer as keeping the process alive.
    return { clear: () => signal.removeEventListener("abort", fire) };
  }
  const clear = globalThis.clearTimeout;
  const timer = source(fire, ms);
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
