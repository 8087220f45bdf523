// The fleet rate limiter on a real redis-server: several limiters in this
// process stand for processes (each has its own holder and line place). The
// window's invariant over random work, the crawl against the fake's own
// limit, fairness, waits named by the script, and a Redis that fails.

import { equal, ok, rejects, throws } from "node:assert/strict";
import { createRedisRateLimiter } from "../../src/store/redis.ts";
import type { RateLimiter } from "../../src/client/rate_limit.ts";
import type { PartnerApiEvent } from "../../src/core/events.ts";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import {
  connectRedis,
  type RedisClient,
  redisInstalled,
  startRedis,
} from "./_redis_server.ts";
import { crawlTogether, mostAtOnce, mostInAnyWindow } from "../_windows.ts";
import { processTest } from "../_processes.ts";
import { until } from "./_runtimes.ts";

const ignore = !redisInstalled;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** `count` limiters on one Redis, as `count` processes would hold them. */
function fleetOf(
  redis: RedisClient,
  count: number,
  limit: { requests: number; interval: number },
  prefix = `test:${crypto.randomUUID()}`,
) {
  return Array.from(
    { length: count },
    () =>
      createRedisRateLimiter({
        command: (args) => redis.command(args),
        prefix,
        ...limit,
      }),
  );
}

/** Takes a slot, holds it for `ms`, answers; returns [granted, answered] times. */
async function send(limiter: RateLimiter, ms: number) {
  const ticket = await limiter.take();
  const granted = Date.now();
  await sleep(ms);
  const answered = Date.now();
  limiter.answered(ticket);
  return [granted, answered] as const;
}

processTest({
  name:
    "4 limiters on one Redis, random holds: never more sends than the limit in any window",
  ignore,
  async fn() {
    await using server = await startRedis();
    const redis = await connectRedis(server.port);
    const limit = { requests: 12, interval: 300 };
    const fleet = fleetOf(redis, 4, limit);
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const spans = await Promise.all(
      fleet.flatMap((limiter) =>
        Array.from({ length: 3 }, async () => {
          const mine = [];
          for (let i = 0; i < 6; i++) {
            mine.push(await send(limiter, Math.floor(random() * 40)));
          }
          return mine;
        })
      ),
    );
    const all = spans.flat();
    equal(all.length, 72);
    const most = mostAtOnce(all, limit.interval);
    ok(most <= limit.requests, `${most} sends held slots at one moment`);
    for (const limiter of fleet) await limiter[Symbol.asyncDispose]();
    redis.close();
  },
});

processTest({
  name:
    "3 clients with their own Redis limiters crawl the fake's limited list: no 429, never more than the limit in a window",
  ignore,
  async fn() {
    await using server = await startRedis();
    const limit = { requests: 20, interval: 1000 };
    const arrivals: number[] = [];
    await using api = await startFakePartnerApi({
      apiRateLimit: limit,
      items: { transactions: 1500 },
      onRequest: ({ path }) => {
        if (path.startsWith("/api/")) arrivals.push(Date.now());
      },
    });
    const redis = await connectRedis(server.port);
    const fleet = fleetOf(redis, 3, limit);
    const statuses = await crawlTogether(api, fleet);
    // 3 × 16 pages (the last one empty) through 20 per second: by the
    // fake's count, never more than 20 in a second. How near the floor the
    // crawl ends is fleet_rate_bench.ts's measure.
    equal(statuses.filter((status) => status === 429).length, 0);
    equal(statuses.length, 48);
    const most = mostInAnyWindow(arrivals, limit.interval);
    ok(most <= limit.requests, `${most} arrivals in one window`);
    for (const limiter of fleet) await limiter[Symbol.asyncDispose]();
    redis.close();
  },
});

processTest({
  name:
    "under contention each of 4 limiters gets at least 1/(2N) of the sends, in turns kept in Redis",
  ignore,
  async fn() {
    await using server = await startRedis();
    const redis = await connectRedis(server.port);
    const limit = { requests: 8, interval: 200 };
    const fleet = fleetOf(redis, 4, limit);
    const counts = fleet.map(() => 0);
    // A number of sends, not a span of time: a loaded machine gives fewer
    // sends in 1.5 s (25, not 60), and shares of a few vary by chance.
    const sends = 64;
    let total = 0;
    // The first limiter has 6 callers pushing, the others 1 each.
    await Promise.all(
      fleet.flatMap((limiter, i) =>
        Array.from({ length: i === 0 ? 6 : 1 }, async () => {
          while (total < sends) {
            await send(limiter, 0);
            // Callers still queued at the end go after the others stopped.
            if (total < sends) {
              total++;
              counts[i]!++;
            }
          }
        })
      ),
    );
    console.log(`shares of ${total} sends: ${counts.join(", ")}`);
    for (const count of counts) {
      ok(count >= total / (2 * fleet.length), `${counts} of ${total}`);
    }
    for (const limiter of fleet) await limiter[Symbol.asyncDispose]();
    redis.close();
  },
});

