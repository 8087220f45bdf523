// Issue 38 on a real redis-server, with fleets of processes on Deno, Node
// (ioredis) and Bun (node-redis) through the bundles, against the fake's
// own limit (no Retry-After): what the limiter's keys hold is never trusted
// past its rules, and a restart is not a reset.
//
// - keys of another type, and values that do not parse, are replaced in the
//   same script: 0 x 429, and no process paces alone (was 120 x 429 with
//   the window key a string, every process alone at the whole limit);
// - a block 300 years ahead and sends counted from 10 days ahead are cut
//   back: every request is sent (was: none, until killed at the deadline);
// - Redis restarted mid-crawl, empty: 0 x 429 (was 2-12), and each process
//   that met the fall says so and says when it is back.

import { equal, ok } from "node:assert/strict";
import {
  allowScripts,
  connectRedis,
  redisTest,
  startRedis,
} from "./_redis_server.ts";
import { until } from "./_runtimes.ts";
import { EACH, FLEET, LIMIT, limitedFake, runRateFleet } from "./_fleet.ts";
import { checkPacedFleet } from "../_windows.ts";
import { createRedisRateLimiter } from "../../src/store/redis.ts";

/** The limiter's keys under `prefix`, as the scripts name them. */
function keysOf(prefix: string) {
  const key = (name: string) => `${prefix}:{rate}:${name}`;
  return {
    window: key("window"),
    line: key("line"),
    places: key("places"),
    holders: key("holders"),
    turns: key("turns"),
    block: key("block"),
    epoch: key("epoch"),
  };
}

/** Plants `commands` before the fleet starts. */
async function plant(port: number, commands: string[][]): Promise<void> {
  const admin = await connectRedis(port);
  try {
    for (const command of commands) await admin.command(command);
  } finally {
    admin.close();
  }
}

redisTest(
  "poisoned keys: a limiter key of another type, or a value that does not parse, is replaced in the same script: 6 processes on Deno, Node and Bun meet 0 x 429 and none paces alone",
  async () => {
    await using redis = await startRedis();
    const poisons: Record<
      string,
      (keys: ReturnType<typeof keysOf>) => string[][]
    > = {
      "keys of another type": (keys) => [
        ["SET", keys.window, "not a sorted set"],
        ["HSET", keys.line, "a", "1"],
        ["SET", keys.places, "soon"],
        ["RPUSH", keys.holders, "x"],
        ["SADD", keys.turns, "x"],
        ["HSET", keys.block, "a", "1"],
        ["SET", keys.epoch, "x"],
      ],
      "values that do not parse": (keys) => [
        ["ZADD", keys.line, "1", "ghost"],
        ["HSET", keys.places, "ghost", "soon"],
        ["SET", keys.turns, "many"],
        ["SET", keys.block, "soon"],
        ["HSET", keys.epoch, "id", "x".repeat(100)],
      ],
    };
    for (const [what, poison] of Object.entries(poisons)) {
      // A fake of its own: the last run's window is not this one's.
      const { api, arrivals } = await limitedFake();
      await using _api = api;
      const prefix = `poisoned:${crypto.randomUUID()}`;
      await plant(redis.port, poison(keysOf(prefix)));
      const lines = await runRateFleet(redis.port, api, { prefix });
      checkPacedFleet({
        what: `${FLEET} processes on Redis, ${what}`,
        arrivals,
        sent: FLEET * EACH,
        limit: LIMIT,
      });
      for (const line of lines) {
        equal(line.degraded, 0, `${line.runtime} ${what}`);
      }
    }
  },
);

redisTest(
  "far blocks: a block 300 years ahead and sends counted from 10 days ahead are cut back to what a take writes: every process on Deno, Node and Bun sends all its requests, 0 x 429",
  async () => {
    await using redis = await startRedis();
    const { api, arrivals } = await limitedFake();
    await using _api = api;
    const prefix = `far:${crypto.randomUUID()}`;
    const keys = keysOf(prefix);
    const day = 86_400_000;
    const now = Date.now();
    await plant(redis.port, [
      ["SET", keys.block, String(now + 300 * 365 * day)],
      ["ZADD", keys.window, String(now + 10 * day), "ghost:1"],
      ["ZADD", keys.window, String(now + 10 * day), "ghost:2"],
    ]);
    const lines = await runRateFleet(redis.port, api, { prefix });
    const refused = arrivals.filter(({ status }) => status === 429).length;
    equal(refused, 0, "no 429");
    for (const line of lines) {
      equal(line.statuses["200"], EACH, `${line.runtime}: all sent`);
    }
    const admin = await connectRedis(redis.port);
    const [seconds] = await admin.command(["TIME"]) as string[];
    const block = Number(await admin.command(["GET", keys.block]) ?? 0);
    admin.close();
    // Never further than one slot's share of the interval from a take.
    ok(
      block <= Number(seconds) * 1000 + 1000 + LIMIT.interval / LIMIT.requests,
    );
  },
);

