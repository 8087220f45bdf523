/**
 * What a token provider and a client report as they work, for `onEvent`:
 * plain, frozen objects that never hold a secret or a token. A listener
 * that throws is ignored; with no listener nothing is built.
 *
 * @example Logging every token request and its quota
 * ```ts
 * import { createTokenProvider } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
 * const log: string[] = [];
 * const provider = createTokenProvider({
 *   ...api.environment,
 *   ...api.credentials,
 *   onEvent: (event) => {
 *     if (event.type === "token.request") log.push(`token ${event.outcome}, ${event.quota?.[0]?.remaining} left`);
 *   },
 * });
 * await provider.getToken();
 * deepStrictEqual(log, ["token ok, 9 left"]);
 * ```
 *
 * @module
 */

import type { QuotaBucket } from "./quota.ts";

/**
 * One request to the token endpoint, retries each counted: what the quota
 * counts.
 *
 * @example Counting failed token requests
 * ```ts
 * import { createTokenProvider, type TokenRequestEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const requests: TokenRequestEvent[] = [];
 * await using api = await startFakePartnerApi({ faults: [{ kind: "status", status: 503 }] });
 * const provider = createTokenProvider({
 *   ...api.environment,
 *   ...api.credentials,
 *   retry: { initialDelay: 1 },
 *   onEvent: (event) => event.type === "token.request" && requests.push(event),
 * });
 * await provider.getToken();
 * const failed = requests.filter((request) => request.outcome === "error");
 * deepStrictEqual(failed.map((request) => request.reason), ["status"]);
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
 * A background refresh started: the token is due for refresh but still
 * served while a new one is requested.
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
 * const provider = createTokenProvider({
 *   ...api.environment,
 *   ...api.credentials,
 *   now: () => time,
 *   onEvent: (event) => event.type === "token.refresh" && refreshes.push(event),
 *   waitUntil: (refresh) => background.push(refresh),
 * });
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
 * const provider = createTokenProvider({
 *   ...api.environment,
 *   ...api.credentials,
 *   onEvent: (event) => event.type === "quota.blocked" && blocks.push(event),
 * });
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

/**
 * One API request sent (an attempt: retries, renewals and redirects each
 * count), and how it ended.
 *
 * @example Timing API requests
 * ```ts
 * import { type ApiRequestEvent, createClient } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const requests: ApiRequestEvent[] = [];
 * await using api = await startFakePartnerApi();
 * const client = createClient({
 *   environment: api.environment,
 *   ...api.credentials,
 *   onEvent: (event) => event.type === "api.request" && requests.push(event),
 * });
 * await (await client.pciFetch("cards/ch_000001")).body?.cancel();
 * const [request] = requests;
 * equal(`${request?.base} ${request?.method} ${request?.path}`, "pci GET /api/cards/ch_000001");
 * equal(request?.status, 200);
 * equal(request?.host, "127.0.0.1");
 * equal(request?.attempt, 1);
 * ```
 */
export interface ApiRequestEvent {
  /** Tells events apart. */
  readonly type: "api.request";
  /** The request's method, e.g. `"GET"`. */
  readonly method: string;
  /** Which base the request went to: the API, or the card-data (PCI) one. */
  readonly base: "api" | "pci";
  /** The URL's path, without the query. */
  readonly path: string;
  /** The host the request went to (an IPv6 address without brackets). */
  readonly host: string;
  /** Its port: the URL's, else 443 for https and 80 for http. */
  readonly port: number;
  /** The answer's status, or 0 when no answer came. */
  readonly status: number;
  /** Why no answer came (`status` 0): none, or none within the time limit. */
  readonly reason?: "network" | "timeout";
  /** Which attempt of the call or page this was, from 1. */
  readonly attempt: number;
  /** From send to answer headers (or failure), in ms of the `now` clock. */
  readonly durationMs: number;
}

/**
 * A token request will be sent again, after `delayMs`: its attempt got no
 * answer (`"network"`, `"timeout"`) or an answer worth another (a 408 or
 * 5xx, `"status"`).
 *
 * @example A token request cut off, and sent again
 * ```ts
 * import { createTokenProvider, type TokenRetryEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const retries: TokenRetryEvent[] = [];
 * await using api = await startFakePartnerApi({ faults: [{ kind: "drop" }] });
 * const provider = createTokenProvider({
 *   ...api.environment,
 *   ...api.credentials,
 *   retry: { initialDelay: 1 },
 *   onEvent: (event) => event.type === "token.retry" && retries.push(event),
 * });
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
 * A call or page will be sent again, after `delayMs`.
 *
 * @example A 503 answered, and retried
 * ```ts
 * import { type ApiRetryEvent, createClient } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const retries: ApiRetryEvent[] = [];
 * await using api = await startFakePartnerApi();
 * api.injectApiFaults({ kind: "status", status: 503 });
 * const client = createClient({
 *   environment: api.environment,
 *   ...api.credentials,
 *   retry: { initialDelay: 1 },
 *   onEvent: (event) => event.type === "api.retry" && retries.push(event),
 * });
 * const response = await client.fetch("organizations");
 * await response.body?.cancel();
 * equal(response.status, 200);
 * equal(`${retries[0]?.reason} ${retries[0]?.status}`, "status 503");
 * ```
 */
