// Issue 47 on a real redis-server: live traffic first across a fleet. One
// process crawls in the background (`priority: "low"`), two send live calls
// once the crawl fills its share of the window. By the fake's count: the
// crawl never holds the last `reserve` slots of any window, the live calls
// are all served while the crawl still has requests to send (none queued
// behind it), and 0 x 429.

import { deepStrictEqual, ok } from "node:assert/strict";
import { connectRedis, redisTest, startRedis } from "./_redis_server.ts";
import { createRedisRateLimiter } from "../../src/store/redis.ts";
import { until } from "./_runtimes.ts";
import { spawnDenoWorker } from "./_deno_worker.ts";
import { PRIORITY_FLEET, runPriorityFleet } from "../_windows.ts";

const { limit: LIMIT, reserve: RESERVE } = PRIORITY_FLEET;
const CRAWL = 70;
const LIVE_EACH = 8;

redisTest(
  "priorities across 3 processes on Redis: a background crawl never holds the last reserve slots of a window, and live calls of two other processes are served before the crawl ends, 0 x 429, by the fake's count",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    await runPriorityFleet(2 * LIVE_EACH, async (api, arrivals) => {
      const run = `priority:${crypto.randomUUID()}`;
      const worker = (role: string, count: number) =>
        spawnDenoWorker("priority_worker.ts", [
          String(redis.port),
          run,
          role,
          String(count),
          String(LIMIT.requests),
          String(LIMIT.interval),
        ], api);
      const children = [
        worker("low", CRAWL),
        worker("live", LIVE_EACH),
        worker("live", LIVE_EACH),
      ];
      try {
        await client.command(["SET", `${run}:go:low`, "1"]);
        // The crawl has taken its share of the first window: now live calls.
        await until(() => arrivals.length >= LIMIT.requests - RESERVE);
        await client.command(["SET", `${run}:go:live`, "1"]);
        await until(async () =>
          Number(await client.command(["GET", `${run}:done`])) === 3
        );
      } finally {
        for (const child of children) await child.status;
        client.close();
      }
    });
  },
);

redisTest(
  "a background take on Redis while a live caller of another process waits asks again at that caller's turn, not every slot's share (about a thousand round trips a window for nothing)",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    const evals = { a: 0 };
    const options = {
      requests: 10,
      interval: 300,
      reserve: 1,
      prefix: `poll:${crypto.randomUUID()}`,
    };
    const counted = (args: string[]) => {
      if (/^EVAL/.test(args[0]!)) evals.a++;
      return client.command(args);
    };
    const a = createRedisRateLimiter({ ...options, command: counted });
    const b = createRedisRateLimiter({
      ...options,
      command: (args) => client.command(args),
    });
    try {
      const held = [];
      for (let i = 0; i < 10; i++) held.push(await b.take()); // in flight
      const live = b.take(undefined, "high");
      await new Promise((resolve) => setTimeout(resolve, 50));
      evals.a = 0;
      const background = a.take(undefined, "low");
      // Ended by disposal if an assertion fails first.
      for (const taken of [live, background]) {
        Promise.resolve(taken).catch(() => {});
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
      // A turn a window (300 ms) while the live caller waits: 4 or 5; it was 34.
      ok(evals.a <= 8, `${evals.a} takes`);
      for (const ticket of held) b.answered(ticket);
      b.answered(await live);
      a.answered(await background);
    } finally {
      await a[Symbol.asyncDispose]();
      await b[Symbol.asyncDispose]();
      client.close();
    }
  },
);

redisTest(
  "a process's crawl keeps its place in the fleet's line on Redis while a live call of the same process is served: it gets the next background slot before a crawl that came to the line after it (newcomer r197 N3: 1 page a window beside 10)",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    const options = {
      requests: 3,
      interval: 1500,
      reserve: 1,
      prefix: `turns:${crypto.randomUUID()}`,
      command: (args: string[]) => client.command(args),
    };
    const [a, b, c] = [0, 1, 2].map(() => createRedisRateLimiter(options));
    const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
    const served: string[] = [];
    const crawl = async (name: string, limiter: typeof a) => {
      const ticket = await limiter!.take(undefined, "low");
      served.push(name);
      limiter!.answered(ticket);
    };
    try {
      // b sends two, answered 500 ms apart: one slot left, the reserve's. Slots then free one at a time.
      b!.answered(await b!.take());
      await sleep(500);
      b!.answered(await b!.take());
      const crawlOfA = crawl("a", a);
      await sleep(50);
      const crawlOfC = crawl("c", c);
      await sleep(50);
      // a live call of a takes the reserve's slot; a's crawl stays first in line.
      a!.answered(await a!.take(undefined, "auto"));
      await Promise.all([crawlOfA, crawlOfC]);
      deepStrictEqual(served, ["a", "c"]);
    } finally {
      for (const limiter of [a!, b!, c!]) await limiter[Symbol.asyncDispose]();
      client.close();
    }
  },
);
