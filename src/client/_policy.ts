// Internal: what the client does after each API attempt, as pure functions.

import { type Backoff, backoffDelay } from "../core/_retry.ts";

/** Methods that may be sent twice: the same effect either way. */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);
/** Answers worth another attempt of an idempotent request. */
const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

/** Whether an answer with `status` may be worth another attempt (then its `Retry-After` is read). */
export function mayRetry(status: number): boolean {
  return RETRY_STATUSES.has(status);
}

/** What one attempt came to. */
export type Attempted =
  | {
    readonly kind: "answer";
    readonly status: number;
    readonly retryAfter?: number | undefined;
  }
  | { readonly kind: "no answer" };

/** The request as far as retrying it goes. */
export interface RetryContext {
  /** Retries already made. */
  readonly retries: number;
  readonly method: string;
  /** Whether the body can be sent again. */
  readonly replayable: boolean;
}

/** The retry policy of a client. */
export interface RetryPolicy {
  /** Retries, backoff, and the longest `Retry-After` waited for. */
  readonly backoff: Backoff;
  readonly random: () => number;
}

/**
 * How long to wait before retrying, or `undefined` to stop: idempotent,
 * replayable requests are retried after no answer (a network error or a
 * timeout) and after 408, 429, 500, 502, 503 and 504, honouring
 * `Retry-After` up to `maxRetryAfter`, with exponential backoff and jitter
 * otherwise.
 */
export function retryWait(
  attempted: Attempted,
  context: RetryContext,
  policy: RetryPolicy,
): number | undefined {
  if (
    !IDEMPOTENT.has(context.method) || !context.replayable ||
    context.retries >= policy.backoff.retries
  ) return undefined;
  const backoff = () =>
    backoffDelay(policy.backoff, context.retries, policy.random);
  if (attempted.kind === "no answer") return backoff();
  if (!RETRY_STATUSES.has(attempted.status)) return undefined;
  const asked = attempted.retryAfter;
  if (asked === undefined) return backoff();
  return asked <= policy.backoff.maxRetryAfter ? asked : undefined;
}

/**
 * Whether a body can be sent a second time: strings, `Blob`s, buffers and
 * views, `URLSearchParams` and `FormData`. Streams and async iterables are
 * consumed by the first attempt.
 */
export function isReplayable(body: unknown): boolean {
  return body === undefined || body === null || typeof body === "string" ||
    body instanceof Blob || body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) || body instanceof URLSearchParams ||
    body instanceof FormData;
}
