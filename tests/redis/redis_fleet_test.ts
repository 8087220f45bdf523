// A fleet of processes on Deno, Node and Bun, through the bundles (as in the
// runtime matrix), sharing one real redis-server: one token request for all.

import { equal, ok } from "node:assert/strict";
import {
  type FakePartnerApi,
  startFakePartnerApi,
} from "../../src/testing/mod.ts";
import { redisInstalled, startRedis } from "./_redis_server.ts";
import {
  fakeEnv,
  lineOf,
  runOnEveryRuntime,
  RUNTIME_NAMES,
  runtimeCommand,
  RUNTIMES,
} from "./_runtimes.ts";
import { processTest } from "../_processes.ts";

const PER_RUNTIME = 3;

interface FleetLine {
  runtime: string;
  token: string;
  second?: string;
}

/** Runs PER_RUNTIME workers on each runtime; returns what each printed. */
function runFleet(
  port: number,
  api: FakePartnerApi,
  startAt: number,
  outageAt?: number,
): Promise<FleetLine[]> {
  const worker = [
    "tests/redis/fleet_worker.mjs",
    RUNTIMES,
    String(port),
    String(startAt),
    ...(outageAt === undefined ? [] : [String(outageAt)]),
  ];
  return runOnEveryRuntime<FleetLine>(worker, fakeEnv(api), PER_RUNTIME);
}

processTest({
  name: "a fleet on Deno, Node and Bun sharing Redis makes one token request",
  ignore: !redisInstalled,
  async fn() {
    await using redis = await startRedis();
    await using api = await startFakePartnerApi();
    const lines = await runFleet(redis.port, api, Date.now() + 2500);
    equal(new Set(lines.map((line) => line.token)).size, 1);
    equal(api.tokenRequests, 1, "one token request for the fleet");
  },
});

processTest({
  name:
    "Redis going away mid-run costs each process at most one token, and no process an unhandled rejection",
  ignore: !redisInstalled,
  async fn() {
    await using redis = await startRedis();
    await using api = await startFakePartnerApi();
    const startAt = Date.now() + 2500;
    const outageAt = startAt + 1000;
    const fleet = runFleet(redis.port, api, startAt, outageAt);
    await new Promise((done) => setTimeout(done, outageAt - Date.now()));
    await redis.kill();
    const lines = await fleet;
    ok(lines.every((line) => line.second !== undefined));
    console.log(
      `${lines.length} processes, Redis killed mid-run: ${api.tokenRequests} token requests`,
    );
    ok(
      api.tokenRequests <= 1 + lines.length,
      `${api.tokenRequests} token requests for ${lines.length} processes`,
    );
  },
});

processTest({
  name:
    "the 401 ledger is the fleet's: five processes on Deno, Node and Bun over one Redis store, one after another on a 401 path, spend at most 2 token requests",
  ignore: !redisInstalled,
  async fn() {
    await using redis = await startRedis();
    await using api = await startFakePartnerApi();
    const worker = ["tests/redis/ledger_worker.mjs", RUNTIMES, `${redis.port}`];
    for (let process = 0; process < 5; process++) {
      api.injectApiFaults({ kind: "status", status: 401 });
      const runtime = RUNTIME_NAMES[process % RUNTIME_NAMES.length]!;
      const output = await runtimeCommand(runtime, worker, fakeEnv(api))
        .output();
      const { status } = lineOf<{ status: number }>(output);
      equal(status, process === 0 ? 200 : 401, "renewed by the first only");
    }
    ok(api.tokenRequests <= 2, `${api.tokenRequests} token requests`);
  },
});
