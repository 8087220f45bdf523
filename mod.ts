/**
 * A client for the partner API: OAuth 2.0 client-credentials tokens that
 * respect the token quota (cached, single-flight, refreshed ahead of expiry,
 * no request while the quota is exhausted), offset pagination, an
 * authenticated client, the quota header parser, and typed errors. Pure Web-standard code: runs on Deno, Deno Deploy, Node 20+,
 * Bun and workers, from a backend only.
 *
 * @example Getting a token and reading the quota
 * ```ts
 * import { createTokenProvider } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials });
 * const token = await provider.getToken();
 * console.log(`token valid until ${new Date(token.expiresAt).toISOString()}`);
 * for (const bucket of provider.quota?.buckets ?? []) {
 *   console.log(`${bucket.bucket}: ${bucket.remaining}/${bucket.limit}`);
 * }
 * ```
 *
 * @module
 */

export * from "./src/core/environment.ts";
export * from "./src/core/config.ts";
export * from "./src/core/errors.ts";
export * from "./src/core/events.ts";
export * from "./src/core/quota.ts";
export * from "./src/token/mod.ts";
export * from "./src/client/paginate.ts";
export * from "./src/client/mod.ts";
