// Internal: token requests through the module's one attempt loop, with their events.

import {
  PartnerApiError,
  QuotaExceededError,
  type TokenRequestError,
} from "../core/errors.ts";
import type { TokenRequestEvent, TokenRetryEvent } from "../core/events.ts";
import type { QuotaBucket } from "../core/quota.ts";
import {
  type Next,
  retryAfterMs,
  retryDelay,
  retryStep,
  sendAttempts,
} from "../core/_attempt_loop.ts";
import { ownDeadlines } from "../core/_deadlines.ts";
import { tokenAttempt } from "./_protocol.ts";
import { isRetryable } from "./_policy.ts";
import type { ProviderConfig } from "./_options.ts";
import type { TokenEndpoint } from "./_endpoint.ts";
import type { IssuedToken } from "../core/token_values.ts";

/** What one token attempt came to. */
export type TokenOutcome =
  | { readonly token: IssuedToken; readonly error?: undefined }
  | { readonly error: unknown; readonly token?: undefined };

/**
 * After each attempt: a failure worth another (`isRetryable`) is retried while
 * retries last, after `Retry-After` (up to `maxRetryAfter`) or a jittered backoff.
 */
export function nextTokenStep(
  outcome: TokenOutcome,
  retries: number,
  policy: TokenSending,
  now: number,
): Next<IssuedToken> {
  const { token, error } = outcome;
  if (token !== undefined) return { do: "done", value: token };
  const wait = isRetryable(error)
    ? retryDelay(
      policy.backoff,
      retries,
      policy.random,
      error.response && retryAfterMs(error.response.headers, now),
    )
    : undefined;
  if (wait === undefined) return { do: "fail", error };
  // Only network, timeout and status failures are retried.
  const { reason, status } = error as TokenRequestError & {
    reason: TokenRetryEvent["reason"];
  };
  return retryStep(policy.onEvent, "token.retry", reason, status ?? 0, wait);
}

/** What a token request needs besides the endpoint. */
export type TokenSending = Pick<
  ProviderConfig,
  "backoff" | "random" | "onEvent"
>;

/**
 * One token request with its retries; `beforeSend` is called as each attempt goes out, and what it returns (a quota
 * block's refusal: another flight's 429) is thrown in place of sending it.
 */
export function requestWithRetries(
  endpoint: TokenEndpoint,
  sending: TokenSending,
  signal: AbortSignal | undefined,
  beforeSend: (now: number) => unknown,
): Promise<IssuedToken> {
  return sendAttempts<TokenOutcome, IssuedToken>({
    signal,
    limits: ownDeadlines(endpoint.timeout),
    listener: sending.onEvent,
    now: endpoint.now,
    attempt: async (deadline) => {
      const refusal = beforeSend(endpoint.now());
      if (refusal !== undefined) throw refusal;
      try {
        return { token: await tokenAttempt(endpoint, deadline, signal) };
      } catch (error) {
        signal?.throwIfAborted();
        return { error };
      }
    },
    // Each attempt but the first is a retry: a step other than "again" ends the request.
    next: (outcome, _deadline, attempt) =>
      nextTokenStep(outcome, attempt - 1, sending, endpoint.now()),
    heard: (outcome, _attempt, durationMs): TokenRequestEvent => {
      const { token, error } = outcome;
      if (token !== undefined) {
        const quota = quotaOf(token.quota);
        return { type: "token.request", outcome: "ok", durationMs, ...quota };
      }
      return {
        type: "token.request",
        outcome: "error",
        // Anything else is the caller's signal: nobody waited any more.
        reason: error instanceof PartnerApiError ? error.reason : "aborted",
        durationMs,
        ...(error instanceof QuotaExceededError ? quotaOf(error.buckets) : {}),
      };
    },
  });
}

/** The quota as the event's own copy (the listener gets it frozen). */
function quotaOf(buckets: readonly QuotaBucket[]) {
  return buckets.length === 0
    ? {}
    : { quota: buckets.map((bucket) => ({ ...bucket })) };
}
