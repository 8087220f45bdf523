/**
 * A token store and a rate limiter on Deno KV, so that a fleet of processes
 * or isolates shares one token, one quota circuit and one rate limit (the
 * service counts 900 requests per 5 minutes per IP address, not per
 * process). Locally KV is a SQLite file; on Deno Deploy it is replicated.
 * Needs `--unstable-kv` (or `"unstable": ["kv"]`). Deno only: elsewhere
 * both throw a `TypeError` at once; use `./redis` or a `TokenStore` of your
 * own.
 *
 * Records rest sealed with AES-GCM under a key derived (HKDF) from the
 * client secret, which every process of the fleet holds, under names
 * derived from the secret (HKDF for a secret of 32 characters or more,
 * PBKDF2 for a shorter one): whoever reads the database sees neither a
 * token nor a way to test guesses of the secret quickly.
 *
 * @example One token for two providers of different processes
 * ```ts
 * import { createKvTokenStore } from "@partner-api/client/kv";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * using kv = await Deno.openKv(":memory:");
 * const options = { ...api.environment, ...api.credentials, store: createKvTokenStore(kv) };
 * // Two providers stand for two processes: they share the KV database.
 * const [a, b] = await Promise.all([
 *   createTokenProvider(options).getToken(),
 *   createTokenProvider(options).getToken(),
 * ]);
 * equal(a.accessToken, b.accessToken);
 * equal(api.tokenRequests, 1);
 * ```
 *
 * @module
 */

import type { TokenStore } from "./types.ts";
import type { FleetStoreOptions } from "./fleet_options.ts";
import { KvTokenStore, requireKv } from "./_kv_store.ts";
import { fleetStoreConfig } from "./_lease.ts";

/**
 * Options of {@linkcode createKvTokenStore}.
 *
 * @example Records under an application's prefix
 * ```ts
 * import { createKvTokenStore, type KvTokenStoreOptions } from "@partner-api/client/kv";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * using kv = await Deno.openKv(":memory:");
 * const options: KvTokenStoreOptions = { prefix: ["my-app", "tokens"], leaseDuration: 5000, maxWait: 20_000 };
 * const store = createKvTokenStore(kv, options);
 * await createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * const kept = await Array.fromAsync(kv.list({ prefix: ["my-app", "tokens"] }));
 * equal(kept.length, 1); // the record; no lease is left behind
 * ```
 */
export interface KvTokenStoreOptions extends FleetStoreOptions {
  /**
   * The first parts of every key the store writes.
   *
   * @default {["partner-api", "token"]}
   */
  prefix?: readonly (string | number)[];
}

const CONTEXT = "Cannot create KV token store";
const STORE_ELSEWHERE =
  "store runs on Deno and Deno Deploy only; elsewhere pass a TokenStore of your own";

/**
 * Creates a {@linkcode TokenStore} on a Deno KV database, for
 * `createTokenProvider({ ..., store })`. Processes that share the database
 * share the token, the last quota seen and the quota circuit:
 *
 * - when the token is missing or due for refresh, one process takes a lease
 *   (`kv.atomic().check()`), requests the token and writes it in the atomic
 *   step that releases the lease;
 * - the others wait for it; a lease whose holder died runs out; a process
 *   that waits longer than `maxWait` and than the holder's request may take
 *   with its retries sends its own request;
 * - after a 429 the block is stored, and no process asks before it ends.
 *
 * A process refuses a record older than one it has seen (a database
 * restored from a backup). A store that fails while publishing still hands
 * out the token just received and releases its lease.
 *
 * @param kv An open KV database, e.g. `await Deno.openKv()`.
 * @param options Key prefix, lease length, waiting, encryption.
 * @returns The store.
 * @throws {RangeError} When a duration is out of range.
 * @throws {TypeError} When `encryptionKey` is not an AES-GCM key, or outside Deno.
 *
 * @example Encrypting tokens at rest
 * ```ts
 * import { createKvTokenStore } from "@partner-api/client/kv";
 * import { equal } from "node:assert/strict";
 *
 * using kv = await Deno.openKv(":memory:");
 * const newKey = () =>
 *   crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
 * const encryptionKey = await newKey();
 * await createKvTokenStore(kv, { encryptionKey }).set("client", { blockedUntil: 1 });
 * equal((await createKvTokenStore(kv, { encryptionKey }).get("client"))?.blockedUntil, 1);
 * // A store with another key cannot open the record: it counts as absent.
 * equal(await createKvTokenStore(kv, { encryptionKey: await newKey() }).get("client"), undefined);
 * ```
 */
export function createKvTokenStore(
  kv: Deno.Kv,
  options: KvTokenStoreOptions = {},
): TokenStore {
  requireKv(kv, CONTEXT, STORE_ELSEWHERE);
  return new KvTokenStore(kv, {
    ...fleetStoreConfig(options, CONTEXT),
    prefix: [...(options.prefix ?? ["partner-api", "token"])],
  });
}

export {
  createKvRateLimiter,
  type KvRateLimiterOptions,
} from "./kv_rate_limiter.ts";

// The types its signatures name, homed in other entries (see fleet_types.ts).
export type * from "./fleet_types.ts";
