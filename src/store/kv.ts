/**
 * A token store and a rate limiter on Deno KV (a SQLite file locally, replicated on Deno Deploy): a fleet shares one
 * token, one quota circuit and one rate limit. Needs `--unstable-kv`; Deno only (elsewhere both throw a `TypeError`:
 * use `./redis`). Records rest sealed with AES-GCM under names derived from the secret (HKDF, or PBKDF2 under 32
 * characters): a reader of the database sees no token and no quick way to test guesses of the secret. See docs/fleets.md.
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

import { optionNames, requireKnownOptions } from "../core/_check.ts";
import type { TokenStore } from "./types.ts";
import type { FleetStoreOptions } from "./fleet_options.ts";
import { kvPrefix, KvTokenStore, requireKv } from "./_kv_store.ts";
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
   * @default {["partner-api", "token"]}
   */
  prefix?: readonly (string | number)[];
}

const CONTEXT = "Cannot create KV token store";
const STORE_OPTIONS = optionNames<KvTokenStoreOptions>()(
  "prefix leaseDuration maxWait pollInterval encryptionKey holderId now",
);
const STORE_ELSEWHERE =
  "store runs on Deno and Deno Deploy only; elsewhere pass a TokenStore of your own";

/**
 * Creates a {@linkcode TokenStore} on a Deno KV database, for `createTokenProvider({ store })`: one process takes a lease
 * (`kv.atomic().check()`) and requests the token, the others wait for it up to `maxWait`; a 429's block is stored for
 * all. A record older than one seen (a restored backup) is refused. See docs/fleets.md.
 * @param kv An open KV database, e.g. `await Deno.openKv()`.
 * @throws {RangeError} When a duration is out of range, or `prefix` leaves no room for the store's key in KV's 2,048 bytes.
 * @throws {TypeError} When `encryptionKey` is not an AES-GCM key, `prefix` not an array of KV key parts, or outside Deno.
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
  requireKnownOptions(options, STORE_OPTIONS, CONTEXT);
  return new KvTokenStore(kv, {
    ...fleetStoreConfig(options, CONTEXT),
    // The store adds a digest and "record" (42 bytes as KV encodes them).
    prefix: kvPrefix(options.prefix, ["partner-api", "token"], 42, CONTEXT),
  });
}

export * from "./kv_rate_limiter.ts";

export type * from "./fleet_types.ts";