processTest({
  name:
    "a full window: the waiter sleeps until the slot frees, at most a few commands per send",
  ignore,
  async fn() {
    await using server = await startRedis();
    const redis = await connectRedis(server.port);
    let commands = 0;
    const limiter = createRedisRateLimiter({
      command: (args) => (commands++, redis.command(args)),
      prefix: "test:wait",
      requests: 2,
      interval: 200,
    });
    const spans = [];
    for (let i = 0; i < 8; i++) spans.push(await send(limiter, 5));
    // 8 sends, never more than 2 holding a slot (from grant to answer and
    // a window): the waiter slept until a slot was free. How soon after it
    // woke is fleet_rate_bench.ts's measure (time ÷ floor).
    const most = mostAtOnce(spans, 200);
    equal(most, 2, `${most} sends held slots at one moment`);
    // A take and an answer each, and now and then a second take after an
    // unanswered send's lower bound; a poller would have made dozens.
    ok(commands <= 8 * 3 + 1, `${commands} commands for 8 sends`);
    await limiter[Symbol.asyncDispose]();
    redis.close();
  },
});

processTest({
  name: "a caller gives up with its signal; the others keep their turn",
  ignore,
  async fn() {
    await using server = await startRedis();
    const redis = await connectRedis(server.port);
    const [limiter] = fleetOf(redis, 1, { requests: 1, interval: 150 });
    const first = await limiter!.take();
    const controller = new AbortController();
    const leaving = limiter!.take(controller.signal) as Promise<number>;
    const staying = limiter!.take();
    const reason = new Error("gave up");
    controller.abort(reason);
    await rejects(leaving, (error) => error === reason);
    limiter!.answered(first);
    limiter!.answered(await staying);
    await rejects(
      limiter!.take(controller.signal) as Promise<number>,
      (e) => e === reason,
    );
    await limiter![Symbol.asyncDispose]();
    redis.close();
  },
});

processTest({
  name:
    "Redis failing: the process paces alone at its last known share, says so once, and goes back to Redis",
  ignore,
  async fn() {
    await using server = await startRedis();
    const redis = await connectRedis(server.port);
    let down = false;
    const events: PartnerApiEvent[] = [];
    const prefix = "test:down";
    const options = {
      prefix,
      requests: 4,
      interval: 400,
      commandTimeout: 100,
    };
    const other = createRedisRateLimiter({
      command: (args) => redis.command(args),
      ...options,
    });
    other.answered(await other.take()); // a second holder: the share is 2
    const limiter = createRedisRateLimiter({
      command: (args) => down ? new Promise(() => {}) : redis.command(args),
      onEvent: (event) => events.push(event),
      ...options,
    });
    limiter.answered(await limiter.take());
    down = true;
    const spans = [];
    for (let i = 0; i < 5; i++) spans.push(await send(limiter, 0));
    equal(events.length, 1);
    const [event] = events;
    equal(event?.type, "rate.degraded");
    equal(event?.type === "rate.degraded" && event.requests, 2);
    // Alone, 2 per 400 ms, counting the send made through Redis before.
    ok(mostAtOnce(spans, 400) <= 2);
    down = false;
    // Back on the fleet's window once the pause (at most 2 s by now) ends.
    const inWindow = async () =>
      Number(await redis.command(["ZCARD", `${prefix}:{rate}:window`]));
    const before = await inWindow();
    // Alone, 2 sends per 400 ms: 50 of them outlast the pause many times.
    for (let send = 0; send < 50 && await inWindow() === before; send++) {
      limiter.answered(await limiter.take());
    }
    ok(await inWindow() > before, "back on the fleet's window");
    await limiter[Symbol.asyncDispose]();
    await other[Symbol.asyncDispose]();
    redis.close();
  },
});

processTest({
  name: "a script Redis forgot (SCRIPT FLUSH, a restart) is sent again whole",
  ignore,
  async fn() {
    await using server = await startRedis();
    const redis = await connectRedis(server.port);
    const [limiter] = fleetOf(redis, 1, { requests: 5, interval: 1000 });
    limiter!.answered(await limiter!.take());
    await redis.command(["SCRIPT", "FLUSH"]);
    limiter!.answered(await limiter!.take());
    await limiter![Symbol.asyncDispose]();
    const sends = await redis.command(["KEYS", "*:{rate}:window"]);
    equal((sends as string[]).length, 1);
    redis.close();
  },
});

processTest("createRedisRateLimiter() refuses bad options by name", () => {
  const command = () => Promise.resolve(null);
  throws(() => createRedisRateLimiter({} as never), {
    name: "TypeError",
    option: "command",
  });
  throws(() => createRedisRateLimiter({ command, requests: 0 }), {
    name: "RangeError",
    option: "requests",
  });
  throws(() => createRedisRateLimiter({ command, interval: 2 ** 31 }), {
    name: "RangeError",
    option: "interval",
  });
  throws(() => createRedisRateLimiter({ command, prefix: "" }), {
    name: "TypeError",
    option: "prefix",
  });
  throws(() => createRedisRateLimiter({ command, commandTimeout: -1 }), {
    name: "RangeError",
    option: "commandTimeout",
  });
  equal(createRedisRateLimiter({ command }).limit.requests, 900);
});

