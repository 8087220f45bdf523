// Internal: the fleet rate limiter on Redis. The fleet's window rests in one
// sorted set (each send scored with the ms it counts from, on Redis's own
// clock), the line of waiting processes in another; one Lua script per take
// decides atomically and answers how long until the caller's turn.

import type { EventListener } from "../core/events.ts";
import type { RateLimiter } from "../core/_rate_window.ts";
import {
  checkNumber,
  optionError,
  requireFunction,
  requireText,
} from "../core/_check.ts";
import type { RedisCommand } from "./_redis_store.ts";
import {
  checkFleetLimit,
  FleetRateLimiter,
  type SharedWindow,
  type TakeReply,
} from "./_fleet_rate.ts";

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
export interface RedisRateLimiterOptions {
  /**
   * Sends one Redis command and resolves with its reply, as node-redis's
   * `sendCommand(args)` and ioredis's `call(...args)` do.
   */
  command: RedisCommand;
  /**
   * Requests the whole fleet may send in any window. Every process sharing
   * the prefix must give the same limit.
   *
   * @default {900}
   */
  requests?: number;
  /**
   * The window's length, in ms.
   *
   * @default {300000}
   */
  interval?: number;
  /**
   * The start of every key the limiter writes: processes with the same
   * prefix share one budget.
   *
   * @default {"partner-api:rate"}
   */
  prefix?: string;
  /**
   * How long one command may take, in ms; a command that takes longer
   * counts as a failing Redis.
   *
   * @default {2000}
   */
  commandTimeout?: number;
  /**
   * The clock, in epoch ms, for the pace this process keeps alone while
   * Redis fails; the fleet's window runs on Redis's clock.
   *
   * @default {Date.now}
   */
  now?: () => number;
  /** Receives `rate.degraded` when Redis fails and the process paces alone. */
  onEvent?: EventListener;
}

const CONTEXT = "Cannot create Redis rate limiter";

/**
 * Creates a {@linkcode RateLimiter} that every process using the same Redis
 * and `prefix` shares, for `createClient({ rateLimit })`: never more than
 * `requests` sends in any window of `interval` ms across the fleet, whatever
 * the runtime of each process.
 *
 * - Each take is one Lua script (`EVALSHA`), atomic on Redis's clock
 *   (`TIME`); a send counts from its answer (one more script), as the
 *   in-process limiter counts it.
 * - Callers wait for their slot, never fail, and can give up with their
 *   signal. A process waits for the time the script names, not by polling.
 * - Processes take turns in a line kept in Redis: under contention each of
 *   `N` processes gets its share (at least `1 / (2N)` of the limit).
 * - When Redis fails or does not answer in `commandTimeout`, the process
 *   paces itself alone at its last known share (`requests / N`), emits
 *   `rate.degraded`, and asks Redis again after a pause (0.5 s, doubling up
 *   to 30 s).
 *
 * `await using` it (or `await limiter[Symbol.asyncDispose]()`) before
 * closing the Redis connection: it waits for the answers still being
 * written.
 *
 * @param options The command function, the limit, the prefix.
 * @returns The limiter, to pass as `rateLimit` to one or more clients.
 * @throws {TypeError} When `command` is not a function or `prefix` is empty.
 * @throws {RangeError} When `requests`, `interval` or `commandTimeout` is out of range.
 *
 * @example Pacing a fleet with ioredis
 * ```ts ignore
 * import { Redis } from "ioredis";
 * import { configFromEnv, createClient } from "@partner-api/client";
 * import { createRedisRateLimiter } from "@partner-api/client/redis";
 *
 * const redis = new Redis(Deno.env.get("REDIS_URL") ?? "redis://127.0.0.1:6379");
 * const client = createClient({
 *   ...configFromEnv(),
 *   rateLimit: createRedisRateLimiter({
 *     command: (args) => redis.call(...args as [string, ...string[]]),
 *   }),
 * });
 * ```
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
  const command = requireFunction(options?.command, CONTEXT, "command");
  if (command === undefined) {
    throw optionError(TypeError, CONTEXT, "command", "must be given");
  }
  const limit = checkFleetLimit(options, CONTEXT, 1_000_000);
  const prefix = options.prefix === undefined
    ? "partner-api:rate"
    : requireText(options.prefix, CONTEXT, "prefix");
  const commandTimeout = checkNumber(
    options.commandTimeout,
    2000,
    "positive whole time in ms, at most 2147483647",
    CONTEXT,
    "commandTimeout",
  );
  const holder = crypto.randomUUID().slice(0, 13);
  const window = new RedisWindow(
    command,
    prefix,
    limit,
    holder,
    commandTimeout,
  );
  return new FleetRateLimiter(window, {
    limit,
    holder,
    now: requireFunction(options.now, CONTEXT, "now") ?? Date.now,
    onEvent: requireFunction(options.onEvent, CONTEXT, "onEvent"),
  });
}

/**
 * How long an unanswered send counts as taken at most, in ms, before its
 * window: longer than any request's time limit, so only a process that died
 * mid-request leaves one, and its slot comes back after this and a window.
 */
