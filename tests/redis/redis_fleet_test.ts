// A fleet of processes on Deno, Node and Bun, through the bundles (as in the
// runtime matrix), sharing one real redis-server: one token request for all.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import {
  type FakePartnerApi,
  startFakePartnerApi,
} from "../../src/testing/mod.ts";
import { redisInstalled, startRedis } from "./_redis_server.ts";

const RUNTIMES = ".test-tmp/runtimes";
const BUN = `${RUNTIMES}/node_modules/bun/bin/bun.exe`;
const PER_RUNTIME = 3;

/** Runs PER_RUNTIME workers on each runtime; returns what each printed. */
async function runFleet(
  port: number,
  api: FakePartnerApi,
  startAt: number,
  outageAt?: number,
) {
  const env = {
    PARTNER_API_TOKEN_URL: api.environment.tokenUrl.href,
    PARTNER_API_AUDIENCE: api.environment.audience,
    PARTNER_API_CLIENT_ID: api.credentials.clientId,
    PARTNER_API_CLIENT_SECRET: api.credentials.clientSecret,
  };
  const worker = [
    "tests/redis/fleet_worker.mjs",
    RUNTIMES,
    String(port),
    String(startAt),
    ...(outageAt === undefined ? [] : [String(outageAt)]),
  ];
  const commands = {
    deno: ["deno", [
      "run",
      "--no-lock",
      "--allow-net=127.0.0.1",
      "--allow-env=PARTNER_API_*",
      `--allow-read=${RUNTIMES}`,
      ...worker,
    ]],
    node: ["node", worker],
    bun: [BUN, worker],
  } as const;
  const runs = Object.values(commands).flatMap(([program, args]) =>
    Array.from({ length: PER_RUNTIME }, () =>
      new Deno.Command(program, {
        args: [...args],
        env,
        stdout: "piped",
        stderr: "piped",
      }).output())
  );
  const results = await Promise.all(runs);
  const lines = results.map(({ code, stdout, stderr }) => {
    // Exit 0: no runtime ended on a rejection nobody handled.
    equal(code, 0, new TextDecoder().decode(stderr));
    return JSON.parse(new TextDecoder().decode(stdout).trim()) as {
      runtime: string;
      token: string;
      second?: string;
    };
  });
  deepStrictEqual(
    lines.map((line) => line.runtime).sort(),
    Object.keys(commands).flatMap((runtime) => Array(PER_RUNTIME).fill(runtime))
      .sort(),
  );
  return lines;
}

Deno.test({
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

Deno.test({
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

Deno.test({
  name:
    "the 401 ledger is the fleet's: five processes on Deno, Node and Bun over one Redis store, one after another on a 401 path, spend at most 2 token requests",
  ignore: !redisInstalled,
  async fn() {
    await using redis = await startRedis();
    await using api = await startFakePartnerApi();
    const env = {
      PARTNER_API_BASE_URL: api.environment.baseUrl.href,
      PARTNER_API_PCI_BASE_URL: api.environment.pciBaseUrl.href,
      PARTNER_API_TOKEN_URL: api.environment.tokenUrl.href,
      PARTNER_API_AUDIENCE: api.environment.audience,
      PARTNER_API_CLIENT_ID: api.credentials.clientId,
      PARTNER_API_CLIENT_SECRET: api.credentials.clientSecret,
    };
    const worker = ["tests/redis/ledger_worker.mjs", RUNTIMES, `${redis.port}`];
    const runs: [string, string[]][] = [
      ["deno", [
        "run",
        "--no-lock",
        "--allow-net=127.0.0.1",
        "--allow-env=PARTNER_API_*",
        `--allow-read=${RUNTIMES}`,
        ...worker,
      ]],
      ["node", worker],
      [BUN, worker],
    ];
    for (let process = 0; process < 5; process++) {
      api.injectApiFaults({ kind: "status", status: 401 });
      const [program, args] = runs[process % runs.length]!;
      const { code, stdout, stderr } = await new Deno.Command(program, {
        args,
        env,
        stdout: "piped",
        stderr: "piped",
      }).output();
      equal(code, 0, new TextDecoder().decode(stderr));
      const { status } = JSON.parse(new TextDecoder().decode(stdout));
      equal(status, process === 0 ? 200 : 401, "renewed by the first only");
    }
    ok(api.tokenRequests <= 2, `${api.tokenRequests} token requests`);
  },
});
