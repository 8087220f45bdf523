// Internal: waiting between attempts, shared by the token provider and the
// client.

import { checkNumber } from "./_check.ts";

/** How retries back off, checked and complete. */
export interface Backoff {
  /** Retries after the first attempt. */
  readonly retries: number;
  /** Delay before the first retry, in ms, before jitter. */
  readonly initialDelay: number;
  /** No wait is longer; a longer `Retry-After` ends the retries instead. */
  readonly maxDelay: number;
}

const DEFAULT_BACKOFF: Backoff = Object.freeze({
  retries: 2,
  initialDelay: 500,
  maxDelay: 10_000,
});

/**
 * Checks a `retry` option (token provider and client take the same shape):
 * `false` for none, else each field or its default (2 retries, 500 ms,
 * at most 10 s).
 *
 * @throws {RangeError} For a count or delay out of range.
 */
export function backoffFrom(
  retry:
    | { retries?: number; initialDelay?: number; maxDelay?: number }
    | false
    | undefined,
  context: string,
): Backoff {
  if (retry === false) return { ...DEFAULT_BACKOFF, retries: 0 };
  const given = retry ?? {};
  const delay = (
    value: number | undefined,
    field: "initialDelay" | "maxDelay",
  ) =>
    checkNumber(
      value,
      DEFAULT_BACKOFF[field],
      "non-negative finite number",
      context,
      field,
    );
  return {
    retries: checkNumber(
      given.retries,
      DEFAULT_BACKOFF.retries,
      "non-negative integer",
      context,
      "retries",
    ),
    initialDelay: delay(given.initialDelay, "initialDelay"),
    maxDelay: delay(given.maxDelay, "maxDelay"),
  };
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
