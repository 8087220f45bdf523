// Internal: what the client does after each API attempt, as pure functions.

import {
  type Backoff,
  isRetryStatus,
  retryDelay,
} from "../core/_attempt_loop.ts";

/** Methods that may be sent twice: the same effect either way. */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/** What one attempt came to. */
export type Attempted =
  | {
    readonly kind: "answer";
    readonly status: number;
    /** `Retry-After` in ms, read for the statuses that may be retried. */
    readonly retryAfter?: number | undefined;
    /** For a 3xx: the `Location` to follow, when it stays under the base. */
    readonly redirect?: URL | undefined;
  }
  | { readonly kind: "no answer" };

/** How far one request has come, as far as its next step goes. */
export interface Progress extends RetryContext {
  readonly redirects: number;
  /** Whether a 401 already cost this request a fresh token. */
  readonly renewed: boolean;
}

/** What the send loop does after an attempt. */
export type Step =
  | { readonly do: "deliver" }
  | { readonly do: "retry"; readonly wait: number }
  | { readonly do: "renew" }
  | { readonly do: "follow"; readonly to: URL }
  | { readonly do: "fail" };

/** Redirects followed at most; the next 3xx is delivered as it is. */
export const MAX_REDIRECTS = 5;
const DELIVER: Step = Object.freeze({ do: "deliver" });
const RENEW: Step = Object.freeze({ do: "renew" });
const FAIL: Step = Object.freeze({ do: "fail" });

/** The send loop's decision after each attempt: a 401 renews once, with a body that can be sent again. */
export function nextStep(
  attempted: Attempted,
  progress: Progress,
  policy: RetryPolicy,
): Step {
  const wait = retryWait(attempted, progress, policy);
  if (wait !== undefined) return { do: "retry", wait };
  if (attempted.kind === "no answer") return FAIL;
  if (attempted.status === 401) {
    return progress.replayable && !progress.renewed ? RENEW : DELIVER;
  }
  if (attempted.redirect !== undefined && progress.redirects < MAX_REDIRECTS) {
    return { do: "follow", to: attempted.redirect };
  }
  return DELIVER;
}

/** The request as far as retrying it goes. */
export interface RetryContext {
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

/** The wait before retrying an idempotent, replayable request after no answer or a retry status. */
export function retryWait(
  attempted: Attempted,
  context: RetryContext,
  policy: RetryPolicy,
): number | undefined {
  if (!IDEMPOTENT.has(context.method) || !context.replayable) return undefined;
  const answered = attempted.kind === "answer";
  if (answered && !isRetryStatus(attempted.status)) return undefined;
  const retryAfter = answered ? attempted.retryAfter : undefined;
  return retryDelay(policy.backoff, context.retries, policy.random, retryAfter);
}

/** Whether a body can be sent twice: not a stream or async iterable, which the first attempt consumes. */
export function isReplayable(body: unknown): boolean {
  return body === undefined || body === null || typeof body === "string" ||
    body instanceof Blob || body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) || body instanceof URLSearchParams ||
    body instanceof FormData;
}
