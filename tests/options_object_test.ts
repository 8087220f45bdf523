// Every entry that takes an options object refuses one that is none (null, a
// string, an array, a Map or Set) as a TypeError naming it, before anything is sent:
// some crashed with the runtime's own TypeError, naming nothing, and
// `client.list(path, "x")` walked the whole list with the defaults.

import { equal, rejects, throws } from "node:assert/strict";
import {
  configFromEnv,
  createClient,
  createRateLimiter,
  paginate,
} from "../mod.ts";
import { createTokenProvider, requestToken } from "../src/token/mod.ts";
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
import {
  createJsonlSink,
  createPostgresSink,
  createSqliteSink,
  syncList,
} from "../src/sync/mod.ts";
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

Deno.test("an option no entry knows (a misspelt name) is refused by every entry that takes options, naming it and the nearest name, before anything is sent", async () => {
  // `{ maxitems: 3 }` crawled the whole list: every unknown key went unread, and its default ruled (r178b F4).
  using api = inProcessFake();
  const client = clientOf(api);
  using kv = await Deno.openKv(":memory:");
  const command = () => Promise.resolve(null);
  const { tokenUrl, audience } = api.environment;
  const fake = (more: object) => () => createFakePartnerService(more as never);
  const refusals: [string, string | undefined, () => unknown][] = [
    [
      "maxitems",
      "maxItems",
      () => client.list("organizations", { maxitems: 3 } as never),
    ],
    [
      "maxitems",
      "maxItems",
      () => client.pages("organizations", { maxitems: 3 } as never),
    ],
    [
      "maxitems",
      "maxItems",
      () => paginate(() => Promise.resolve([]), { maxitems: 3 } as never),
    ],
    ["timout", "timeout", () => clientOf(api, { timout: 5 } as never)],
    [
      "retry.retires",
      "retries",
      () => clientOf(api, { retry: { retires: 0 } } as never),
    ],
    [
      "refreshMargn",
      "refreshMargin",
      () =>
        createTokenProvider(
          {
            ...api.credentials,
            environment: api.environment,
            refreshMargn: 1,
          } as never,
        ),
    ],
    [
      "timout",
      "timeout",
      () =>
        requestToken(
          { ...api.credentials, tokenUrl, audience, timout: 1 } as never,
        ),
    ],
    [
      "reserv",
      "reserve",
      () => createRateLimiter({ requests: 9, interval: 9, reserv: 1 } as never),
    ],
    [
      "leaseDurtion",
      "leaseDuration",
      () => createKvTokenStore(kv, { leaseDurtion: 1 } as never),
    ],
    [
      "intervall",
      "interval",
      () => createKvRateLimiter(kv, { intervall: 1 } as never),
    ],
    [
      "maxwait",
      "maxWait",
      () => createRedisTokenStore({ command, maxwait: 1 } as never),
    ],
    [
      "request",
      "requests",
      () => createRedisRateLimiter({ command, request: 1 } as never),
    ],
    [
      "onNotise",
      "onNotice",
      () =>
        createFileTokenStore(
          {
            folder: ".test-tmp/unread",
            clientSecret: "s",
            onNotise: () => {},
          } as never,
        ),
    ],
    [
      "lockwait",
      "lockWait",
      () => createJsonlSink(".test-tmp/unread.jsonl", { lockwait: 1 } as never),
    ],
    [
      "lockwait",
      "lockWait",
      () => createSqliteSink(":memory:", { table: "t", lockwait: 1 } as never),
    ],
    [
      "lockwait",
      "lockWait",
      () =>
        createPostgresSink(
          { query: command, table: "t", lockwait: 1 } as never,
        ),
    ],
    ["tokenLifetme", "tokenLifetime", fake({ tokenLifetme: 1 })],
    ["quota.perhour", "perHour", fake({ quota: { perhour: 1 } })],
    [
      "items.organisations",
      "organizations",
      fake({ items: { organisations: 1 } }),
    ],
    [
      "credentials.clientid",
      "clientId",
      fake({ credentials: { clientid: "x" } }),
    ],
    [
      "apiRateLimit.request",
      "requests",
      fake({ apiRateLimit: { request: 1 } }),
    ],
    ["churn.appends", "append", fake({ churn: { appends: 1 } })],
    [
      "faults[0].retryAftr",
      "retryAfter",
      fake({ faults: [{ kind: "status", status: 503, retryAftr: 5 }] }),
    ],
    // Another kind's field goes unread too (review r181 R9).
    ["faults[0].ms", undefined, fake({ faults: [{ kind: "drop", ms: 5 }] })],
    // Review r180: inside createClient, the client's words; settingNames of either side.
    [
      "rateLimit.intervall",
      "interval",
      () =>
        clientOf(
          api,
          { rateLimit: { requests: 9, interval: 9, intervall: 1 } } as never,
        ),
    ],
    [
      "settingNames.tokenURL",
      "tokenUrl",
      () => clientOf(api, { settingNames: { tokenURL: "X" } } as never),
    ],
    [
      "settingNames.clientSecrett",
      "clientSecret",
      () =>
        createTokenProvider(
          {
            ...api.credentials,
            tokenUrl,
            audience,
            settingNames: { clientSecrett: "X" },
          } as never,
        ),
    ],
    ["metr", "meter", () => openTelemetry({ metr: {} } as never)],
    // Review r181: list's own names, a sink's misspelt key before what it leaves missing.
    [
      "querry",
      "query",
      () => client.list("organizations", { querry: {} } as never),
    ],
    [
      "tabel",
      "table",
      () => createSqliteSink(":memory:", { tabel: "t" } as never),
    ],
    [
      "querry",
      "query",
      () => createPostgresSink({ querry: command, table: "t" } as never),
    ],
    [
      "zzzzzzzzzz",
      undefined,
      () => paginate(() => Promise.resolve([]), { zzzzzzzzzz: 1 } as never),
    ],
  ];
  for (const [option, near, make] of refusals) {
    const rule = near === undefined
      ? "is no option"
      : `is no option; did you mean '${near}'?`;
    const refused = { name: "TypeError", option, rule };
    try {
      const made = make();
      if (made instanceof Promise) await rejects(made, refused);
      else throw new Error(`${option} was taken`);
    } catch (error) {
      throws(() => {
        throw error;
      }, refused);
    }
  }
  // Keys that cannot be read: a Proxy's trap threw its own error (review r180 F7).
  const unreadable = new Proxy({}, {
    ownKeys() {
      throw new Error("no keys");
    },
  });
  const walk = () => paginate(() => Promise.resolve([]), unreadable);
  throws(walk, { name: "TypeError", option: "options" });
  const sink = createJsonlSink(".test-tmp/unread.jsonl");
  const run = { id: "organizationID", sink, sweeep: 0 };
  const refused = { name: "TypeError", option: "sweeep" };
  await rejects(syncList(client, "organizations", run as never), refused);
  await rejects(startFakePartnerApi({ pciport: 1 } as never), {
    option: "pciport",
    rule: "is no option; did you mean 'pciPort'?",
  });
  // createTokenProvider takes an environment; requestToken its fields.
  const given = { ...api.credentials, environment: api.environment };
  await rejects(requestToken(given as never), { option: "environment" });
  // Keys known elsewhere are refused with what to write instead (review r181 R2, R6).
  const hinted =
    (option: string) => (error: { option: string; rule: string }) =>
      error.option === option && !/^is no option(;|$)/.test(error.rule);
  const once = { ...api.credentials, tokenUrl, audience, retry: false };
  await rejects(requestToken(once as never), hinted("retry"));
  const spread = { ...api.environment, ...api.credentials };
  throws(() => createClient(spread as never), hinted("baseUrl"));
  const full = { id: "organizationID", sink, full: true };
  const sync = syncList(client, "organizations", full as never);
  await rejects(sync, hinted("full"));
  equal(api.sent.length, 0);
});

