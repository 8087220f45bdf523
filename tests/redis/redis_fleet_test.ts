// A fleet of processes on Deno, Node and Bun, through the bundles (as in the
// runtime matrix), sharing one real redis-server: one token request for all.

import { equal, ok } from "node:assert/strict";
import {
  type FakePartnerApi,
  startFakePartnerApi,
} from "../../src/testing/mod.ts";
import { connectRedis, redisTest, startRedis } from "./_redis_server.ts";
import {
  fakeEnv,
  lineOf,
  RUNTIME_NAMES,
  runtimeCommand,
  RUNTIMES,
  signalFile,
  until,
} from "./_runtimes.ts";
import { type DuringRun, runTogether } from "./_fleet.ts";

const PER_RUNTIME = 3;
const FLEET = PER_RUNTIME * RUNTIME_NAMES.length;

interface FleetLine {
  runtime: string;
  token: string;
  second?: string;
}

/**
 * Runs PER_RUNTIME workers on each runtime together (_fleet.ts); returns
 * what each printed. With `signal`, each waits after its first token for
 * the signal file, then gets a second one.
 */
function runFleet(
  port: number,
  api: FakePartnerApi,
  { signal, duringRun }: { signal?: string; duringRun?: DuringRun } = {},
): Promise<FleetLine[]> {
  const worker = (start: string, key: string) => [
    "tests/redis/fleet_worker.mjs",
    RUNTIMES,
    String(port),
    start,
    ...(signal === undefined ? [] : [key, signal]),
  ];
  return runTogether(port, worker, fakeEnv(api), PER_RUNTIME, duringRun);
}

redisTest(
  "a fleet on Deno, Node and Bun sharing Redis makes one token request",
  async () => {
    await using redis = await startRedis();
    await using api = await startFakePartnerApi();
    const lines = await runFleet(redis.port, api);
    equal(new Set(lines.map((line) => line.token)).size, 1);
    equal(api.tokenRequests, 1, "one token request for the fleet");
  },
);

redisTest(
  "Redis going away mid-run costs each process at most one token, and no process an unhandled rejection",
  async () => {
    await using redis = await startRedis();
    await using api = await startFakePartnerApi();
    const signal = signalFile();
    try {
      const lines = await runFleet(redis.port, api, {
        signal,
        async duringRun(key) {
          // Once every process holds its first token, Redis goes away.
          const admin = await connectRedis(redis.port);
          await until(async () =>
            Number(await admin.command(["GET", `${key}:tokens`])) >= FLEET
          );
          admin.close();
          await redis.kill();
          await Deno.writeTextFile(signal, "Redis is gone");
        },
      });
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
);

redisTest(
  "the 401 ledger is the fleet's: five processes on Deno, Node and Bun over one Redis store, one after another on a 401 path, spend at most 2 token requests",
  async () => {
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
);
