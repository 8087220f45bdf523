// Issue 46 on a real redis-server: limiter state from the store never holds
// a fleet longer than it says.
//
// - 90 window entries dated an hour ahead (no take ever writes one past
//   Redis's time plus the hold) are dropped, not kept for the hold: the
//   window's 100 slots are all granted at once (was 10, the other 90 held
//   for a minute and an interval: the crawl took 6.8-7.4x its floor);
// - the window key lost alone while its epoch survives (an eviction policy
//   may pick one key of two) counts as a restart: 6 processes meet 0 x 429
//   in 6 trials (was 10, 4, 0 and 0 x 429 in 4 trials);
// - the epoch key lost alone while its window survives costs nothing the
//   window does not say: with 3 of 10 slots taken, the 7 free ones are
//   granted at once, to the process that knew the epoch and to a new one
//   (was none: the fleet stopped for an interval and a second).

import { deepStrictEqual, equal } from "node:assert/strict";
import {
  connectRedis,
  type RedisClient,
  redisTest,
  startRedis,
} from "./_redis_server.ts";
import { createRedisRateLimiter } from "../../src/store/redis.ts";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { until } from "./_runtimes.ts";
import { spawnDenoWorker } from "./_deno_worker.ts";
import type { RateLimiter } from "../../src/core/rate_limiter.ts";

/** The limiter's key `name` under `prefix`, as the scripts name it. */
const keyOf = (prefix: string, name: string) => `${prefix}:{rate}:${name}`;

/**
 * Asks `limiter` (under `prefix`) for `count` sends at once: how many it is
 * granted before one waits in the store's line; the waiting ones leave.
 */
async function grantedAtOnce(
  limiter: RateLimiter,
  client: RedisClient,
  prefix: string,
  count: number,
): Promise<number> {
  const line = keyOf(prefix, "line");
  const leave = new AbortController();
  let granted = 0;
  const takes = Array.from(
    { length: count },
    () =>
      Promise.resolve(limiter.take(leave.signal)).then((ticket) => {
        granted++;
        limiter.answered(ticket);
      }, () => {}),
  );
  await until(async () =>
    granted === count || Number(await client.command(["ZCARD", line])) > 0
  );
  leave.abort();
  await Promise.all(takes);
  return granted;
}

redisTest(
  "poisoned entries: 90 window entries dated an hour ahead are dropped, not held: all 100 slots of the window are granted at once, by the store's count",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    const prefix = `poisoned:${crypto.randomUUID()}`;
    const [seconds] = await client.command(["TIME"]) as string[];
    const hourAhead = Number(seconds) * 1000 + 3_600_000;
    for (let i = 0; i < 90; i++) {
      await client.command([
        "ZADD",
        keyOf(prefix, "window"),
        String(hourAhead),
        `ghost:${i}`,
      ]);
    }
    // No window passes while the test runs: what is granted is this window's.
    const limiter = createRedisRateLimiter({
      command: (args) => client.command(args),
      prefix,
      requests: 100,
      interval: 3_600_000,
    });
    const granted = await grantedAtOnce(limiter, client, prefix, 100);
    await limiter[Symbol.asyncDispose]();
    const ghosts = await client.command([
      "ZCOUNT",
      keyOf(prefix, "window"),
      String(hourAhead),
      "+inf",
    ]);
    client.close();
    equal(granted, 100, "the window's slots, none held by the entries");
    equal(Number(ghosts), 0, "the entries dated an hour ahead are gone");
  },
);

/**
 * Limiters on `client` sharing 10 sends an hour under a fresh prefix: no window passes while a test runs, so what is
 * granted is this window's.
 */
function tenAnHour(client: RedisClient, name: string) {
  const prefix = `${name}:${crypto.randomUUID()}`;
  const limiter = () =>
    createRedisRateLimiter({
      command: (args) => client.command(args),
      prefix,
      requests: 10,
      interval: 3_600_000,
    });
  return { prefix, limiter };
}