Deno.test("an unknown option whose name is the client secret is refused without showing it, by every entry that knows the secret", async () => {
  // requestToken and the file store echoed 40 characters of it as the option's name.
  const clientSecret = "S3cr3t-abcdefghijklmnopqrstuvwxyz0123456789ABCDEF";
  using api = inProcessFake({ credentials: { clientSecret } });
  const client = clientOf(api);
  const { tokenUrl, audience } = api.environment;
  const sink = createJsonlSink(".test-tmp/unread.jsonl");
  const tokenProvider = createTokenProvider({
    ...api.credentials,
    environment: api.environment,
  });
  const keyed = (options: object) =>
    ({ ...options, [clientSecret]: 1 }) as never;
  const makes: (() => unknown)[] = [
    () => clientOf(api, keyed({})),
    // A provider's secret, not given as an option (review r180 F1).
    () => createClient(keyed({ environment: api.environment, tokenProvider })),
    () =>
      createClient({
        environment: api.environment,
        tokenProvider,
        retry: keyed({}),
      }),
    () =>
      createTokenProvider(keyed({ ...api.credentials, tokenUrl, audience })),
    () => requestToken(keyed({ ...api.credentials, tokenUrl, audience })),
    () => createFileTokenStore(keyed({ folder: ".test-tmp/x", clientSecret })),
    () => client.list("organizations", keyed({})),
    () =>
      syncList(client, "organizations", keyed({ id: "organizationID", sink })),
    // Another secret given beside the provider hid only itself (review r181 R4).
    () =>
      createClient(keyed({
        environment: api.environment,
        tokenProvider,
        clientSecret: "x",
      })),
  ];
  for (const make of makes) {
    const error = await Promise.try(make).then(() => {}, (e: Error) => e);
    equal(error?.constructor, TypeError);
    for (
      const said of [String(error), JSON.stringify(error), Deno.inspect(error)]
    ) {
      equal(said.includes(clientSecret.slice(0, 12)), false, said);
    }
  }
  equal(api.sent.length, 0);
});
