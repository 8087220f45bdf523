/**
 * What a token provider and a client report as they work, for `onEvent`:
 * plain, frozen objects that never hold a secret or a token. A listener
 * that throws is ignored; with no listener nothing is built.
 *
 * @example Logging every token request and its quota
 * ```ts
 * import { createTokenProvider, type PartnerApiEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
 * const events: PartnerApiEvent[] = [];
 * const provider = createTokenProvider({
 *   ...api.environment,
 *   ...api.credentials,
 *   onEvent: (event) => events.push(event),
 * });
 * await provider.getToken();
 * const [request] = events;
 * if (request?.type !== "token.request" || request.outcome !== "ok") throw new Error();
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
 * import type { TokenRequestEvent } from "@partner-api/client";
 *
 * const event: TokenRequestEvent = { type: "token.request", outcome: "error", reason: "network", durationMs: 12 };
 * if (event.outcome === "error" && event.reason !== "network") throw new Error();
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
 * @example
 * ```ts
 * import type { TokenRefreshEvent } from "@partner-api/client";
 *
 * const event: TokenRefreshEvent = { type: "token.refresh", expiresInMs: 240_000 };
 * if (event.expiresInMs <= 0) throw new Error();
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
 * @example
 * ```ts
 * import type { QuotaBlockedEvent } from "@partner-api/client";
 *
 * const event: QuotaBlockedEvent = { type: "quota.blocked", retryAt: Date.now() + 60_000 };
 * console.log(`no token before ${new Date(event.retryAt).toISOString()}`);
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
 * @example
 * ```ts
 * import type { ApiRequestEvent } from "@partner-api/client";
 *
 * const event: ApiRequestEvent = {
 *   type: "api.request", method: "GET", base: "api", path: "/api/organizations",
 *   status: 200, attempt: 1, durationMs: 35,
 * };
 * if (event.status === 0) throw new Error("no answer");
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
  /** The answer's status, or 0 when no answer came. */
  readonly status: number;
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
 * @example
 * ```ts
 * import type { TokenRetryEvent } from "@partner-api/client";
 *
 * const event: TokenRetryEvent = { type: "token.retry", reason: "status", status: 503, delayMs: 500 };
 * if (event.type !== "token.retry") throw new Error();
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
 * @example
 * ```ts
 * import type { ApiRetryEvent } from "@partner-api/client";
 *
 * const event: ApiRetryEvent = { type: "api.retry", reason: "status", status: 503, delayMs: 500 };
 * if (event.delayMs < 0) throw new Error();
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
 * @example
 * ```ts
 * import type { ApiRenewalEvent } from "@partner-api/client";
 *
 * const event: ApiRenewalEvent = { type: "api.renewal", path: "/api/organizations" };
 * if (event.type !== "api.renewal") throw new Error();
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
 * @example
 * ```ts
 * import type { RateWaitEvent } from "@partner-api/client";
 *
 * const event: RateWaitEvent = { type: "rate.wait", delayMs: 1200 };
 * if (event.delayMs <= 0) throw new Error();
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
 * @example
 * ```ts
 * import type { ApiListEvent } from "@partner-api/client";
 *
 * const event: ApiListEvent = {
 *   type: "api.list", path: "/api/transactions", outcome: "ok", pages: 3, items: 230, durationMs: 90,
 * };
 * if (event.items !== 230) throw new Error();
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
 * import type { PartnerApiEvent } from "@partner-api/client";
 *
 * function line(event: PartnerApiEvent): string {
 *   switch (event.type) {
 *     case "api.request": return `${event.method} ${event.path} ${event.status}`;
 *     case "token.request": return `token ${event.outcome}`;
 *     default: return event.type;
 *   }
 * }
 * if (line({ type: "rate.wait", delayMs: 5 }) !== "rate.wait") throw new Error();
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
  | RateDegradedEvent;

/**
 * A listener of events.
 *
 * @example
 * ```ts
 * import type { EventListener } from "@partner-api/client";
 *
 * const log: EventListener = (event) => console.debug(event.type);
 * log({ type: "rate.wait", delayMs: 1 });
 * ```
 */
export type EventListener = (event: PartnerApiEvent) => void;

/**
 * A fleet rate limiter lost its store (Redis or KV failed or did not answer
 * in time): until the store answers again, this process paces itself alone
 * at its last known share of the limit, never unlimited.
 *
 * @example
 * ```ts
 * import type { RateDegradedEvent } from "@partner-api/client";
 *
 * const event: RateDegradedEvent = {
 *   type: "rate.degraded", store: "redis", requests: 300, interval: 300_000, retryAt: Date.now() + 500,
 * };
 * if (event.requests <= 0) throw new Error("never unlimited, never stopped");
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
