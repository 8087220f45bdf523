// Fair turns on a real redis-server for a process with few callers beside one with many (attack r208a F1): at each
// roll of the window the busy process took every freed slot but the one the other's place kept, one a turn at a round
// trip each, while the other slept to its turn: 2 callers beside 50 got 2 sends a window of 20. While others wait in
// line, a process is now granted a send a slot's share after its last at the soonest (tests/rate_fair_callers_test.ts
// has the rules over simulated fleets).

import { ok } from "node:assert/strict";
import { connectRedis, redisTest, startRedis } from "./_redis_server.ts";
import { createRedisRateLimiter } from "../../src/store/redis.ts";

redisTest(
  "2 callers beside 50 on Redis: each process at least 1/(2N) of each window's background sends from the third on",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    const options = {
      requests: 20,
      interval: 1000,
      reserve: 0,
      prefix: `callers:${crypto.randomUUID()}`,
      command: (args: string[]) => client.command(args),
    };
    const fleet = [2, 50].map(() => createRedisRateLimiter(options));
    const start = Date.now(), end = start + 4 * options.interval;
    const counts: number[][] = [];
    const caller = async (p: number) => {
      while (Date.now() < end) {
        const ticket = await fleet[p]!.take(undefined, "low");
        const window = Math.floor((Date.now() - start) / options.interval);
        if (Date.now() < end) (counts[window] ??= [0, 0])[p]!++;
        await new Promise((answer) => setTimeout(answer, 10));
        fleet[p]!.answered(ticket);
      }
    };
    try {
      await Promise.all(
        [2, 50].flatMap((n, p) => Array.from({ length: n }, () => caller(p))),
      );
      // The first window goes to the process that filled it; the next may still, on a machine busy with other tests.
      for (const window of counts.slice(2)) {
        const total = window[0]! + window[1]!;
        for (const count of window) {
          ok(count >= total / 4, JSON.stringify(counts));
        }
      }
    } finally {
      for (const limiter of fleet) await limiter[Symbol.asyncDispose]();
      client.close();
    }
  },
);
