// Internal: waiting between attempts, shared by the token provider and the
// client.

/** How retries back off; every field is required here, defaults live with the callers. */
export interface Backoff {
  /** Retries after the first attempt. */
  readonly retries: number;
  /** Delay before the first retry, in ms, before jitter. */
  readonly initialDelay: number;
  /** No wait is longer; a longer `Retry-After` ends the retries instead. */
  readonly maxDelay: number;
}

/**
 * The wait before retry number `attempt` (0-based): exponential, with jitter
 * between half and all of it so that a fleet does not retry in step.
 */
export function backoffDelay(
  backoff: Backoff,
  attempt: number,
  random: () => number,
): number {
  const full = Math.min(backoff.maxDelay, backoff.initialDelay * 2 ** attempt);
  return full * (0.5 + random() / 2);
}

/**
 * Reads `Retry-After` (delta-seconds or an HTTP date) as milliseconds from
 * `now` (the caller's injected clock, so that a date is measured against the
 * same time as every other decision); `undefined` when absent or unreadable.
 * Absurd values come back as they are: callers clamp to their own limits.
 */
export function retryAfterMs(
  headers: Headers,
  now: number,
): number | undefined {
  const value = headers.get("retry-after")?.trim();
  if (value === undefined || value === "") return undefined;
  if (/^[0-9]+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts. */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