export interface ApiRetryEvent {
  /** Tells events apart. */
  readonly type: "api.retry";
  /** What went wrong: no answer (`"network"`, `"timeout"`) or an answer to retry (`"status"`). */
  readonly reason: "network" | "timeout" | "status";
  /** The status retried, 0 when no answer came. */
  readonly status: number;
  /** The wait before the next attempt, in ms. */
  readonly delayMs: number;
}

/**
 * After a 401 the request is sent once more with a newer token: one renewed
 * for it (the first 401 in an hour for the provider, or the fleet sharing
 * its store), or one already there because another request renewed it.
 *
 * @example The one 401 renewal of the hour
 * ```ts
 * import { type ApiRenewalEvent, createClient } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const renewals: ApiRenewalEvent[] = [];
 * await using api = await startFakePartnerApi();
 * const client = createClient({
 *   environment: api.environment,
 *   ...api.credentials,
 *   onEvent: (event) => event.type === "api.renewal" && renewals.push(event),
 * });
 * await (await client.fetch("organizations")).body?.cancel();
 * api.revokeTokens(); // the next request meets a 401
 * await (await client.fetch("organizations")).body?.cancel();
 * deepStrictEqual(renewals, [{ type: "api.renewal", path: "/api/organizations" }]);
 * ```
 */
export interface ApiRenewalEvent {
  /** Tells events apart. */
  readonly type: "api.renewal";
  /** The URL's path, without the query. */
  readonly path: string;
}

/**
 * A request waited for a slot in the rate window before it went out.
 *
 * @example A request held for the rate window
 * ```ts
 * import { createClient, type RateWaitEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok } from "node:assert/strict";
 *
 * const waits: RateWaitEvent[] = [];
 * await using api = await startFakePartnerApi();
 * api.injectApiFaults({ kind: "delay", ms: 30 }); // the first answer takes 30 ms
 * const client = createClient({
 *   environment: api.environment,
 *   ...api.credentials,
 *   rateLimit: { requests: 1, interval: 1 }, // one at a time: a slot is free 1 ms after an answer
 *   onEvent: (event) => event.type === "rate.wait" && waits.push(event),
 * });
 * const responses = await Promise.all([client.fetch("organizations"), client.fetch("organizations")]);
 * await Promise.all(responses.map((response) => response.body?.cancel()));
 * equal(waits.length, 1); // the second request waited for the first's answer
 * ok(waits[0]!.delayMs > 0);
 * ```
 */
export interface RateWaitEvent {
  /** Tells events apart. */
  readonly type: "rate.wait";
  /** How long it waited, in ms. */
  readonly delayMs: number;
}

/**
 * A `list` crawl ended: all pages read, or a failure, or the caller stopped.
 *
 * @example A crawl, summed up
 * ```ts
 * import { type ApiListEvent, createClient } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const crawls: ApiListEvent[] = [];
 * await using api = await startFakePartnerApi({ items: { organizations: 120 } });
 * const client = createClient({
 *   environment: api.environment,
 *   ...api.credentials,
 *   onEvent: (event) => event.type === "api.list" && crawls.push(event),
 * });
 * await Array.fromAsync(client.list("organizations", { limit: 50 }));
 * const [crawl] = crawls;
 * equal(`${crawl?.outcome}: ${crawl?.items} items in ${crawl?.pages} pages`, "ok: 120 items in 3 pages");
 * ```
 */
export interface ApiListEvent {
  /** Tells events apart. */
  readonly type: "api.list";
  /** The list's path, without the query. */
  readonly path: string;
  /** `"error"` when a page failed or the caller's signal aborted; `"ok"` when the list ended or the caller's loop left it. */
  readonly outcome: "ok" | "error";
  /** Pages read. */
  readonly pages: number;
  /** Items handed out. */
  readonly items: number;
  /** From the first page request to the end, in ms of the `now` clock. */
  readonly durationMs: number;
}

