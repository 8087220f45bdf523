/**
 * A fake of the partner service for tests, on 127.0.0.1 (needs `--allow-net=127.0.0.1`): the token
 * endpoint, quota header, lists, card data and faults you can script.
 *
 * @example Counting token requests in a test
 * ```ts
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials });
 * await Promise.all([provider.getToken(), provider.getToken()]);
 * equal(api.tokenRequests, 1); // the two callers shared one request
 * ```
 *
 * @module
 */

export * from "./fake_service.ts";
export type * from "./fake_options.ts";
export * from "./fake_partner_api.ts";

// Types its signatures name, homed elsewhere: each entry passes `deno doc --lint` alone.
export type { Environment } from "../core/environment.ts";
