// Every entry that takes an options object refuses one that is none (null, a
// string, an array, a Map or Set) as a TypeError naming it, before anything is sent:
// some crashed with the runtime's own TypeError, naming nothing, and
// `client.list(path, "x")` walked the whole list with the defaults.

import { equal, rejects, throws } from "node:assert/strict";
import { configFromEnv, paginate } from "../mod.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import {
  createFakePartnerService,
  startFakePartnerApi,
} from "../src/testing/mod.ts";
import { createFileTokenStore } from "../src/store/mod.ts";
import { createKvRateLimiter, createKvTokenStore } from "../src/store/kv.ts";
import {
  createRedisRateLimiter,
  createRedisTokenStore,
} from "../src/store/redis.ts";
import { createJsonlSink } from "../src/sync/mod.ts";
import { openTelemetry } from "../src/telemetry/otel.ts";
import { clientOf, inProcessFake } from "./_fast_setup.ts";

const NONE = [null, "x", [], new Map([["limit", 1]]), new Set(["limit"])];

Deno.test("an options object that is none (null, a string, an array, a Map or Set) is refused by every entry, naming it, before anything is sent", async () => {
  using api = inProcessFake();
  const client = clientOf(api);
  using kv = await Deno.openKv(":memory:");
  const refusals: [string, (bad: never) => unknown][] = [
    ["options", (bad) => client.list("organizations", bad)],
    ["options", (bad) => client.pages("organizations", bad)],
    ["options", (bad) => paginate(() => Promise.resolve([]), bad)],
    ["options", (bad) => createKvTokenStore(kv, bad)],
    ["options", (bad) => createKvRateLimiter(kv, bad)],
    ["options", (bad) => createRedisTokenStore(bad)],
    ["options", (bad) => createRedisRateLimiter(bad)],
    ["options", (bad) => createFileTokenStore(bad)],
    ["options", (bad) => createJsonlSink(".test-tmp/none.jsonl", bad)],
    ["options", (bad) => createFakePartnerService(bad)],
    ["env", (bad) => configFromEnv(bad)],
    ["options", (bad) => openTelemetry(bad)],
    [
      "environment",
      (bad) =>
        createTokenProvider({ ...api.credentials, environment: bad } as never),
    ],
  ];
  for (const [option, make] of refusals) {
    for (const bad of NONE) {
      throws(() => make(bad as never), { name: "TypeError", option });
    }
  }
  for (const bad of NONE) {
    await rejects(startFakePartnerApi(bad as never), {
      name: "TypeError",
      option: "options",
    });
  }
  equal(api.sent.length, 0);
});

Deno.test("an option value String cannot read (no prototype, a toString that throws) is refused as any wrong value, naming the option (the runtime's TypeError named none, or the toString's own error escaped)", () => {
  using api = inProcessFake();
  const unreadable = [Object.create(null), {
    toString() {
      throw new Error("unreadable");
    },
  }];
  for (const value of unreadable) {
    for (const option of ["priority", "timeout"]) {
      throws(() => clientOf(api, { [option]: value }), (error: unknown) => {
        equal((error as Error).constructor, TypeError);
        equal((error as { option?: string }).option, option);
        return true;
      });
    }
  }
});
