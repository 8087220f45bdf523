/**
 * OAuth 2.0 client-credentials tokens for the partner API: one request with {@linkcode requestToken}, or a caching,
 * single-flight, quota-aware {@linkcode createTokenProvider} for a service.
 *
 * @example Getting a token from a provider
 * ```ts
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials });
 * const token = await provider.getToken();
 * equal(await provider.getToken(), token); // cached
 * equal(api.tokenRequests, 1);
 * ```
 *
 * @module
 */

export { createTokenProvider, requestToken } from "./provider.ts";

// Declared in core so that the stores need nothing of the token part.
export type { IssuedToken, QuotaSnapshot } from "../core/token_values.ts";
export type * from "./types.ts";

// Types its signatures name, homed elsewhere: so this entry passes `deno doc --lint` alone.
export type * from "../core/events.ts";
export type { Environment } from "../core/environment.ts";
export type { TokenFailureReason } from "../core/error_types.ts";
export type { QuotaBucket } from "../core/quota_types.ts";
export type * from "../store/types.ts";
