// A fleet of processes on Deno, Node and Bun, through the bundles (as in the
// runtime matrix), sharing one rate limit on one real redis-server, against
// the fake's own limit (no Retry-After): no 429, and the fleet finishes near
// the limit's floor. With Redis killed mid-run: no crash, no unhandled
// rejection, and no burst past the limit beyond one window.

import { equal, ok } from "node:assert/strict";
import {
  type FakePartnerApi,
  startFakePartnerApi,
} from "../../src/testing/mod.ts";
import { redisInstalled, startRedis } from "./_redis_server.ts";
import { fakeEnv, runOnEveryRuntime, RUNTIMES } from "./_runtimes.ts";
import { checkPacedFleet, mostInAnyWindow } from "../_windows.ts";
import { processTest } from "../_processes.ts";

const PER_RUNTIME = 2;
/** The service's 900 per 5 minutes, scaled down. */
const LIMIT = { requests: 40, interval: 2000 };
const EACH = 20;

interface WorkerLine {
  runtime: string;
  statuses: Record<string, number>;
  degraded: number;
  endAt: number;
}

/** The fake, counting what arrives at its API. */
async function limitedFake() {
  const arrivals: { at: number; status: number }[] = [];
  const api = await startFakePartnerApi({
    apiRateLimit: LIMIT,
    onRequest: ({ path, status }) => {
      if (path.startsWith("/api/")) arrivals.push({ at: Date.now(), status });
    },
  });
  return { api, arrivals };
}

/** Runs PER_RUNTIME workers on each runtime; returns what each printed. */
function runFleet(port: number, api: FakePartnerApi, startAt: number) {
  const env = {
    ...fakeEnv(api),
    PARTNER_API_RATE_REQUESTS: String(LIMIT.requests),
    PARTNER_API_RATE_INTERVAL: String(LIMIT.interval),
    PARTNER_API_RATE_PREFIX: `fleet:${crypto.randomUUID()}`,
  };
  const worker = [
    "tests/redis/rate_worker.mjs",
    RUNTIMES,
    String(port),
    String(startAt),
    String(EACH),
  ];
  return runOnEveryRuntime<WorkerLine>(worker, env, PER_RUNTIME);
}

processTest({
  name:
    "6 processes on Deno, Node and Bun share one Redis limit: no 429, within 1.10x the floor",
  ignore: !redisInstalled,
  async fn() {
    await using redis = await startRedis();
    const { api, arrivals } = await limitedFake();
    await using _api = api;
    const startAt = Date.now() + 3000;
    const lines = await runFleet(redis.port, api, startAt);
    checkPacedFleet({
      what: `${lines.length} processes on Redis`,
      arrivals,
      sent: 3 * PER_RUNTIME * EACH,
      elapsed: Math.max(...lines.map((line) => line.endAt)) - startAt,
      limit: LIMIT,
    });
    ok(lines.every((line) => line.degraded === 0));
  },
});

processTest({
  name:
    "Redis killed mid-run: every process finishes alone at its share, no crash, no unhandled rejection, no burst beyond one window",
  ignore: !redisInstalled,
  async fn() {
    await using redis = await startRedis();
    const { api, arrivals } = await limitedFake();
    await using _api = api;
    const startAt = Date.now() + 3000;
    const fleet = runFleet(redis.port, api, startAt);
    const killAt = startAt + LIMIT.interval + LIMIT.interval / 2;
    await new Promise((done) => setTimeout(done, killAt - Date.now()));
    await redis.kill();
    const lines = await fleet;
    const refused = arrivals.filter(({ status }) => status === 429);
    const accepted = arrivals.filter(({ status }) => status !== 429);
    console.log(
      `Redis killed mid-run: ${refused.length} x 429, most in a window ${
        mostInAnyWindow(
          arrivals.map(({ at }) => at),
          LIMIT.interval,
        )
      }, degraded ${
        lines.map((line) =>
          `${line.runtime}:${line.degraded}:${line.endAt - killAt}`
        )
      }`,
    );
    equal(accepted.length, 3 * PER_RUNTIME * EACH, "every request answered");
    // (A process may have sent its last request just before the kill.)
    ok(
      lines.filter((line) => line.endAt > killAt + 1000)
        .every((line) => line.degraded >= 1),
      "each process still sending said it paced alone",
    );
    // Whatever went past the limit went within one window of the kill.
    ok(refused.length <= LIMIT.requests);
    ok(refused.every(({ at }) => at < killAt + LIMIT.interval));
  },
});
