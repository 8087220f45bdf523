/**
 * Sends one Redis command, e.g. `["GET", "k"]`, and resolves with its reply. One at a time: a client in a pipeline or
 * MULTI answers "QUEUED", and a script's reply that no script gives fails the store's call at once (a TypeError naming
 * option `command`), as does a function that runs no script and answers EVAL with null.
 *
 * @example With node-redis or ioredis
 * ```ts
 * import { createRedisTokenStore, type RedisCommand } from "@partner-api/client/redis";
 * import { equal } from "node:assert/strict";
 *
 * const sent: string[][] = [];
 * // With ioredis: (args) => redis.call(...args); with node-redis: (args) => client.sendCommand(args).
 * const command: RedisCommand = (args) => (sent.push(args), Promise.resolve(null));
 * equal(await createRedisTokenStore({ command }).get("client"), undefined); // no record yet
 * equal(sent[0]?.[0], "GETRANGE"); // a record is read only as far as it may go (64 KiB)
 * ```
 */
export type RedisCommand = (args: string[]) => Promise<unknown>;
