/**
 * A client for the partner API: OAuth 2.0 client-credentials tokens that
 * respect the token quota (cached, single-flight, refreshed ahead of expiry,
 * no request while the quota is exhausted), offset pagination, an
 * authenticated client, the quota header parser, and typed errors. Pure
 * Web-standard code: runs on Deno, Deno Deploy, Node 20+, Bun and workers,
 * from a backend only.
 *
 * This root entry is where a newcomer starts: {@linkcode createClient}, made
 * from {@linkcode configFromEnv} or {@linkcode defineEnvironment}; the token
 * provider behind it ({@linkcode createTokenProvider}, or the client's
 * `tokenProvider`); the errors to catch ({@linkcode PartnerApiError} and its
 * subclasses); and {@linkcode collect} for a bounded `client.list`. So that
 * one import covers a service that talks to the API, it also re-exports the
 * rest of the dependency-free core: the paginator, `requestToken`,
 * `createRateLimiter`, the quota header functions, and every type their
 * signatures name. What needs more than Web-standard code stays out of the
 * root, so that importing it never pulls a dependency, a Deno-only API or a
 * test tool into a service: OpenTelemetry (a dependency), Deno KV and the
 * CLI (Deno only), sync (files and databases), and the fake (a server).
 *
 * Each name has one home entry, where it is documented; import from there
 * to take only that part:
 *
 * | for                                                         | import from                                           |
 * | ----------------------------------------------------------- | ----------------------------------------------------- |
 * | the client: `createClient`, `createRateLimiter`             | `@partner-api/client/client`                          |
 * | tokens alone: `createTokenProvider`, `requestToken`         | `@partner-api/client/token`                           |
 * | an environment: `defineEnvironment`                         | `@partner-api/client/environment`                     |
 * | the errors to catch, by `reason`                            | `@partner-api/client/errors`                          |
 * | the quota header: `parseQuotaHeader`, `nextExhaustedBucket` | `@partner-api/client/quota`                           |
 * | paging any offset-paged endpoint: `paginate`, `collect`     | `@partner-api/client/paginate`                        |
 * | `configFromEnv` and its variables                           | `@partner-api/client` (here)                          |
 * | a fake of the service for tests                             | `@partner-api/client/testing`                         |
 * | a token store of your own, or in memory                     | `@partner-api/client/store`                           |
 * | one token and one rate limit for a fleet                    | `@partner-api/client/kv`, `@partner-api/client/redis` |
 * | spans and metrics (needs `@opentelemetry/api`)              | `@partner-api/client/otel`                            |
 * | a copy of a list that stays true                            | `@partner-api/client/sync`                            |
 * | the `partner-api` command-line tool                         | `@partner-api/client/cli`                             |
 *
 * @example A client, a token and the newest transactions
 * ```ts
 * import { collect, createClient } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi(); // the service, on 127.0.0.1
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const token = await client.tokenProvider.getToken();
 * ok(token.expiresAt > Date.now());
 * const newest = await collect(
 *   client.list("transactions", { sortBy: "creationDate", sortDirection: "DESC" }),
 *   { maxItems: 5 },
 * );
 * equal(newest.length, 5);
 * equal(api.tokenRequests, 1); // the page cost no token of its own
 * ```
 *
 * @example Getting a token and reading the quota
 * ```ts
 * import { createTokenProvider } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials });
 * await provider.getToken();
 * const [hourly] = provider.quota?.buckets ?? [];
 * equal(`${hourly?.bucket}: ${hourly?.remaining}/${hourly?.limit}`, "per_hour: 9/10");
 * ```
 *
 * @example Catching what the service refuses
 * ```ts
 * import { createClient, PartnerApiError } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const client = createClient({ environment: api.environment, clientId: "me", clientSecret: "wrong" });
 * await rejects(client.fetch("organizations"), (error) => {
 *   return error instanceof PartnerApiError && error.reason === "status"; // the token was refused
 * });
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
