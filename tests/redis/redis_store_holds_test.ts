// Issue 38, the token store's open items on a real redis-server, with
// processes on Deno, Node (ioredis) and Bun (node-redis) through the
// bundles:
//
// - a Redis that refuses EVAL counts as failing for the scripts, and the
//   fleet keeps its lease with plain commands: 6 processes spend one token
//   (was 6: each counted the store as failing and asked alone);
// - a record over 64 KiB is a broken record, never read whole: no reply
//   any process receives is larger (was the whole value, 8 MB a read);
// - a sealed record carries a version: a process that saw a newer one
//   refuses a replayed older copy instead of serving its token again.

import { equal, notEqual, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import {
  allowScripts,
  connectRedis,
  redisTest,
  startRedis,
} from "./_redis_server.ts";
import {
  fakeEnv,
  lineOf,
  RUNTIME_NAMES,
  runtimeCommand,
  RUNTIMES,
  signalFile,
  until,
} from "./_runtimes.ts";
import { runTogether } from "./_fleet.ts";
import { keysOf } from "./_keys.ts";
import { createRedisTokenStore } from "../../src/store/redis.ts";
import { createTokenProvider } from "../../src/token/mod.ts";

interface TokenLine {
  runtime: string;
  token: string;
  largest: number;
}

/** 2 processes on each runtime (6 in all) get a token together. */
function tokenFleet(port: number, env: Record<string, string>) {
  const worker = (start: string) => [
    "tests/redis/store_worker.mjs",
    RUNTIMES,
    String(port),
    "token",
    start,
  ];
  return runTogether<TokenLine>(port, worker, env, 2);
}

redisTest(
  "EVAL refused: over a Redis whose ACL refuses scripts, 6 processes on Deno, Node and Bun spend one token between them, the lease kept with plain commands",
  async () => {
    await using redis = await startRedis();
    await using api = await startFakePartnerApi();
    const admin = await connectRedis(redis.port);
    await allowScripts(admin, false);
    const refused = await admin.command(["EVAL", "return 1", "0"])
      .then(() => false, (error) => /NOPERM/.test(String(error)));
    admin.close();
    ok(refused, "this Redis refuses EVAL");
    const lines = await tokenFleet(redis.port, fakeEnv(api));
    equal(api.tokenRequests, 1, "one token for the fleet");
    equal(new Set(lines.map((line) => line.token)).size, 1);
  },
);

redisTest(
  "a record over 64 KiB is a broken record, not read whole: 6 processes on Deno, Node and Bun over an 8 MB value receive no reply over 64 KiB, replace it, and spend one token",
  async () => {
    await using redis = await startRedis();
    await using api = await startFakePartnerApi();
    const { record } = await keysOf(api);
    const admin = await connectRedis(redis.port);
    await admin.command(["SET", record, "x".repeat(8 * 1024 * 1024)]);
    const lines = await tokenFleet(redis.port, fakeEnv(api));
    const stored = Number(await admin.command(["STRLEN", record]));
    admin.close();
    for (const line of lines) {
      ok(
        line.largest <= 65_537,
        `${line.runtime}: a reply of ${line.largest} bytes`,
      );
    }
    equal(api.tokenRequests, 1, "one token for the fleet");
    ok(stored <= 65_536, "the broken record was replaced");
  },
);

redisTest(
  "a rolled-back sealed record is refused: after the fleet renewed a token, a replayed copy of the older record is not served again by a process of Deno, Node or Bun that saw the newer one",
  async () => {
    await using redis = await startRedis();
    for (const runtime of RUNTIME_NAMES) {
      await using api = await startFakePartnerApi();
      const { record } = await keysOf(api);
      const admin = await connectRedis(redis.port);
      await admin.command(["DEL", record]);
      const key = `rollback:${crypto.randomUUID()}`;
      const [copied, replayed] = [signalFile(), signalFile()];
      try {
        const worker = runtimeCommand(runtime, [
          "tests/redis/store_worker.mjs",
          RUNTIMES,
          String(redis.port),
          "rollback",
          key,
          copied,
          replayed,
        ], fakeEnv(api)).output();
        await until(async () =>
          Number(await admin.command(["GET", `${key}:first`])) === 1
        );
        const older = await admin.command(["GET", record]) as string;
        const ttl = await admin.command(["PTTL", record]) as number;
        await Deno.writeTextFile(copied, "copied");
        await until(async () =>
          Number(await admin.command(["GET", `${key}:renewed`])) === 1
        );
        // The store rolled back: the older sealed record, replayed whole.
        await admin.command(["SET", record, older, "PX", String(ttl)]);
        await Deno.writeTextFile(replayed, "replayed");
        const line = lineOf<Record<string, string>>(await worker);
        notEqual(line.first, line.renewed, `${runtime}: renewed`);
        notEqual(line.after, line.first, `${runtime}: the older token again`);
      } finally {
        admin.close();
        await Deno.remove(copied).catch(() => {});
        await Deno.remove(replayed).catch(() => {});
      }
    }
  },
);

redisTest(
  "EVAL refused, in one Deno process: stores of their own (as processes) renew, publish and let go of the lease with plain commands, and a 401 renewal is one token for all",
  async () => {
    await using redis = await startRedis();
    // The token request outlasts the lease, so the lease must be renewed
    // with plain commands; the lease is long enough that a busy machine's
    // stall (CI) does not let it lapse between renewals (every 200 ms).
    await using api = await startFakePartnerApi({
      faults: [{ kind: "delay", ms: 1000 }],
    });
    const admin = await connectRedis(redis.port);
    await allowScripts(admin, false);
    const connections = await Promise.all(
      [0, 1, 2].map(() => connectRedis(redis.port)),
    );
    const providers = connections.map((connection) =>
      createTokenProvider({
        ...api.environment,
        ...api.credentials,
        store: createRedisTokenStore({
          command: (args) => connection.command(args),
          pollInterval: 5,
          leaseDuration: 600,
        }),
      })
    );
    const tokens = await Promise.all(providers.map((p) => p.getToken()));
    equal(new Set(tokens.map((token) => token.accessToken)).size, 1);
    equal(api.tokenRequests, 1);
    // A 401 in every process: the fleet's ledger renews once.
    await Promise.all(
      providers.map((p, i) => p.reportUnauthorized?.(tokens[i]!.accessToken)),
    );
    const renewed = await Promise.all(providers.map((p) => p.getToken()));
    ok(api.tokenRequests <= 3, `${api.tokenRequests} token requests`);
    ok(renewed.every((token) => api.isValidToken(token.accessToken)));
    for (const connection of [admin, ...connections]) connection.close();
  },
);