processTest(
  "a reply that is not the script's counts as a failing Redis: paced alone, no spin",
  async () => {
    for (const reply of ["OK", ["a", "b", "c"], [1, -1, 2], null]) {
      let commands = 0;
      const events: string[] = [];
      const limiter = createRedisRateLimiter({
        command: () => (commands++, Promise.resolve(reply)),
        requests: 3,
        interval: 50,
        onEvent: (event) => events.push(event.type),
      });
      for (let i = 0; i < 4; i++) limiter.answered(await limiter.take());
      await limiter[Symbol.asyncDispose]();
      equal(events.join(), "rate.degraded", JSON.stringify(reply));
      ok(commands <= 2, `${commands} commands for ${JSON.stringify(reply)}`);
    }
  },
);

processTest({
  name:
    "a 429 with room in the window blocks the whole fleet for one slot's share of the interval",
  ignore,
  async fn() {
    await using server = await startRedis();
    const redis = await connectRedis(server.port);
    const prefix = `test:${crypto.randomUUID()}`;
    const [a, b] = fleetOf(redis, 2, { requests: 4, interval: 800 }, prefix);
    /** Redis's own clock, in ms, as the scripts read it. */
    const redisNow = async () => {
      const [seconds, micros] = await redis.command(["TIME"]) as string[];
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    };
    a!.answered(await a!.take());
    const refusedFrom = await redisNow();
    a!.refused(); // others on the address filled the service's window
    await a![Symbol.asyncDispose](); // the refusal is written
    const refusedBy = await redisNow();
    // The block is one slot's share of the interval (800 / 4) from the
    // refusal, read on Redis's clock: not the whole interval.
    const block = Number(
      await redis.command(["GET", `${prefix}:{rate}:block`]),
    );
    ok(
      block >= refusedFrom + 200 && block <= refusedBy + 200,
      `block ${block - refusedFrom} ms after the refusal began`,
    );
    b!.answered(await b!.take());
    // b was granted only once the block was over, by Redis's clock.
    ok(await redisNow() >= block, "the other process waited for the block");
    await b![Symbol.asyncDispose]();
    redis.close();
  },
});

processTest({
  name:
    "a live caller that gives up while it waits takes its place out of the fleet's line at once: a background take elsewhere asks again for the window only, not until the place would lapse",
  ignore,
  async fn() {
    await using server = await startRedis();
    const redis = await connectRedis(server.port);
    const prefix = `test:${crypto.randomUUID()}`;
    const line = `${prefix}:{rate}:line`;
    const places = () => redis.command(["ZCARD", line]) as Promise<number>;
    const options = { prefix, requests: 2, interval: 300, reserve: 0 };
    const a = createRedisRateLimiter({
      command: (args) => redis.command(args),
      ...options,
    });
    let takes = 0;
    const b = createRedisRateLimiter({
      command: (
        args,
      ) => (args[0] === "EVALSHA" && takes++, redis.command(args)),
      ...options,
    });
    for (const ticket of [await a.take(), await a.take()]) a.answered(ticket);
    // The window is full: a live caller of a waits, in the fleet's line.
    const leaving = new AbortController();
    const live = Promise.resolve(a.take(leaving.signal, "high"));
    await until(async () => await places() === 1);
    leaving.abort();
    await rejects(live, { name: "AbortError" });
    await a[Symbol.asyncDispose](); // its writes done
    equal(
      await places(),
      0,
      "its place went with it (else: a grace after its turn)",
    );
    b.answered(await b.take(undefined, "low"));
    // A take, and one when the window frees (a millisecond's rounding may ask once more); while a
    // live place stood, it would have asked every slot's share (150 ms) until the place lapsed, 1.3 s.
    ok(takes <= 3, `${takes} takes for one background send`);
    await b[Symbol.asyncDispose]();
    redis.close();
  },
});

processTest({
  name:
    "a limiter whose Redis failed for a while takes from it again: rate.degraded, then rate.restored once its write back is asked (attack r190b F1: the script's write-back reply, none granted and no wait, was taken for a failing store, and the process paced alone for good)",
  ignore,
  async fn() {
    await using server = await startRedis();
    const redis = await connectRedis(server.port);
    let failing = true;
    const events: string[] = [];
    const limiter = createRedisRateLimiter({
      command: (args) =>
        failing
          ? Promise.reject(new Error("connection refused"))
          : redis.command(args),
      prefix: `test:${crypto.randomUUID()}`,
      requests: 10,
      interval: 200,
      onEvent: (event: PartnerApiEvent) => events.push(event.type),
    });
    for (let i = 0; i < 3; i++) limiter.answered(await limiter.take());
    failing = false;
    // Paced alone at 5 a window, 100 takes outlast its pauses before it asks Redis again (0.5 s, then 1 s).
    for (let i = 0; i < 100 && !events.includes("rate.restored"); i++) {
      limiter.answered(await limiter.take());
    }
    equal(events.join(), "rate.degraded,rate.restored");
    await limiter[Symbol.asyncDispose]();
    redis.close();
  },
});
