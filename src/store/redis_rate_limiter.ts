// The fleet rate limiter on Redis: one Lua script per take decides atomically, on Redis's clock.

import { optionNames, requireKnownOptions } from "../core/_check.ts";
import type { RateLimiter } from "../core/rate_limiter.ts";
import { MOST_WINDOW_REQUESTS } from "../core/_rate_options.ts";
import type { FleetRateLimiterOptions } from "./fleet_options.ts";
import type { RedisCommand } from "./redis_command.ts";
import { FleetRateLimiter } from "./_fleet_rate.ts";
import {
  type FleetConfig,
  fleetConfig,
  type SharedWindow,
} from "./_fleet_config.ts";
import { UnexpectedAnswer } from "./_store_failure.ts";
import {
  GRACE,
  HOLD,
  type Reseed,
  slotShare,
  type TakeReply,
  type TakeRequest,
} from "./_window_rules.ts";
import { ANSWER, REFUSE, RESEED, TAKE } from "./_redis_rate_scripts.ts";
import { redisOptions, sendWithin, text } from "./_redis_commands.ts";
import { hexDigest, perKey } from "./_key.ts";

/**
 * Options of {@linkcode createRedisRateLimiter}.
 *
 * @example The service's limit, shared under an application's prefix
 * ```ts
 * import { createRedisRateLimiter, type RedisRateLimiterOptions } from "@partner-api/client/redis";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const client = { sendCommand: (_args: string[]) => Promise.resolve(null) }; // node-redis
 * const options: RedisRateLimiterOptions = {
 *   command: (args) => client.sendCommand(args),
 *   prefix: "my-app:partner-rate",
 * };
 * await using limiter = createRedisRateLimiter(options);
 * deepStrictEqual(limiter.limit, { requests: 900, interval: 300_000 }); // the service's, by default
 * ```
 */
export interface RedisRateLimiterOptions extends FleetRateLimiterOptions {
  /** Sends one Redis command and resolves with its reply (node-redis `sendCommand`, ioredis `call`). */
  command: RedisCommand;
  /**
   * The start of every key the limiter writes: processes with the same prefix share one budget.
   * @default {"partner-api:rate"}
   */
  prefix?: string;
  /**
   * How long one command may take, in ms; a command that takes longer counts as a failing Redis.
   * @default {2000}
   */
  commandTimeout?: number;
  /**
   * The clock, in epoch ms, for the pace kept alone while Redis fails.
   * @default {Date.now}
   */
  now?: () => number;
}

const CONTEXT = "Cannot create Redis rate limiter";
const LIMITER_OPTIONS = optionNames<RedisRateLimiterOptions>()(
  "command prefix commandTimeout now requests interval onEvent reserve",
);

/**
 * Creates a {@linkcode RateLimiter} that every process using the same Redis and `prefix` shares, for
 * `createClient({ rateLimit })`: never more than `requests` sends in any `interval` ms across the
 * fleet. Each take is one atomic Lua script on Redis's clock; callers wait in order, never fail, and
 * can give up with their signal. A process whose Redis fails paces alone at its last known share
 * (`rate.degraded`, then `rate.restored`). See docs/fleets.md ("One limit for the fleet").
 *
 * `await using` it before closing the Redis connection: it waits for the answers still being written. Callers still
 * waiting then, and any take after, reject with an `AbortError` (`DOMException`).
 * @throws {TypeError} When `command` is not a function or `prefix` is empty.
 * @throws {RangeError} When `requests`, `interval` or `commandTimeout` is out of range.
 *
 * @example A Redis that is away: the process paces alone
 * ```ts
 * import { createRedisRateLimiter } from "@partner-api/client/redis";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const events: string[] = [];
 * await using limiter = createRedisRateLimiter({
 *   command: () => Promise.reject(new Error("connection refused")),
 *   requests: 10,
 *   interval: 1000,
 *   onEvent: (event) => events.push(event.type),
 * });
 * limiter.answered(await limiter.take()); // a slot all the same
 * deepStrictEqual(events, ["rate.degraded"]);
 * ```
 */
export function createRedisRateLimiter(
  options: RedisRateLimiterOptions,
): RateLimiter & AsyncDisposable {
  requireKnownOptions(options, LIMITER_OPTIONS, CONTEXT);
  const redis = redisOptions(options, CONTEXT, "partner-api:rate");
  const config = fleetConfig(options, CONTEXT, MOST_WINDOW_REQUESTS);
  return new FleetRateLimiter(new RedisWindow(redis, config), config);
}

