// A fleet of processes on Deno, Node and Bun, through the bundles (as in the
// runtime matrix), sharing one rate limit on one real redis-server, against
// the fake's own limit (no Retry-After): no 429, and never more than the
// limit in a window by the fake's count. With Redis killed mid-run: no
// crash, no unhandled rejection, every process still sending paces alone,
// and no more than one window's worth past the limit. With Redis gone
// before the processes start: each paces alone and exits.
// Each phase starts on an event (every worker at the barrier, half the
// requests arrived), never on a guess of how long start-up takes; how near
// the floor a fleet ends is fleet_rate_bench.ts's measure.

import { equal, ok } from "node:assert/strict";
import { redisTest, startRedis } from "./_redis_server.ts";
import { signalFile, until } from "./_runtimes.ts";
import { EACH, FLEET, LIMIT, limitedFake, runRateFleet } from "./_fleet.ts";
import { checkPacedFleet } from "../_windows.ts";

redisTest(
  "6 processes on Deno, Node and Bun share one Redis limit: no 429, never more than the limit in a window",
  async () => {
    await using redis = await startRedis();
    const { api, arrivals } = await limitedFake();
    await using _api = api;
    // The default time limit of a command: a busy machine is no outage.
    const lines = await runRateFleet(redis.port, api);
    checkPacedFleet({
      what: `${lines.length} processes on Redis`,
      arrivals,
      sent: FLEET * EACH,
      limit: LIMIT,
    });
    ok(lines.every((line) => line.degraded === 0));
  },
);

redisTest(
  "Redis killed mid-run: every process finishes, those still sending pace alone, no crash, no unhandled rejection, no more than a window's worth past the limit",
  async () => {
    await using redis = await startRedis();
    const { api, arrivals } = await limitedFake();
    await using _api = api;
    const signal = signalFile();
    try {
      const lines = await runRateFleet(redis.port, api, {
        commandTimeout: 300,
        signal,
        async duringRun() {
          // Mid-run by count: half the fleet's requests have arrived, so
          // every process knows its share, and most have requests left.
          await until(() => arrivals.length >= FLEET * EACH / 2);
          await redis.kill();
          await Deno.writeTextFile(signal, "Redis is gone");
        },
      });
      const refused = arrivals.filter(({ status }) => status === 429);
      const accepted = arrivals.filter(({ status }) => status !== 429);
      console.log(
        `Redis killed mid-run: ${refused.length} x 429; (requests after the kill, rate.degraded) by process: ${
          lines.map((line) =>
            `${line.runtime} ${line.afterSignal}, ${line.degraded}`
          ).join("; ")
        }`,
      );
      equal(accepted.length, FLEET * EACH, "every request answered");
      for (const line of lines) {
        equal(line.statuses["200"], EACH, `${line.runtime}: all answered`);
        // A take after the kill meets a Redis that is gone: said once. A
        // command slower than 300 ms before it (a busy machine) is a fall
        // too, said with its restoring: each fall is said once.
        const falls = line.restored + 1;
        if (line.afterSignal > 0) {
          equal(
            line.degraded,
            falls,
            `${line.runtime}: paced alone, said once`,
          );
        } else ok(line.degraded <= falls, `${line.runtime}: said once at most`);
      }
      ok(lines.some((line) => line.afterSignal > 0), "killed mid-run");
      // Each paces alone at its share: past the limit goes one window's
      // worth at most (the fleet's sends before the kill, and the first
      // alone), by the fake's count.
      ok(refused.length <= LIMIT.requests, `${refused.length} x 429`);
    } finally {
      await Deno.remove(signal).catch(() => {});
    }
  },
);

redisTest(
  "Redis gone before the processes connect: each on Deno, Node (ioredis) and Bun (node-redis) paces alone, says so once and exits",
  async () => {
    const redis = await startRedis();
    await redis.kill(); // its port now refuses every connection
    const { api, arrivals } = await limitedFake();
    await using _api = api;
    // One each, 5 requests: 15 in all, within one window of the limit.
    const lines = await runRateFleet(redis.port, api, {
      together: false,
      perRuntime: 1,
      each: 5,
      commandTimeout: 300,
    });
    for (const line of lines) {
      equal(line.statuses["200"], 5, `${line.runtime}: all answered`);
      equal(line.degraded, 1, `${line.runtime}: paced alone, said once`);
    }
    equal(arrivals.length, 15);
  },
);
