// The client's events: one of the three families of PartnerApiEvent.

/**
 * One API request sent (retries, renewals and redirects each count), and how it ended.
 *
 * @example Timing API requests
 * ```ts
 * import { type ApiRequestEvent, createClient } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const requests: ApiRequestEvent[] = [];
 * await using api = await startFakePartnerApi();
 * const client = createClient({ environment: api.environment, ...api.credentials,
 *   onEvent: (event) => event.type === "api.request" && requests.push(event) });
 * await (await client.pciFetch("cards/ch_000001")).body?.cancel();
 * const { base, method, path, status, host, attempt } = requests[0]!;
 * equal(`${base} ${method} ${path} ${status} ${host} ${attempt}`, "pci GET /api/cards/ch_000001 200 127.0.0.1 1");
 * ```
 */
export interface ApiRequestEvent {
  /** Tells events apart. */
  readonly type: "api.request";
  /** The request's method, e.g. `"GET"`. */
  readonly method: string;
  /** Which base the request went to: the API, or the card-data (PCI) one. */
  readonly base: "api" | "pci";
  /** The URL's path, without the query (a secret or token pasted into it redacted, as an `ApiError` shows it). */
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
 * const client = createClient({ environment: api.environment, ...api.credentials,
 *   retry: { initialDelay: 1 },
 *   onEvent: (event) => event.type === "api.retry" && retries.push(event) });
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
 * After a 401 the request is sent once more with a newer token (renewed for it, or by another request).
 *
 * @example The one 401 renewal of the hour
 * ```ts
 * import { type ApiRenewalEvent, createClient } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const renewals: ApiRenewalEvent[] = [];
 * await using api = await startFakePartnerApi();
 * const client = createClient({ environment: api.environment, ...api.credentials,
 *   onEvent: (event) => event.type === "api.renewal" && renewals.push(event) });
 * await (await client.fetch("organizations")).body?.cancel();
 * api.revokeTokens(); // the next request meets a 401
 * await (await client.fetch("organizations")).body?.cancel();
 * deepStrictEqual(renewals, [{ type: "api.renewal", path: "/api/organizations" }]);
 * ```
 */
export interface ApiRenewalEvent {
  /** Tells events apart. */
  readonly type: "api.renewal";
  /** The URL's path, without the query (a secret or token pasted into it redacted, as an `ApiError` shows it). */
  readonly path: string;
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
 * const client = createClient({ environment: api.environment, ...api.credentials,
 *   onEvent: (event) => event.type === "api.list" && crawls.push(event) });
 * await Array.fromAsync(client.list("organizations", { limit: 50 }));
 * const [crawl] = crawls;
 * equal(`${crawl?.outcome}: ${crawl?.items} items in ${crawl?.pages} pages`, "ok: 120 items in 3 pages");
 * ```
 */
export interface ApiListEvent {
  /** Tells events apart. */
  readonly type: "api.list";
  /** The list's path, without the query (a secret or token pasted into it redacted, as an `ApiError` shows it). */
  readonly path: string;
  /** `"error"`: a page failed or the caller's signal aborted; `"ok"`: the list ended or the caller's loop left. */
  readonly outcome: "ok" | "error";
  /** Pages read. */
  readonly pages: number;
  /** Items handed out. */
  readonly items: number;
  /** From the first page request to the end, in ms of the `now` clock. */
  readonly durationMs: number;
}
