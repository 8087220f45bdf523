// Fair turns on a real redis-server for a process with few callers beside one with many (attack r208a F1): at each
// roll of the window the busy process took every freed slot but the one the other's place kept, one a turn at a round
// trip each, while the other slept to its turn: 2 callers beside 50 got 2 sends a window of 20. While others wait in
// line, a process is now granted a send a slot's share after its last at the soonest (tests/rate_fair_callers_test.ts
// has the rules over simulated fleets).

import { ok } from "node:assert/strict";
import { connectRedis, redisTest, startRedis } from "./_redis_server.ts";
import { createRedisRateLimiter } from "../../src/store/redis.ts";

redisTest(
  "2 callers beside 50 on Redis: each process at least 1/(2N) of the background sends from the third window on",
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
      // Counted over the windows after (the unfair one gave 2 of every 20): a window a busy machine starved of turns
      // held a single send, which no split shares ([[2,18],[2,18],[0,1],[4,4]] beside 5 test runs).
      const after = counts.slice(2); // a window with no send is a hole, which reduce passes over
      const few = after.reduce((sum, window) => sum + window[0]!, 0);
      const many = after.reduce((sum, window) => sum + window[1]!, 0);
      ok(Math.min(few, many) >= (few + many) / 4, JSON.stringify(counts));
    } finally {
      for (const limiter of fleet) await limiter[Symbol.asyncDispose]();
      client.close();
    }
  },
);

redisTest(
  "a fleet on a Redis that fails over to one whose clock is 30 s behind goes on sending: a process's last grant, dated on the old clock, spaces nothing (attack r209a F1: nothing granted while the clock was behind)",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    // The scripts read Redis's TIME shifted by `behind`: a failover to a host whose clock is behind.
    let behind = 0;
    const shifted = (script: string) => {
      const clock = "local time = redis.call('TIME')";
      if (!script.includes(clock)) throw new Error("the script reads no clock");
      return script.replace(
        clock,
        `${clock}; time = {tostring(tonumber(time[1]) - ${behind}), time[2]}`,
      );
    };
    const command = (args: string[]) =>
      args[0] === "EVALSHA"
        ? Promise.reject(new Error("NOSCRIPT: read the source"))
        : client.command(
          args[0] === "EVAL"
            ? [args[0], shifted(args[1]!), ...args.slice(2)]
            : args,
        );
    const options = {
      requests: 20,
      interval: 1000,
      reserve: 0,
      prefix: `failover:${crypto.randomUUID()}`,
      command,
    };
    const fleet = [0, 1, 2].map(() => createRedisRateLimiter(options));
    const start = Date.now(), end = start + 4000, failover = start + 1500;
    let after = 0;
    const caller = async (limiter: (typeof fleet)[number]) => {
      while (Date.now() < end) {
        const ticket = await limiter.take(undefined, "low");
        if (Date.now() >= failover && Date.now() < end) after++;
        await new Promise((answer) => setTimeout(answer, 10));
        limiter.answered(ticket);
      }
    };
    const failing = new Promise<void>((done) =>
      setTimeout(async () => {
        await client.command(["FLUSHALL"]);
        behind = 30;
        done();
      }, failover - start)
    );
    try {
      await Promise.all([
        failing,
        ...fleet.flatMap((limiter) =>
          Array.from({ length: 5 }, () => caller(limiter))
        ),
      ]);
      // 36 in those 2.5 s here, 26 before spacing (the window short after the flush), 0 with a spacing cut back.
      ok(after >= options.requests, `${after} sent after the failover`);
    } finally {
      for (const limiter of fleet) await limiter[Symbol.asyncDispose]();
      client.close();
    }
  },
);