redisTest(
  "an epoch lost alone: the epoch key deleted while its window survives, 3 of 10 slots taken: the 7 free ones are granted at once, to the process that knew the epoch and to a new one, by the store's count",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    const { prefix, limiter } = tenAnHour(client, "epoch");
    const known = limiter();
    const first = await grantedAtOnce(known, client, prefix, 3);
    await client.command(["DEL", keyOf(prefix, "epoch")]);
    const again = await grantedAtOnce(known, client, prefix, 4);
    const joined = limiter();
    // One more than the window has room for: the limit still holds.
    const newcomer = await grantedAtOnce(joined, client, prefix, 4);
    await known[Symbol.asyncDispose]();
    await joined[Symbol.asyncDispose]();
    const sends = await client.command(["ZCARD", keyOf(prefix, "window")]);
    client.close();
    // 3 before the loss; then 4 of 4 to the process that knew the epoch and
    // the last 3 free to a new one, whose 4th waits: 10 sends, no more.
    deepStrictEqual(
      { first, again, newcomer, sends: Number(sends) },
      { first: 3, again: 4, newcomer: 3, sends: 10 },
    );
  },
);

redisTest(
  "a window lost, then its epoch: the fleet still sends no more than the limit in the hour, though a process's sends were never written back, by the store's count",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    const { prefix, limiter } = tenAnHour(client, "double");
    const [a, b, d] = [1, 2, 3].map(limiter);
    const granted = [
      await grantedAtOnce(a!, client, prefix, 3),
      await grantedAtOnce(b!, client, prefix, 5), // then idle: never writes back
      await grantedAtOnce(d!, client, prefix, 1),
    ];
    await client.command(["DEL", keyOf(prefix, "window")]);
    granted.push(await grantedAtOnce(a!, client, prefix, 1)); // a writes back
    // The epoch goes too, and the line a's wait left (it would lapse by itself).
    await client.command([
      "DEL",
      ...["epoch", "line", "places"].map((name) => keyOf(prefix, name)),
    ]);
    granted.push(await grantedAtOnce(d!, client, prefix, 10));
    for (const limiter of [a, b, d]) await limiter![Symbol.asyncDispose]();
    client.close();
    const sent = granted.reduce((sum, n) => sum + n, 0);
    equal(
      sent <= 10,
      true,
      `${granted.join(" + ")} sends in the hour, limit 10`,
    );
  },
);

/** Processes of the lost-window fleet, trials, and each one's requests. */
const PROCESSES = 6;
const TRIALS = 6;
const EACH = 6;
const LIMIT = { requests: 20, interval: 1000 };

redisTest(
  `a window lost alone: the window key deleted mid-crawl while its epoch survives, ${PROCESSES} processes meet 0 x 429 in ${TRIALS} trials, by the fake's count`,
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    const trials: number[] = [];
    await using api = await startFakePartnerApi({
      apiRateLimit: LIMIT,
      onRequest: ({ path, status }) => {
        if (path.startsWith("/api/")) trials.push(status);
      },
    });
    const run = `lost:${crypto.randomUUID()}`;
    const children = Array.from(
      { length: PROCESSES },
      () =>
        spawnDenoWorker("lost_window_worker.ts", [
          String(redis.port),
          run,
          String(TRIALS),
          String(EACH),
          String(LIMIT.requests),
          String(LIMIT.interval),
        ], api),
    );
    const refused: number[] = [];
    try {
      for (let trial = 0; trial < TRIALS; trial++) {
        trials.length = 0;
        await client.command(["SET", `${run}:go:${trial}`, "1"]);
        // Once a window's worth has arrived, every process has sends in it.
        await until(() => trials.length >= LIMIT.requests);
        await client.command(["DEL", keyOf(`${run}:${trial}`, "window")]);
        await until(async () =>
          Number(await client.command(["GET", `${run}:done:${trial}`])) ===
            PROCESSES
        );
        refused.push(trials.filter((status) => status === 429).length);
        // The fake's window empties before the next trial.
        await new Promise((done) => setTimeout(done, LIMIT.interval));
      }
    } finally {
      for (const child of children) {
        await child.status;
      }
      client.close();
    }
    equal(
      refused.reduce((sum, n) => sum + n, 0),
      0,
      `429s by trial: ${refused.join(", ")}`,
    );
  },
);

redisTest(
  "a window that emptied as its sends left is no loss: a limiter back after a quiet window takes at once, without rate.degraded",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    const events: string[] = [];
    const limiter = createRedisRateLimiter({
      command: (args) => client.command(args),
      prefix: `quiet:${crypto.randomUUID()}`,
      requests: 2,
      interval: 50,
      onEvent: (event) => events.push(event.type),
    });
    limiter.answered(await limiter.take());
    limiter.answered(await limiter.take());
    // Both sends leave the window (an interval after their answers).
    await new Promise((done) => setTimeout(done, 80));
    limiter.answered(await limiter.take());
    await limiter[Symbol.asyncDispose]();
    client.close();
    equal(events.length, 0, `events: ${events}`);
  },
);