redisTest(
  "a restart is not a reset: Redis restarted empty mid-crawl, 6 processes on Deno, Node and Bun meet 0 x 429, and each one that met the fall says rate.degraded, then rate.restored once it takes from Redis again",
  async () => {
    await using redis = await startRedis();
    const { api, arrivals } = await limitedFake();
    await using _api = api;
    const prefix = `restart:${crypto.randomUUID()}`;
    const lines = await runRateFleet(redis.port, api, {
      prefix,
      async duringRun() {
        // Mid-run by count: every process has sends in the window.
        await until(() => arrivals.length >= FLEET * EACH / 2);
        await redis.restart();
      },
    });
    checkPacedFleet({
      what: `${FLEET} processes on Redis restarted mid-crawl`,
      arrivals,
      sent: FLEET * EACH,
      limit: LIMIT,
    });
    console.log(
      `(rate.degraded, rate.restored) by process: ${
        lines.map((line) =>
          `${line.runtime} ${line.degraded}, ${line.restored}`
        )
          .join("; ")
      }`,
    );
    ok(lines.some((line) => line.degraded > 0), "the fall was met");
    ok(lines.some((line) => line.restored > 0), "the fleet came back");
    // A process goes back to Redis on a take after its pause: one whose
    // last sends fell within the pause ends alone, with one fall unanswered.
    for (const line of lines) {
      const unanswered = line.degraded - line.restored;
      ok(
        unanswered === 0 || unanswered === 1,
        `${line.runtime}: back each time, but perhaps the last`,
      );
    }
  },
);

redisTest(
  "unusable shared state: over a Redis that answers but refuses the scripts, a limiter paces at half the limit before it ever knew its share, and at its last known share after, never the whole limit",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    const prefix = `refused:${crypto.randomUUID()}`;
    /** A process's limiter; `fell` resolves when it says it paces alone. */
    const limiter = () => {
      let fall: () => void;
      const fell = new Promise<void>((resolve) => fall = resolve);
      const made = createRedisRateLimiter({
        command: (args) => client.command(args),
        prefix,
        requests: 12,
        interval: 3_600_000, // no window passes while the test runs
        onEvent: (event) => event.type === "rate.degraded" && fall(),
      });
      return Object.assign(made, { fell });
    };
    /** Slots granted once it paces alone, the rest left waiting (then aborted). */
    const grantedAlone = async (rateLimit: ReturnType<typeof limiter>) => {
      const leave = new AbortController();
      let granted = 0;
      const takes = Array.from(
        { length: 12 },
        () =>
          Promise.resolve(rateLimit.take(leave.signal)).then((ticket) => {
            granted++;
            rateLimit.answered(ticket);
          }, () => {}),
      );
      await rateLimit.fell;
      // Alone, it grants what its share allows in the same round.
      await new Promise((resolve) => setTimeout(resolve, 0));
      leave.abort();
      await Promise.all(takes);
      return granted;
    };
    // Three processes took from the window: each knows its share is 4.
    const fleet = [limiter(), limiter(), limiter()];
    for (const made of fleet) made.answered(await made.take());
    for (const made of fleet) made.answered(await made.take());
    await allowScripts(client, false);
    const knew = await grantedAlone(fleet[0]!);
    const fresh = limiter();
    const never = await grantedAlone(fresh);
    // Its share, 4, of which it sent 2; half the limit, 6.
    equal(knew, 2, "the last known share");
    equal(never, 6, "half the limit, never the whole");
    await allowScripts(client, true);
    for (const made of [...fleet, fresh]) await made[Symbol.asyncDispose]();
    client.close();
  },
);
