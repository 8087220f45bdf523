// Internal: a token request attempt that a listener hears, however it ends.

import { PartnerApiError, QuotaExceededError } from "../core/errors.ts";
import type { EventListener } from "../core/events.ts";
import type { QuotaBucket } from "../core/quota.ts";
import { emit } from "../core/_emit.ts";
import { attemptTokenRequest } from "./_protocol.ts";
import type { TokenEndpoint } from "./_endpoint.ts";
import type { IssuedToken } from "./_value.ts";

/** {@linkcode attemptTokenRequest}, followed by a `token.request` event. */
export async function heardAttempt(
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