/** The fleet's window in Redis, through scripts sent by `EVALSHA`. */
class RedisWindow implements SharedWindow {
  readonly store = "redis";
  readonly #send: (args: string[]) => Promise<unknown>;
  readonly #config: FleetConfig;
  readonly #keys: string[];
  /** requests, interval, hold, grace: what every script reads first. */
  readonly #args: string[];
  readonly #digest = perKey((source) => hexDigest(source, 20, "SHA-1"));
  /** When this process was last granted a send, on Redis's clock. */
  #granted = -Infinity;

  constructor(
    { command, prefix, commandTimeout }: ReturnType<typeof redisOptions>,
    config: FleetConfig,
  ) {
    this.#send = (args) => sendWithin(command, args, commandTimeout);
    this.#config = config;
    // One hash tag: a cluster keeps every key of a script in one slot.
    this.#keys = "window line places holders turns block epoch".split(" ")
      .map((name) => `${prefix}:{rate}:${name}`);
    const { requests, interval } = config.limit;
    this.#args = [requests, interval, HOLD, GRACE].map(String);
  }

  async take(request: TakeRequest): Promise<TakeReply> {
    // While others wait, a send a slot's share after its last at the soonest: a process with many callers took every
    // slot a window's roll freed at once, leaving one a place in line (2 callers beside 50: 2 sends a window of 20).
    const spacedUntil = this.#granted + slotShare(this.#config.limit);
    const reply = await this.#script(TAKE, this.#keys, [
      ...this.#args,
      newEpoch(),
      this.#config.holder,
      request.epoch,
      request.returning ? "1" : "0",
      request.low ? "1" : "0",
      String(this.#config.reserve),
      Number.isFinite(spacedUntil) ? String(spacedUntil) : "0",
      ...request.sends,
    ]);
    // {granted, wait, holders, epoch, reseed, now}; anything else is a failing store, not a spin: more granted than
    // asked, a reseed neither 0 nor 1, or none granted and no wait where sends were asked and no write back.
    const parts = Array.isArray(reply) ? reply : [];
    const values = parts.map(Number);
    const [granted = -1, wait = -1, holders = -1, , reseed = -1, now = -1] =
      values;
    const epoch = text(parts[3]);
    const numbers = [granted, wait, holders, reseed, now];
    if (
      parts.length !== 6 || epoch === undefined ||
      !numbers.every((n) => Number.isSafeInteger(n) && n >= 0) ||
      granted > request.sends.length || reseed > 1 ||
      granted + wait + reseed === 0 && request.sends.length > 0
    ) {
      throw new UnexpectedAnswer(
        "Redis answered the rate script with another type",
      );
    }
    if (granted > 0) this.#granted = now;
    return { granted, wait, holders, epoch, reseed: reseed === 1 };
  }

  async reseed(reseed: Reseed): Promise<void> {
    await this.#script(RESEED, this.#keys, [
      ...this.#args,
      newEpoch(),
      reseed.epoch,
      reseed.recent ? "1" : "0",
      ...reseed.sends.flatMap(([name, age]) => [name, String(age)]),
    ]);
  }

  async answer(sends: readonly string[]): Promise<void> {
    const [window, , , , , , epoch] = this.#keys;
    const [, interval, hold] = this.#args;
    await this.#script(ANSWER, [window!, epoch!], [interval!, hold!, ...sends]);
  }

  async refuse(): Promise<void> {
    const [window, , , , , block] = this.#keys;
    const [requests, interval] = this.#args;
    await this.#script(REFUSE, [window!, block!], [requests!, interval!]);
  }

  /** `EVALSHA`, and `EVAL` once when Redis does not hold the script yet. */
  async #script(source: string, keys: string[], args: string[]) {
    const tail = [String(keys.length), ...keys, ...args];
    try {
      return await this.#send(["EVALSHA", await this.#digest(source), ...tail]);
    } catch (error) {
      if (!String((error as Error)?.message).includes("NOSCRIPT")) throw error;
      return await this.#send(["EVAL", source, ...tail]);
    }
  }
}

/** An id for a new life of the window, used only if the store has none. */
function newEpoch(): string {
  return crypto.randomUUID().slice(0, 18);
}
