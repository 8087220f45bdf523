// Internal: the one place that races work against an AbortSignal, and the
// per-attempt deadline built on it.

/**
 * Settles like `promise`, or rejects with `signal.reason` as soon as
 * `signal` aborts, even when the work behind `promise` ignores the signal
 * (a runtime may silently drop it). `onLate` receives a value that arrives
 * after the abort, so that a late `Response` can be cancelled, not leaked.
 */
export function raceAbort<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  onLate?: (value: T) => void,
): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    promise.then(onLate, () => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", abort);
        if (signal.aborted) onLate?.(value);
        else resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", abort);
        reject(error);
      },
    );
  });
}

/** A signal that aborts with a `TimeoutError` after `ms`, or with `outer`'s reason. */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Whether the time ran out (as opposed to `outer` aborting). */
  readonly timedOut: boolean;
  /** Stops the timer and stops following `outer`. */
  clear(): void;
}

/**
 * Starts a deadline of `ms` that also follows `outer`.
 *
 * Not the platform's timeout signal: its timer cannot be cleared when the
 * attempt ends early, and fake timers cannot drive it in tests. Not `using` either:
 * Node 20 cannot parse it, and the core runs there.
 */
export function startDeadline(ms: number, outer?: AbortSignal): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(
      new DOMException(`no answer within ${ms} ms`, "TimeoutError"),
    );
  }, ms);
  unrefTimer(timer);
  const follow = () => controller.abort(outer?.reason);
  if (outer?.aborted) follow();
  else outer?.addEventListener("abort", follow, { once: true });
  return {
    signal: controller.signal,
    get timedOut() {
      return timedOut;
    },
    clear() {
      clearTimeout(timer);
      outer?.removeEventListener("abort", follow);
    },
  };
}

/** Lets a timer run without keeping the process alive, where the runtime can. */
export function unrefTimer(timer: number | { unref?: () => void }): void {
  const deno = (globalThis as { Deno?: { unrefTimer?(id: number): void } })
    .Deno;
  if (typeof timer === "number") deno?.unrefTimer?.(timer);
  else timer.unref?.();
}