const HOLD = 60_000;
/** How long a process keeps its place in line after its turn came, in ms. */
const GRACE = 1000;

// KEYS: 1 window (sorted set: send -> ms it counts from), 2 line (sorted
// set: holder -> turn), 3 places (hash: holder -> ms its place lapses),
// 4 holders (sorted set: holder -> ms last seen), 5 turns (counter),
// 6 block (ms before which nobody sends, after a refusal).
const CLOCK = `local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
`;
// ARGV: requests, interval, hold, grace, holder, then the sends wanted.
const TAKE =
  `${CLOCK}local requests, interval = tonumber(ARGV[1]), tonumber(ARGV[2])
local hold, grace, holder = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local want = #ARGV - 5
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - interval)
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - interval)
redis.call('ZADD', KEYS[4], now, holder)
for _, other in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if tonumber(redis.call('HGET', KEYS[3], other) or '0') < now then
    redis.call('ZREM', KEYS[2], other)
    redis.call('HDEL', KEYS[3], other)
  end
end
local block = tonumber(redis.call('GET', KEYS[6]) or '0')
local free = requests - redis.call('ZCARD', KEYS[1])
if block > now then free = 0 end
local place = redis.call('ZRANK', KEYS[2], holder)
local line = redis.call('ZCARD', KEYS[2])
local ahead = place or line
-- While others wait in line, one send per turn: turns, not callers, are fair.
local most = want
if line > (place and 1 or 0) then most = 1 end
local granted = math.max(0, math.min(most, free - ahead))
for i = 1, granted do redis.call('ZADD', KEYS[1], now + hold, ARGV[5 + i]) end
local wait = 0
if granted == want then
  redis.call('ZREM', KEYS[2], holder)
  redis.call('HDEL', KEYS[3], holder)
else
  if granted > 0 or not place then
    redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[5]), holder)
  end
  if block > now then
    wait = block - now
  else
    -- This holder's turn comes when the (index + 1)-th send leaves.
    local index = redis.call('ZRANK', KEYS[2], holder) - (free - granted)
    local send = redis.call('ZRANGE', KEYS[1], math.max(index, 0), math.max(index, 0), 'WITHSCORES')
    local from = tonumber(send[2] or now + 1)
    -- Unanswered: it leaves no sooner than an interval from now.
    if from > now then wait = interval else wait = math.max(1, from + interval - now) end
  end
  redis.call('HSET', KEYS[3], holder, now + wait + grace)
end
for i = 1, 6 do redis.call('PEXPIRE', KEYS[i], interval + hold + grace) end
return {granted, wait, redis.call('ZCARD', KEYS[4])}`;
// KEYS: window; ARGV: the sends. Each counts from now, if it still waits.
const ANSWER = `${CLOCK}for _, send in ipairs(ARGV) do
  local from = redis.call('ZSCORE', KEYS[1], send)
  if from and tonumber(from) > now then redis.call('ZADD', KEYS[1], now, send) end
end
return 0`;
// KEYS: window, block; ARGV: requests, interval. A window with room is
// taken as full for one slot's share of the interval.
const REFUSE =
  `${CLOCK}local requests, interval = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - interval)
if redis.call('ZCARD', KEYS[1]) >= requests then return 0 end
local until_ = now + math.ceil(interval / requests)
if until_ > tonumber(redis.call('GET', KEYS[2]) or '0') then
  redis.call('SET', KEYS[2], until_, 'PX', interval)
end
return 0`;

