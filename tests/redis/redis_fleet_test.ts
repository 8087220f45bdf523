// A fleet of processes on Deno, Node and Bun, through the bundles (as in the
// runtime matrix), sharing one real redis-server: one token request for all.

import { equal, ok } from "node:assert/strict";
import {
  type FakePartnerApi,
  startFakePartnerApi,
} from "../../src/testing/mod.ts";
import { connectRedis, redisInstalled, startRedis } from "./_redis_server.ts";
import {
  barrier,
  fakeEnv,
  lineOf,
  runOnEveryRuntime,
  RUNTIME_NAMES,
  runtimeCommand,
  RUNTIMES,
  signalFile,
  startTogether,
  until,
} from "./_runtimes.ts";
import { processTest } from "../_processes.ts";

const PER_RUNTIME = 3;

interface FleetLine {
  runtime: string;
  token: string;
  second?: string;
}

/**
 * Runs PER_RUNTIME workers on each runtime from `start` (_worker.mjs);
 * returns what each printed. With `outage`, each waits after its first
 * token for the signal file, then gets a second one.
 */
function runFleet(
  port: number,
  api: FakePartnerApi,
  start: string,
  outage?: { key: string; signal: string },
): Promise<FleetLine[]> {
  const worker = [
    "tests/redis/fleet_worker.mjs",
    RUNTIMES,
    String(port),
    start,
    ...(outage === undefined ? [] : [outage.key, outage.signal]),
  ];
  return runOnEveryRuntime<FleetLine>(worker, fakeEnv(api), PER_RUNTIME);
}

const FLEET = PER_RUNTIME * RUNTIME_NAMES.length;

processTest({
  name: "a fleet on Deno, Node and Bun sharing Redis makes one token request",
  ignore: !redisInstalled,
  async fn() {
    await using redis = await startRedis();
    await using api = await startFakePartnerApi();
    const { key, start } = barrier();
    const fleet = runFleet(redis.port, api, start);
    await startTogether(redis.port, key, FLEET);
    const lines = await fleet;
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
    const { key, start } = barrier();
    const signal = signalFile();
    try {
      const fleet = runFleet(redis.port, api, start, { key, signal });
      await startTogether(redis.port, key, FLEET);
      // Once every process holds its first token, Redis goes away.
      const admin = await connectRedis(redis.port);
      await until(async () =>
        Number(await admin.command(["GET", `${key}:tokens`])) >= FLEET
      );
      admin.close();
      await redis.kill();
      await Deno.writeTextFile(signal, "Redis is gone");
      const lines = await fleet;
      ok(lines.every((line) => line.second !== undefined));
      console.log(
        `${lines.length} processes, Redis killed mid-run: ${api.tokenRequests} token requests`,
      );
      ok(
        api.tokenRequests <= 1 + lines.length,
        `${api.tokenRequests} token requests for ${lines.length} processes`,
      );
    } finally {
      await Deno.remove(signal).catch(() => {});
    }
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
