// A fleet of processes on Deno, Node and Bun, through the bundles (as in the
// runtime matrix), sharing one real redis-server: one token request for all.

import { deepStrictEqual, equal } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { redisInstalled, startRedis } from "./_redis_server.ts";

const RUNTIMES = ".test-tmp/runtimes";
const BUN = `${RUNTIMES}/node_modules/bun/bin/bun.exe`;
const PER_RUNTIME = 3;

Deno.test({
  name: "a fleet on Deno, Node and Bun sharing Redis makes one token request",
  ignore: !redisInstalled,
  async fn() {
    await using redis = await startRedis();
    await using api = await startFakePartnerApi();
    const env = {
      PARTNER_API_TOKEN_URL: api.environment.tokenUrl.href,
      PARTNER_API_AUDIENCE: api.environment.audience,
      PARTNER_API_CLIENT_ID: api.credentials.clientId,
      PARTNER_API_CLIENT_SECRET: api.credentials.clientSecret,
    };
    const startAt = String(Date.now() + 2500);
    const worker = [
      "tests/redis/fleet_worker.mjs",
      RUNTIMES,
      String(redis.port),
      startAt,
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
    const children = Object.values(commands).flatMap(([program, args]) =>
      Array.from({ length: PER_RUNTIME }, () =>
        new Deno.Command(program, {
          args: [...args],
          env,
          stdout: "piped",
          stderr: "piped",
        }).output())
    );
    const results = await Promise.all(children);
    const lines = results.map(({ code, stdout, stderr }) => {
      const text = new TextDecoder().decode(stdout).trim();
      equal(code, 0, new TextDecoder().decode(stderr));
      return JSON.parse(text) as { runtime: string; token: string };
    });
    deepStrictEqual(
      lines.map((line) => line.runtime).sort(),
      Object.keys(commands).flatMap((runtime) =>
        Array(PER_RUNTIME).fill(runtime)
      ).sort(),
    );
    equal(new Set(lines.map((line) => line.token)).size, 1);
    equal(api.tokenRequests, 1, "one token request for the fleet");
  },
});
