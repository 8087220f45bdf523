/**
 * An authenticated client for the partner API: `fetch`, `pciFetch` (card data) and `list`. Every
 * request carries the provider's bearer token, which never leaves the environment's addresses.
 *
 * @example Listing transactions, newest first
 * ```ts
 * import { createClient } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ items: { transactions: 120 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const dates: string[] = [];
 * for await (const transaction of client.list<{ creationDate: string }>("transactions", {
 *   sortBy: "creationDate",
 *   sortDirection: "DESC",
 * })) {
 *   dates.push(transaction.creationDate);
 * }
 * equal(dates.length, 120);
 * ok(dates[0]! >= dates[119]!);
 * equal(api.tokenRequests, 1); // three pages, one token
 * ```
 *
 * @module
 */

export { createClient, type PartnerClient } from "./client.ts";
export type { ClientOptions, ProviderSettings } from "./options.ts";

export { createRateLimiter, type RateLimiterOptions } from "./rate_limit.ts";

export type { ListOptions, Page, RequestMetadata } from "./pages.ts";

// Types its signatures name, homed elsewhere: each entry passes `deno doc --lint` alone.
export type * from "../core/events.ts";
export type { Environment } from "../core/environment.ts";
export type { TokenFailureReason } from "../core/error_types.ts";
export type { QuotaBucket } from "../core/quota_types.ts";
export type { RateLimit, RateLimiter } from "../core/rate_limiter.ts";
export type { IssuedToken, QuotaSnapshot } from "../core/token_values.ts";
export type * from "../token/types.ts";
// The store contract comes through token's door: the client may not import the store (DESIGN §2).
export type {
  CoordinateOptions,
  TokenFailure,
  TokenRecord,
  TokenRenewal,
  TokenStore,
} from "../token/mod.ts";
export type { PaginateOptions, SortDirection } from "./page_types.ts";
