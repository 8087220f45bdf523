/**
 * Where token providers keep their token: the store contract, for a store
 * of your own, and a store in this process's memory. Shared stores for
 * fleets are `./kv` (Deno KV) and `./redis` (Redis).
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

// Types this entry's signatures name, homed in other entries: re-exported
// so that this entry passes `deno doc --lint` alone, as JSR users meet it.
export type { TokenFailureReason } from "../core/error_types.ts";
export type { QuotaBucket } from "../core/quota_types.ts";
export type { IssuedToken, QuotaSnapshot } from "../core/token_values.ts";
