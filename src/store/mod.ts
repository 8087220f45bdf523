/**
 * Where token providers keep their token: the store contract, a memory store and a file store.
 * Fleets share one through `./kv` (Deno KV) or `./redis`.
 *
 * @example Two providers sharing one token
 * ```ts
 * import { createMemoryTokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const store = createMemoryTokenStore();
 * await createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * await createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * equal(api.tokenRequests, 1); // the second provider found the first one's token
 * ```
 *
 * @module
 */

export type * from "./types.ts";
export type { FleetStoreOptions } from "./fleet_options.ts";
export { createMemoryTokenStore } from "./memory_store.ts";
export * from "./file_store.ts";

// Types its signatures name, homed elsewhere: each entry passes `deno doc --lint` alone.
export type { TokenFailureReason } from "../core/error_types.ts";
export type { QuotaBucket } from "../core/quota_types.ts";
export type { IssuedToken, QuotaSnapshot } from "../core/token_values.ts";
