// The token provider's events: one of the three families of PartnerApiEvent.

import type { QuotaBucket } from "./quota.ts";

/**
 * One request to the token endpoint, retries each counted: what the quota counts.
 *
 * @example Counting failed token requests
 * ```ts
 * import { createTokenProvider, type TokenRequestEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const requests: TokenRequestEvent[] = [];
 * await using api = await startFakePartnerApi({ faults: [{ kind: "status", status: 503 }] });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials,
 *   retry: { initialDelay: 1 },
 *   onEvent: (event) => event.type === "token.request" && requests.push(event) });
 * await provider.getToken();
 * deepStrictEqual(requests.filter((r) => r.outcome === "error").map((r) => r.reason), ["status"]);
 * ```
 */
export interface TokenRequestEvent {
  /** Tells events apart. */
  readonly type: "token.request";
  /** `"ok"` when a token came back. */
  readonly outcome: "ok" | "error";
  /** Why it failed, as the error's `reason` (`"quota"` for a 429). */
  readonly reason?: string;
  /** From send to answer (or failure), in ms of the `now` clock. */
  readonly durationMs: number;
  /** The quota the token endpoint reported, when it did. */
  readonly quota?: readonly QuotaBucket[];
}

/**
 * A token request will be sent again, after `delayMs`: no answer (`"network"`,
 * `"timeout"`) or a 408, 500, 502, 503 or 504 (`"status"`).
 *
 * @example A token request cut off, and sent again
 * ```ts
 * import { createTokenProvider, type TokenRetryEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const retries: TokenRetryEvent[] = [];
 * await using api = await startFakePartnerApi({ faults: [{ kind: "drop" }] });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials,
 *   retry: { initialDelay: 1 },
 *   onEvent: (event) => event.type === "token.retry" && retries.push(event) });
 * await provider.getToken();
 * equal(retries[0]?.reason, "network");
 * equal(api.tokenRequests, 2);
 * ```
 */
export interface TokenRetryEvent {
  /** Tells events apart. */
  readonly type: "token.retry";
  /** What went wrong. */
  readonly reason: "network" | "timeout" | "status";
  /** The status retried, 0 when no answer came. */
  readonly status: number;
  /** The wait before the next attempt, in ms. */
  readonly delayMs: number;
}

/**
 * A background refresh started: the token is still served while a new one is requested.
 *
 * @example A token refreshed ahead of expiry
 * ```ts
 * import { createTokenProvider, type TokenRefreshEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual, equal } from "node:assert/strict";
 *
 * let time = Date.now();
 * const refreshes: TokenRefreshEvent[] = [];
 * const background: Promise<unknown>[] = [];
 * await using api = await startFakePartnerApi({ tokenLifetime: 600_000 });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials, now: () => time,
 *   onEvent: (event) => event.type === "token.refresh" && refreshes.push(event),
 *   waitUntil: (refresh) => background.push(refresh) });
 * const first = await provider.getToken();
 * time += 590_000; // 10 s left: within the margin (a tenth of the lifetime)
 * equal(await provider.getToken(), first); // still served while the refresh runs
 * await Promise.all(background);
 * deepStrictEqual(refreshes, [{ type: "token.refresh", expiresInMs: 10_000 }]);
 * ```
 */
export interface TokenRefreshEvent {
  /** Tells events apart. */
  readonly type: "token.refresh";
  /** How long the current token is still valid, in ms. */
  readonly expiresInMs: number;
}

/**
 * The quota is exhausted: no token request is sent before `retryAt`.
 *
 * @example No token request before the quota resets
 * ```ts
 * import { createTokenProvider, type QuotaBlockedEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { ok, rejects } from "node:assert/strict";
 *
 * const blocks: QuotaBlockedEvent[] = [];
 * await using api = await startFakePartnerApi({ quota: { perHour: 1 } });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials,
 *   onEvent: (event) => event.type === "quota.blocked" && blocks.push(event) });
 * await provider.invalidate((await provider.getToken()).accessToken); // the hour's only token
 * await rejects(provider.getToken(), { name: "QuotaExceededError" }); // the next is refused: 429
 * ok(blocks[0]!.retryAt > Date.now());
 * ```
 */
export interface QuotaBlockedEvent {
  /** Tells events apart. */
  readonly type: "quota.blocked";
  /** Epoch ms of the reset. */
  readonly retryAt: number;
}
