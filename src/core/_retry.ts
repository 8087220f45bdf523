// Internal: waiting between attempts, shared by the token provider and the
// client.

import { checkNumber } from "./_check.ts";

/** How retries back off, checked and complete. */
export interface Backoff {
  /** Retries after the first attempt. */
  readonly retries: number;
  /** Delay before the first retry, in ms, before jitter. */
  readonly initialDelay: number;
  /** No backoff wait is longer. */
  readonly maxDelay: number;
  /** The longest `Retry-After` waited for; a longer one ends the retries (the client returns the answer). */
  readonly maxRetryAfter: number;
}

const DEFAULT_BACKOFF: Backoff = Object.freeze({
  retries: 2,
  initialDelay: 500,
  maxDelay: 10_000,
  maxRetryAfter: 30_000,
});

/**
 * Checks a `retry` option (token provider and client take the same shape):
 * `false` for none, else each field or its default (2 retries, 500 ms,
 * at most 10 s, `Retry-After` up to 30 s).
 *
 * @throws {RangeError} For a count or delay out of range.
 */
export function backoffFrom(
  retry:
    | {
      retries?: number;
      initialDelay?: number;
      maxDelay?: number;
      maxRetryAfter?: number;
    }
    | false
    | undefined,
  context: string,
): Backoff {
  if (retry === false) return { ...DEFAULT_BACKOFF, retries: 0 };
  const given = retry ?? {};
  const delay = (
    value: number | undefined,
    field: "initialDelay" | "maxDelay" | "maxRetryAfter",
  ) =>
    checkNumber(
      value,
      DEFAULT_BACKOFF[field],
      "non-negative time in ms, at most 2147483647",
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
    maxRetryAfter: delay(given.maxRetryAfter, "maxRetryAfter"),
  };
}

/**
 * Answers worth another attempt, on both sides: the server could not answer
 * for now (408, 500, 502, 503, 504), or its rate window was full (429).
 * Other statuses say something a retry cannot change. The token side never
 * meets a 429 here: from the token endpoint it is the quota (DESIGN, "Token":
 * no token request until the bucket resets), a `QuotaExceededError`, not a
 * status to retry.
 */
const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

/** Whether an answer with `status` is worth another attempt. */
export function isRetryStatus(status: number): boolean {
  return RETRY_STATUSES.has(status);
}

/**
 * The one retry rule of both sides, for a failure worth another attempt:
 * `undefined` when no retry is left (`retries` made so far) or the server
 * asked for a longer wait than `maxRetryAfter` (the answer is then final:
 * the client hands it back, the provider fails with it); else the
 * `Retry-After` asked for, or a backoff with jitter.
 */
export function retryDelay(
  backoff: Backoff,
  retries: number,
  random: () => number,
  retryAfter: number | undefined,
): number | undefined {
  if (retries >= backoff.retries) return undefined;
  if (retryAfter === undefined) return backoffDelay(backoff, retries, random);
  return retryAfter <= backoff.maxRetryAfter ? retryAfter : undefined;
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
 * An IMF-fixdate (RFC 9110 5.6.7), the one date form `Retry-After` is read
 * in: "Sun, 06 Nov 1994 08:49:37 GMT".
 */
const IMF_FIXDATE =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$/;

/**
 * Reads `Retry-After` as milliseconds from `now` (the caller's injected
 * clock, so that a date is measured against the same time as every other
 * decision). Only delta-seconds (digits) and an IMF-fixdate are read; any
 * other form (`1.5`, `-5`, `+60`, a loose date) is `undefined`, as if
 * absent, so that it can neither shorten nor lift a wait that other signals
 * set. A date in the past is 0. Absurd values come back as they are:
 * callers clamp to their own limits.
 */
export function retryAfterMs(
  headers: Headers,
  now: number,
): number | undefined {
  const value = headers.get("retry-after")?.trim();
  if (value === undefined) return undefined;
  if (/^[0-9]+$/.test(value)) return Number(value) * 1000;
  if (!IMF_FIXDATE.test(value)) return undefined;
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
