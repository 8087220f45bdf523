// Internal: the one place that races work against an AbortSignal, and what
// an attempt's time limit is.

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

/**
 * One attempt's time limit (see `SharedDeadlines` in _deadlines.ts): a
 * signal that aborts with a `TimeoutError` when the limit passes, or with
 * the caller's signal's reason.
 */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Whether the time ran out (as opposed to the caller's signal aborting). */
  readonly timedOut: boolean;
  /**
   * {@linkcode raceAbort} against `signal`, one race at a time: settles
   * like `work`, or rejects as soon as `signal` aborts.
   */
  race<T>(work: Promise<T>, onLate?: (value: T) => void): Promise<T>;
  /** Ends the limit: the attempt is over. */
  clear(): void;
}

/** Where attempts get their time limits. */
export interface AttemptLimits {
  /** The limit, in ms. */
  readonly ms: number;
  /** Starts one attempt's limit, following the caller's `outer` signal. */
  start(outer: AbortSignal | undefined): Deadline;
}

/** Lets a timer run without keeping the process alive, where the runtime can. */
export function unrefTimer(timer: number | { unref?: () => void }): void {
  const deno = (globalThis as { Deno?: { unrefTimer?(id: number): void } })
    .Deno;
  if (typeof timer === "number") deno?.unrefTimer?.(timer);
  else timer.unref?.();
}