/** The fleet's window in Redis, through scripts sent by `EVALSHA`. */
class RedisWindow implements SharedWindow {
  readonly store = "redis";
  readonly #command: RedisCommand;
  readonly #keys: string[];
  readonly #args: string[];
  readonly #commandTimeout: number;
  readonly #digests = new Map<string, Promise<string>>();

  constructor(
    command: RedisCommand,
    prefix: string,
    limit: { requests: number; interval: number },
    holder: string,
    commandTimeout: number,
  ) {
    this.#command = command;
    this.#commandTimeout = commandTimeout;
    // One hash tag: a cluster keeps every key of a script in one slot.
    this.#keys = ["window", "line", "places", "holders", "turns", "block"]
      .map((name) => `${prefix}:{rate}:${name}`);
    this.#args = [
      String(limit.requests),
      String(limit.interval),
      String(HOLD),
      String(GRACE),
      holder,
    ];
  }

  async take(sends: readonly string[]): Promise<TakeReply> {
    const reply = await this.#script(TAKE, this.#keys, [
      ...this.#args,
      ...sends,
    ]);
    const numbers = Array.isArray(reply) ? reply.map(Number) : [];
    // Anything else is not our script's answer: a failing store, not a spin.
    if (numbers.length !== 3 || !numbers.every((n) => n >= 0)) {
      throw new TypeError("Redis answered the rate script with another type");
    }
    const [granted, wait, holders] = numbers as [number, number, number];
    return { granted, wait, holders };
  }

  async answer(sends: readonly string[]): Promise<void> {
    await this.#script(ANSWER, [this.#keys[0]!], [...sends]);
  }

  async refuse(): Promise<void> {
    await this.#script(REFUSE, [this.#keys[0]!, this.#keys[5]!], [
      this.#args[0]!,
      this.#args[1]!,
    ]);
  }

  /** `EVALSHA`, and `EVAL` once when Redis does not hold the script yet. */
  async #script(
    source: string,
    keys: string[],
    args: string[],
  ): Promise<unknown> {
    const tail = [String(keys.length), ...keys, ...args];
    try {
      return await this.#send(["EVALSHA", await this.#digest(source), ...tail]);
    } catch (error) {
      if (!String((error as Error)?.message).includes("NOSCRIPT")) throw error;
      return await this.#send(["EVAL", source, ...tail]);
    }
  }

  /** One command, within `commandTimeout`. */
  #send(args: string[]): Promise<unknown> {
    const reply = Promise.resolve().then(() => this.#command(args));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`Redis did not answer ${args[0]} in time`)),
        this.#commandTimeout,
      );
      reply.then(resolve, reject).finally(() => clearTimeout(timer));
    });
  }

  #digest(source: string): Promise<string> {
    let digest = this.#digests.get(source);
    if (digest === undefined) {
      digest = crypto.subtle.digest("SHA-1", new TextEncoder().encode(source))
        .then((bytes) =>
          Array.from(
            new Uint8Array(bytes),
            (byte) => byte.toString(16).padStart(2, "0"),
          ).join("")
        );
      this.#digests.set(source, digest);
    }
    return digest;
  }
}
