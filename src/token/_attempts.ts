// Internal: token request attempts: with retries and backoff, and heard by
// a listener however each ends.

import { PartnerApiError, QuotaExceededError } from "../core/errors.ts";
import type { EventListener } from "../core/events.ts";
import type { QuotaBucket } from "../core/quota.ts";
import { emit } from "../core/_emit.ts";
import { attemptTokenRequest } from "./_protocol.ts";
import { isRetryable } from "./_policy.ts";
import type { ProviderConfig } from "./_options.ts";
import { backoffDelay, delay, retryAfterMs } from "../core/_retry.ts";
import type { TokenEndpoint } from "./_endpoint.ts";
import type { IssuedToken } from "./_value.ts";

/**
 * One token request with the provider's retries: network errors, timeouts,
 * 408 and 5xx again after a backoff or the answer's `Retry-After` (up to
 * `maxRetryAfter`); never an attempt while a quota block is in force.
 */
export async function requestWithRetries(
  config: ProviderConfig,
  signal: AbortSignal,
  blockedUntil: () => number | undefined,
  blockedError: (until: number) => unknown,
): Promise<IssuedToken> {
  const { backoff, endpoint, random, onEvent } = config;
  for (let retry = 0;; retry++) {
    // Another flight may have met a 429 meanwhile: no attempt before the reset.
    const blocked = blockedUntil();
    if (blocked !== undefined && endpoint.now() < blocked) {
      throw blockedError(blocked);
    }
    try {
      return await (onEvent === undefined
        ? attemptTokenRequest(endpoint, signal)
        : heardAttempt(endpoint, signal, onEvent));
    } catch (error) {
      if (!isRetryable(error) || retry >= backoff.retries) throw error;
      const asked = error.response &&
        retryAfterMs(error.response.headers, endpoint.now());
      if (asked !== undefined && asked > backoff.maxRetryAfter) throw error;
      await delay(asked ?? backoffDelay(backoff, retry, random), signal);
    }
  }
}

/** {@linkcode attemptTokenRequest}, followed by a `token.request` event. */
async function heardAttempt(
  endpoint: TokenEndpoint,
  signal: AbortSignal | undefined,
  listener: EventListener,
): Promise<IssuedToken> {
  const started = endpoint.now();
  try {
    const token = await attemptTokenRequest(endpoint, signal);
    emit(listener, {
      type: "token.request",
      outcome: "ok",
      durationMs: endpoint.now() - started,
      ...quotaOf(token.quota),
    });
    return token;
  } catch (error) {
    emit(listener, {
      type: "token.request",
      outcome: "error",
      // Anything else is the caller's signal: nobody waited any more.
      reason: error instanceof PartnerApiError ? error.reason : "aborted",
      durationMs: endpoint.now() - started,
      ...(error instanceof QuotaExceededError ? quotaOf(error.buckets) : {}),
    });
    throw error;
  }
}

/** The quota as the event's own copy (the listener gets it frozen). */
function quotaOf(
  buckets: readonly QuotaBucket[],
): { quota?: readonly QuotaBucket[] } {
  return buckets.length === 0
    ? {}
    : { quota: buckets.map((bucket) => ({ ...bucket })) };
}