/**
 * Every event `onEvent` receives; `type` tells them apart.
 *
 * @example Telling events apart
 * ```ts
 * import { createClient, type PartnerApiEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * function line(event: PartnerApiEvent): string {
 *   switch (event.type) {
 *     case "api.request": return `${event.method} ${event.path} ${event.status}`;
 *     case "token.request": return `token ${event.outcome}`;
 *     default: return event.type;
 *   }
 * }
 * const lines: string[] = [];
 * await using api = await startFakePartnerApi();
 * const client = createClient({
 *   environment: api.environment,
 *   ...api.credentials,
 *   onEvent: (event) => lines.push(line(event)),
 * });
 * await (await client.fetch("organizations")).body?.cancel();
 * deepStrictEqual(lines, ["token ok", "GET /api/organizations 200"]);
 * ```
 */
export type PartnerApiEvent =
  | TokenRequestEvent
  | TokenRetryEvent
  | TokenRefreshEvent
  | QuotaBlockedEvent
  | ApiRequestEvent
  | ApiRetryEvent
  | ApiRenewalEvent
  | RateWaitEvent
  | ApiListEvent
  | RateDegradedEvent
  | RateRestoredEvent;

/**
 * A listener of events.
 *
 * @example Listing what a provider did
 * ```ts
 * import { createTokenProvider, type EventListener } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const seen: string[] = [];
 * const onEvent: EventListener = (event) => seen.push(event.type);
 * await using api = await startFakePartnerApi();
 * await createTokenProvider({ ...api.environment, ...api.credentials, onEvent }).getToken();
 * deepStrictEqual(seen, ["token.request"]);
 * ```
 */
export type EventListener = (event: PartnerApiEvent) => void;

/**
 * A fleet rate limiter lost its store (Redis or KV failed or did not answer
 * in time): until the store answers again, this process paces itself alone
 * at its last known share of the limit (half the limit before the store
 * ever answered), never the whole. Also when the store came back without
 * the window (a restart): the process writes back what it sent before it
 * takes again.
 *
 * @example The process paces alone while Redis is away
 * ```ts
 * import type { RateDegradedEvent } from "@partner-api/client";
 * import { createRedisRateLimiter } from "@partner-api/client/redis";
 * import { equal } from "node:assert/strict";
 *
 * const degraded: RateDegradedEvent[] = [];
 * await using limiter = createRedisRateLimiter({
 *   command: () => Promise.reject(new Error("connection refused")),
 *   requests: 10,
 *   interval: 1000,
 *   onEvent: (event) => event.type === "rate.degraded" && degraded.push(event),
 * });
 * limiter.answered(await limiter.take());
 * equal(degraded[0]?.store, "redis");
 * // Redis never said how many share it: half the limit, never the whole.
 * equal(degraded[0]?.requests, 5);
 * ```
 */
export interface RateDegradedEvent {
  /** Tells events apart. */
  readonly type: "rate.degraded";
  /** The store that failed. */
  readonly store: "redis" | "kv";
  /** This process's share: requests it sends alone in any window. */
  readonly requests: number;
  /** The window's length, in ms. */
  readonly interval: number;
  /** Epoch ms (of the `now` clock) when the store is asked again. */
  readonly retryAt: number;
}

/**
 * A fleet rate limiter takes from its store again after `rate.degraded`:
 * the store answers, and this process has written back what it sent alone
 * (or, after a store that came back empty, everything it sent in the last
 * window), so the fleet's window counts it.
 *
 * @example A line per change of pace
 * ```ts
 * import { createClient, type PartnerApiEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual, equal } from "node:assert/strict";
 *
 * function pace(event: PartnerApiEvent): string | undefined {
 *   if (event.type === "rate.degraded") return `${event.store}: alone, ${event.requests} per window`;
 *   if (event.type === "rate.restored") return `${event.store}: the fleet's window again`;
 *   return undefined;
 * }
 * const lines: string[] = [];
 * await using api = await startFakePartnerApi({ items: { organizations: 2 } });
 * const client = createClient({
 *   environment: api.environment,
 *   ...api.credentials,
 *   onEvent: (event) => void (pace(event) && lines.push(pace(event)!)),
 * });
 * await Array.fromAsync(client.list("organizations"));
 * deepStrictEqual(lines, []); // a limiter of its own never changes pace
 * equal(pace({ type: "rate.restored", store: "redis" }), "redis: the fleet's window again");
 * ```
 */
export interface RateRestoredEvent {
  /** Tells events apart. */
  readonly type: "rate.restored";
  /** The store that answers again. */
  readonly store: "redis" | "kv";
}
