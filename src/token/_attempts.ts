// Internal: token requests through the module's one attempt loop, with their events.

import {
  PartnerApiError,
  QuotaExceededError,
  type TokenRequestError,
} from "../core/errors.ts";
import type { TokenRequestEvent, TokenRetryEvent } from "../core/events.ts";
import type { QuotaBucket } from "../core/quota.ts";
import {
  attemptLimits,
  type Backoff,
  retryAfterMs,
  retryDelay,
  retryEvent,
  sendAttempts,
} from "../core/_attempt_loop.ts";
import { tokenAttempt } from "./_protocol.ts";
import { isRetryable } from "./_policy.ts";
import type { ProviderConfig } from "./_options.ts";
import type { TokenEndpoint } from "./_endpoint.ts";
import type { IssuedToken } from "../core/token_values.ts";

/** What one token attempt came to. */
export type TokenOutcome =
  | { readonly token: IssuedToken; readonly error?: undefined }
  | { readonly error: unknown; readonly token?: undefined };

/** What the token side does after an attempt. */
export type TokenStep =
  | { readonly do: "done" }
  | { readonly do: "retry"; readonly wait: number }
  | { readonly do: "fail" };

/**
 * After each attempt: a failure worth another (`isRetryable`) is retried while
 * retries last, after `Retry-After` (up to `maxRetryAfter`) or a jittered backoff.
 */

export function nextTokenStep(
  outcome: TokenOutcome,
  progress: { readonly retries: number; readonly retryAfter?: number },
  policy: { readonly backoff: Backoff; readonly random: () => number },
): TokenStep {
  if (outcome.token !== undefined) return DONE;
  if (!isRetryable(outcome.error)) return FAIL;
  const wait = retryDelay(
    policy.backoff,
    progress.retries,
    policy.random,
    progress.retryAfter,
  );
  return wait === undefined ? FAIL : { do: "retry", wait };
}

/** What a token request needs besides the endpoint. */
export type TokenSending = Pick<
  ProviderConfig,
  "backoff" | "random" | "onEvent"
>;

/** One token request with its retries; none goes out under a quota block (another flight's 429). */
export function requestWithRetries(
  endpoint: TokenEndpoint,
  sending: TokenSending,
  signal: AbortSignal | undefined,
  blocked: (now: number) => unknown,
): Promise<IssuedToken> {
  let retries = 0;
  return sendAttempts<TokenOutcome, IssuedToken>({
    signal,
    limits: attemptLimits(endpoint.timeout, endpoint.now),
    listener: sending.onEvent,
    now: endpoint.now,
    attempt: async (deadline) => {
      const refusal = blocked(endpoint.now());
      if (refusal !== undefined) throw refusal;
      try {
        return { token: await tokenAttempt(endpoint, deadline, signal) };
      } catch (error) {
        signal?.throwIfAborted();
        return { error };
      }
    },
    next: (outcome) => {
      const retryAfter = retryAfterOf(outcome.error, endpoint.now());
      const step = nextTokenStep(outcome, {
        retries,
        ...(retryAfter === undefined ? {} : { retryAfter }),
      }, sending);
      if (step.do === "done") return { do: "done", value: outcome.token! };
      if (step.do === "fail") return { do: "fail", error: outcome.error };
      retries++;
      if (sending.onEvent === undefined) {
        return { do: "again", wait: step.wait };
      }
      // Only network, timeout and status failures are retried.
      const { reason, status } = outcome.error as TokenRequestError & {
        reason: TokenRetryEvent["reason"];
      };
      return {
        do: "again",
        wait: step.wait,
        retry: retryEvent("token.retry", reason, status ?? 0, step.wait),
      };
    },
    heard: (outcome, _attempt, durationMs) => requestEvent(outcome, durationMs),
  });
}

/** The `Retry-After` of a failed attempt's answer, in ms. */
function retryAfterOf(error: unknown, now: number): number | undefined {
  const response = (error as TokenRequestError | undefined)?.response;
  return response === undefined
    ? undefined
    : retryAfterMs(response.headers, now);
}

function requestEvent(
  outcome: TokenOutcome,
  durationMs: number,
): TokenRequestEvent {
  const { token, error } = outcome;
  if (token !== undefined) {
    return {
      type: "token.request",
      outcome: "ok",
      durationMs,
      ...quotaOf(token.quota),
    };
  }
  return {
    type: "token.request",
    outcome: "error",
    // Anything else is the caller's signal: nobody waited any more.
    reason: error instanceof PartnerApiError ? error.reason : "aborted",
    durationMs,
    ...(error instanceof QuotaExceededError ? quotaOf(error.buckets) : {}),
  };
}

/** The quota as the event's own copy (the listener gets it frozen). */
function quotaOf(
  buckets: readonly QuotaBucket[],
): { quota?: readonly QuotaBucket[] } {
  return buckets.length === 0
    ? {}
    : { quota: buckets.map((bucket) => ({ ...bucket })) };
}

const DONE: TokenStep = Object.freeze({ do: "done" });
const FAIL: TokenStep = Object.freeze({ do: "fail" });
