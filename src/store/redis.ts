/**
 * A token store and a rate limiter on Redis: a fleet on any runtime shares one token, one quota circuit and one rate
 * limit. No Redis dependency: you pass a function that sends one command with your client (node-redis
 * `(args) => client.sendCommand(args)`, ioredis `(args) => client.call(...args)`). Records rest sealed with AES-GCM under
 * names derived from the secret (HKDF, or PBKDF2 under 32 characters): a reader of the database sees no token and no
 * quick way to test guesses of the secret.
 *
 * @example One token for a fleet, with ioredis
 * ```ts ignore
 * import { Redis } from "ioredis";
 * import { configFromEnv, createTokenProvider } from "@partner-api/client";
 * import { createRedisTokenStore } from "@partner-api/client/redis";
 *
 * const redis = new Redis(Deno.env.get("REDIS_URL") ?? "redis://127.0.0.1:6379");
 * const tokens = createTokenProvider({
 *   ...configFromEnv(),
 *   store: createRedisTokenStore({
 *     command: (args) => redis.call(...args as [string, ...string[]]),
 *   }),
 * });
 * ```
 *
 * @example A Redis that is away costs no more than one process alone
 * ```ts
 * import { createRedisTokenStore } from "@partner-api/client/redis";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const store = createRedisTokenStore({ command: () => Promise.reject(new Error("ECONNREFUSED")) });
 * const token = await createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * ok(api.isValidToken(token.accessToken)); // a failing store counts as an empty one
 * equal(api.tokenRequests, 1);
 * ```
 *
 * @module
 */

import type { TokenStore } from "./types.ts";
import type { FleetStoreOptions } from "./fleet_options.ts";
import {
  optionNames,
  requireFunction,
  requireKnownOptions,
} from "../core/_check.ts";
import { redisOptions } from "./_redis_commands.ts";
import { fleetStoreConfig } from "./_lease.ts";
import { RedisTokenStore } from "./_redis_store.ts";
import type { RedisCommand } from "./redis_command.ts";

export type { RedisCommand } from "./redis_command.ts";

/**
 * Options of {@linkcode createRedisTokenStore}.
 *
 * @example Through node-redis, under an application's prefix
 * ```ts
 * import { createRedisTokenStore, type RedisTokenStoreOptions } from "@partner-api/client/redis";
 * import { equal, ok } from "node:assert/strict";
 *
 * const sent: string[][] = [];
 * const options: RedisTokenStoreOptions = {
 *   command: (args) => (sent.push(args), Promise.resolve(null)), // stands in for (args) => client.sendCommand(args)
 *   prefix: "my-app:partner-token",
 * };
 * equal(await createRedisTokenStore(options).get("client"), undefined);
 * ok(sent[0]?.[1]?.startsWith("my-app:partner-token:")); // GETRANGE <key> 0 65536
 * ```
 */
export interface RedisTokenStoreOptions extends FleetStoreOptions {
  /** Sends one Redis command and resolves with its reply (node-redis `sendCommand`, ioredis `call`). */
  command: RedisCommand;
  /**
   * Sends one command on a connection of its own (`redis.duplicate()`), never `command`'s (a blocked connection answers
   * nothing else): waiters are then woken by the token's write (`XREAD BLOCK`).
   * @default {none: waiters look again now and then}
   */
  blockingCommand?: RedisCommand;
  /**
   * The start of every key the store writes.
   * @default {"partner-api:token"}
   */
  prefix?: string;
  /**
   * How long one command may take, in ms; a command that takes longer counts as failed.
   * @default {2000}
   */
  commandTimeout?: number;
}

const CONTEXT = "Cannot create Redis token store";
const STORE_OPTIONS = optionNames<RedisTokenStoreOptions>()(
  "command blockingCommand prefix commandTimeout leaseDuration maxWait pollInterval encryptionKey holderId now",
);

/**
 * Creates a {@linkcode TokenStore} on Redis, for `createTokenProvider({ store })`: one process takes a lease
 * (`SET NX PX`) and requests the token, the others wait up to `maxWait`; a 429's block is stored for all. A failing
 * Redis counts as empty (no process spends more than alone); one that refuses EVAL gets plain commands. A record older
 * than one seen is refused. See docs/fleets.md.
 * @throws {TypeError} When `command` is not a function, `prefix` is empty or `encryptionKey` is not an AES-GCM key.
 * @throws {RangeError} When a duration is out of range.
 *
 * @example A store that holds a quota block
 * ```ts
 * import { createRedisTokenStore } from "@partner-api/client/redis";
 * import { equal, ok } from "node:assert/strict";
 *
 * const data = new Map<string, string>(); // stands in for a Redis refusing scripts (EVAL): plain commands then
 * const store = createRedisTokenStore({
 *   command: async ([name, key, value]) => {
 *     if (name === "SET") return data.set(key!, value!) && "OK";
 *     if (name === "TYPE") return data.has(key!) ? "string" : "none";
 *     if (name === "STRLEN") return data.get(key!)?.length ?? 0;
 *     if (name === "GET" || name === "GETRANGE") return data.get(key!) ?? null;
 *     throw new Error(`ERR unknown command '${name}'`);
 *   },
 * });
 * const blockedUntil = Date.now() + 60_000;
 * await store.set("client", { blockedUntil });
 * equal((await store.get("client"))?.blockedUntil, blockedUntil);
 * ok(![...data.values()].some((value) => value.includes(String(blockedUntil)))); // sealed at rest
 * ```
 */
export function createRedisTokenStore(
  options: RedisTokenStoreOptions,
): TokenStore {
  requireKnownOptions(options, STORE_OPTIONS, CONTEXT);
  return new RedisTokenStore({
    ...redisOptions(options, CONTEXT, "partner-api:token"),
    ...fleetStoreConfig(options, CONTEXT),
    blockingCommand: requireFunction(
      options.blockingCommand,
      CONTEXT,
      "blockingCommand",
    ),
  });
}

export * from "./redis_rate_limiter.ts";
export type * from "./fleet_types.ts";
