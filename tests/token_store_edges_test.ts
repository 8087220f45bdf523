// Edges of the token core with a store, flights that never settle, and the
// token's own value (moved from token_edges_test.ts, which had grown past
// 400 lines). Time is driven, never waited for.

import { equal, notEqual, ok, rejects } from "node:assert/strict";
import { TokenRequestError } from "../src/core/errors.ts";
import { createTokenProvider, requestToken } from "../src/token/mod.ts";
import {
  type CoordinateOptions,
  createFileTokenStore,
  createMemoryTokenStore,
  type TokenRecord,
  type TokenStore,
} from "../src/store/mod.ts";
import { createKvTokenStore } from "../src/store/kv.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";
import { inProcessFake } from "./_fast_setup.ts";

const HOUR = 3_600_000;

Deno.test("a store never gives a token to a provider with another secret", async () => {
  await using api = await startFakePartnerApi();
  const store = createMemoryTokenStore();
  const right = {
    ...api.environment,
    ...api.credentials,
    store,
    retry: false as const,
  };
  await createTokenProvider(right).getToken();
  const wrong = createTokenProvider({
    ...right,
    clientSecret: "not-the-secret",
  });
  await rejects(wrong.getToken(), (error: unknown) => {
    ok(error instanceof TokenRequestError);
    equal(error.status, 401);
    return true;
  });
  equal(api.tokenRequests, 2, "the wrong secret had to ask, and was refused");
});

Deno.test("a quota snapshot read from a store keeps the time it was reported", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  const store = createMemoryTokenStore();
  const options = { ...api.environment, ...api.credentials, store, now: clock };
  const first = createTokenProvider(options);
  await first.getToken();
  const reportedAt = first.quota?.observedAt;
  equal(reportedAt, clock());
  clock.advance(HOUR / 2);
  const later = createTokenProvider(options);
  await later.getToken();
  equal(later.quota?.observedAt, reportedAt);
  equal(api.tokenRequests, 1);
});

Deno.test("the store is read twice per flight (before the request, and as its answer is stored over it by update()), not on every call during a failed refresh", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({
    now: clock,
    tokenLifetime: 3_600_000,
  });
  const memory = createMemoryTokenStore();
  let reads = 0;
  const store: TokenStore = {
    ...memory,
    get: (key) => (reads++, memory.get(key)),
    update: (key, change) => (reads++, memory.update!(key, change)),
  };
  const background: Promise<unknown>[] = [];
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    store,
    now: clock,
    retry: false,
    waitUntil: (promise) => background.push(promise),
  });
  const token = await provider.getToken();
  equal(reads, 2, "the cold start reads, and again as it stores the token");
  clock.set(token.expiresAt - 60_000);
  api.injectTokenFaults({ kind: "status", status: 503 });
  equal(await provider.getToken(), token);
  equal(background.length, 1, "the background refresh went to waitUntil");
  await Promise.all(background);
  equal(api.tokenRequests, 2);
  for (let i = 0; i < 50; i++) equal(await provider.getToken(), token);
  // The failure is stored over the record as it then stands: a token a 401 dropped meanwhile must not come back.
  equal(
    reads,
    4,
    "the refresh flight reads before and as it stores, none in the cooldown",
  );
  equal(background.length, 1, "no refresh during the cooldown");
});

Deno.test("invalidate() keeps a fresh token another process stored meanwhile", async () => {
  await using api = await startFakePartnerApi();
  const memory = createMemoryTokenStore();
  let key = "";
  let race: (() => Promise<void>) | undefined;
  const raceOnce = async () => {
    const run = race;
    race = undefined;
    await run?.();
  };
  // Another process stores its token at the first store access of invalidate.
  const store: TokenStore = {
    ...memory,
    get: async (k) => {
      const record = await memory.get(k);
      await raceOnce();
      return record;
    },
    update: async (k, change) => {
      key = k;
      await raceOnce();
      return await memory.update!(k, change);
    },
  };
  const a = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    store,
  });
  const stale = await a.getToken();
  const fresh = await requestToken({ ...api.environment, ...api.credentials });
  race = () => memory.set(key, { token: fresh });
  await a.invalidate(stale.accessToken);
  equal((await memory.get(key))?.token?.accessToken, fresh.accessToken);
  equal((await a.getToken()).accessToken, fresh.accessToken);
  equal(api.tokenRequests, 2, "the fresh token is used, not a third");
});

/** A store whose coordination hangs for good the first `hangs` times, like work a runtime dropped. */
function hangingStore(hangs: number): TokenStore & { calls: number } {
  const store = {
    ...createMemoryTokenStore(),
    calls: 0,
    coordinate(_key: string, { request }: CoordinateOptions) {
      return store.calls++ < hangs
        ? new Promise<TokenRecord>(() => {})
        : request();
    },
  };
  return store;
}

/**
 * A provider of the in-process fake, with no retries and a 1 s time limit,
 * over a store that hangs the first time: both.
 */
function overHangingStore(
  api: ReturnType<typeof inProcessFake>,
  extra: { now?: () => number },
) {
  const store = hangingStore(1);
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    fetch: api.fetch,
    store,
    ...extra,
    retry: false,
    timeout: 1_000,
  });
  return { store, provider };
}

Deno.test("a flight that never settles is given up on once its timeouts and retries are spent", async () => {
  await withFakeTimers(async (timers) => {
    // In process: no socket beside the fake timers.
    using api = inProcessFake();
    const { store, provider } = overHangingStore(api, {});
    const waiting = Promise.allSettled([
      provider.getToken(),
      provider.getToken(),
    ]);
    // A coordinating store may first wait for another process's attempt of
    // 1 s, then make its own, plus a minute of slack.
    await timers.tickAsync(62_000);
    for (const result of await waiting) {
      equal(result.status, "rejected");
      const error = (result as PromiseRejectedResult).reason;
      ok(error instanceof TokenRequestError);
      equal(error.reason, "timeout");
    }
    ok(api.service.isValidToken((await provider.getToken()).accessToken));
    equal(store.calls, 2);
    equal(api.service.tokenRequests, 1);
  });
});

Deno.test("a caller after a flight's deadline starts a new flight at once instead of joining", async () => {
  await withFakeTimers(async (timers) => {
    using api = inProcessFake();
    const clock = manualClock();
    const { store, provider } = overHangingStore(api, { now: clock });
    const trapped = provider.getToken().catch((error) => error);
    clock.advance(62_000); // by the provider's clock the flight is overdue
    const token = await provider.getToken();
    ok(api.service.isValidToken(token.accessToken));
    equal(store.calls, 2);
    await timers.tickAsync(62_000); // let the first caller's watchdog end it
    ok((await trapped) instanceof TokenRequestError);
  });
});

Deno.test("waitUntil receives each background refresh, and a throwing one changes nothing", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({
    now: clock,
    tokenLifetime: 600_000,
  });
  const handed: Promise<unknown>[] = [];
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    now: clock,
    waitUntil: (promise) => {
      handed.push(promise);
      throw new Error("this runtime refuses");
    },
  });
  const first = await provider.getToken();
  equal(handed.length, 0, "a cold start is awaited by its caller");
  clock.set(first.expiresAt - 30_000);
  equal(await provider.getToken(), first, "the old token while refreshing");
  equal(handed.length, 1);
  await handed[0];
  notEqual((await provider.getToken()).accessToken, first.accessToken);
  equal(api.tokenRequests, 2);
});

Deno.test("a store that serializes records with JSON.stringify keeps a usable token", async () => {
  await using api = await startFakePartnerApi();
  const texts = new Map<string, string>();
  const store: TokenStore = {
    get: (key) =>
      Promise.resolve(texts.has(key) ? JSON.parse(texts.get(key)!) : undefined),
    set: (key, record) =>
      Promise.resolve(void texts.set(key, JSON.stringify(record))),
  };
  const options = { ...api.environment, ...api.credentials, store };
  const first = await createTokenProvider(options).getToken();
  const again = await createTokenProvider(options).getToken();
  equal(again.accessToken, first.accessToken);
  equal(api.tokenRequests, 1);
  equal(
    JSON.stringify(again).includes(again.accessToken),
    false,
    "still redacted when handed out",
  );
  // A store written by a version that kept the placeholder holds no token.
  const [key] = texts.keys();
  texts.set(
    key!,
    JSON.stringify({ token: { ...JSON.parse(JSON.stringify(first)) } }),
  );
  ok(
    api.isValidToken(
      (await createTokenProvider(options).getToken()).accessToken,
    ),
  );
  equal(api.tokenRequests, 2);
});

Deno.test("a stored token whose quota holds entries that are no buckets is still used, with its quota unread (it was handed out with {} buckets)", async () => {
  await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
  const records = new Map<string, TokenRecord>();
  const store: TokenStore = {
    get: (key) => Promise.resolve(records.get(key)),
    set: (key, record) => Promise.resolve(void records.set(key, record)),
  };
  const options = { ...api.environment, ...api.credentials, store };
  const first = await createTokenProvider(options).getToken();
  ok(first.quota.length > 0);
  const [key, record] = [...records][0]!;
  for (const quota of [[null], [{}], [{ ...first.quota[0], limit: "10" }]]) {
    records.set(key!, {
      ...record,
      token: { ...record!.token!, quota } as never,
    });
    const token = await createTokenProvider(options).getToken();
    equal(token.accessToken, first.accessToken);
    equal(token.quota.length, 0);
  }
  equal(api.tokenRequests, 1);
});

Deno.test("a failure's cooldown in a store holds every process, however each sends its request (body format, client authentication): one kept per way let a fleet mixing them send 8 times as often in an outage", async () => {
  await using api = await startFakePartnerApi({
    faults: [{ kind: "status", status: 503 }],
  });
  const store = createMemoryTokenStore();
  const options = {
    ...api.environment,
    ...api.credentials,
    store,
    retry: false as const,
  };
  await rejects(createTokenProvider(options).getToken(), { status: 503 });
  for (const bodyFormat of ["json", "form"] as const) {
    for (const clientAuthentication of ["body", "basic"] as const) {
      const other = { ...options, bodyFormat, clientAuthentication };
      await rejects(createTokenProvider(other).getToken(), { status: 503 });
    }
  }
  equal(api.tokenRequests, 1);
});

Deno.test("a refusal that reports the quota carries it on the error, and the provider keeps it", async () => {
  await using api = await startFakePartnerApi();
  api.injectTokenFaults({
    kind: "status",
    status: 401,
    headers: { "Idp-Client-Quota-Limit": "b=per_hour;q=10;r=3;t=60" },
  });
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    retry: false,
  });
  await rejects(provider.getToken(), (error: unknown) => {
    ok(error instanceof TokenRequestError);
    equal(error.quota?.[0]?.remaining, 3);
    return true;
  });
  equal(provider.quota?.buckets[0]?.remaining, 3);
});

Deno.test("a token is built once: building it again gives the same object", async () => {
  const { issuedToken } = await import("../src/core/token_values.ts");
  const token = issuedToken({
    accessToken: "abc",
    tokenType: "Bearer",
    expiresIn: 60,
    expiresAt: 1,
    quota: [],
  });
  equal(issuedToken(token), token);
  await using api = await startFakePartnerApi();
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
  });
  equal(await provider.getToken(), await provider.getToken());
});

Deno.test("every store's coordinate publishes over the record as it stands once the request answers: a token a 401 dropped meanwhile stays dropped, and the later 401 renewal and quota block stay, after a success too (a failed refresh merged over the record read before brought the refused token back; a success lost the fleet's renewal)", async () => {
  await Deno.mkdir(".test-tmp", { recursive: true });
  const folder = await Deno.makeTempDir({ dir: ".test-tmp", prefix: "merge-" });
  using kv = await Deno.openKv(":memory:");
  const stores: [string, TokenStore][] = [
    ["memory", createMemoryTokenStore()],
    ["file", createFileTokenStore({ folder, clientSecret: "s3cret" })],
    ["kv", createKvTokenStore(kv)],
  ];
  const at = Date.now();
  const token = {
    accessToken: "refused-by-the-api",
    tokenType: "Bearer" as const,
    expiresIn: 3600,
    expiresAt: at + HOUR,
    quota: [],
  };
  const renewal = { at, expiresAt: token.expiresAt, token: "f" };
  const failure = {
    until: at + 60_000,
    failures: 1,
    reason: "status" as const,
    status: 503,
  };
  for (const [name, store] of stores) {
    await store.set("k", { token });
    const published = await store.coordinate!("k", {
      settled: () => false,
      request: async () => {
        // Another process's 401 drops the token while this request runs (a store without update: read, then set).
        const drop = (record?: TokenRecord) => {
          const { token: _refused, ...rest } = record ?? {};
          return { ...rest, renewal };
        };
        if (store.update) await store.update("k", drop);
        else await store.set("k", drop(await store.get("k")));
        return { failure };
      },
      signal: new AbortController().signal,
      requestBudget: 1_000,
    });
    equal(published.token, undefined, name);
    equal(published.renewal?.token, "f", name);
    equal((await store.get("k"))?.token, undefined, name);
    // A success, and a failure carrying the requester's own older renewal: the ledger keeps the later one.
    const answers: TokenRecord[] = [
      { token: { ...token, accessToken: "new" } },
      { failure, renewal: { ...renewal, at: 0 } },
    ];
    for (const answer of answers) {
      await store.set("k", { token });
      const written = await store.coordinate!("k", {
        settled: () => false,
        request: async () => {
          await store.set("k", { renewal });
          return answer;
        },
        signal: new AbortController().signal,
        requestBudget: 1_000,
      });
      equal(written.renewal?.at, at, name);
      equal((await store.get("k"))?.renewal?.at, at, name);
    }
    // Another process's 429 block stored meanwhile stays, past this one's failure.
    await store.set("k", { token });
    const blocked = await store.coordinate!("k", {
      settled: () => false,
      request: async () => {
        await store.set("k", { blockedUntil: at + 600_000 });
        return { failure };
      },
      signal: new AbortController().signal,
      requestBudget: 1_000,
    });
    equal(blocked.blockedUntil, at + 600_000, name);
  }
  await Deno.remove(folder, { recursive: true });
});

Deno.test("a memory store whose update() fails once the token request answered still stores the token (by set()): the next provider pays none", async () => {
  await using api = await startFakePartnerApi();
  const memory = createMemoryTokenStore();
  const store: TokenStore = {
    ...memory,
    update: () => Promise.reject(new Error("busy")),
  };
  const options = { ...api.environment, ...api.credentials, store };
  const first = await createTokenProvider(options).getToken();
  const second = await createTokenProvider(options).getToken();
  equal(second.accessToken, first.accessToken);
  equal(api.tokenRequests, 1);
});

Deno.test("a store that stops answering holds no caller, costs one token, and lets a 401's renewal settle: a Deno KV whose every call hangs, and a store of the caller's whose get, set and update hang (they were waited for the flight's whole budget and failed with no request sent, or for ever)", async () => {
  const never = new Promise<never>(() => {});
  using real = await Deno.openKv(":memory:");
  const stalled = {
    check: () => stalled,
    set: () => stalled,
    delete: () => stalled,
    commit: () => never,
  };
  const kv = new Proxy(real, {
    get: (target, name) =>
      name === "atomic"
        ? () => stalled
        : ["get", "getMany", "set", "delete"].includes(String(name))
        ? () => never
        : Reflect.get(target, name),
  });
  const silent: TokenStore = {
    get: () => never,
    set: () => never,
    update: () => never,
  };
  const realTimeout = globalThis.setTimeout;
  for (const store of [createKvTokenStore(kv), silent]) {
    await withFakeTimers(async (timers) => {
      using api = inProcessFake();
      const provider = createTokenProvider({
        ...api.environment,
        ...api.credentials,
        fetch: api.fetch,
        store,
        now: () => timers.now,
      });
      const settled = async <T>(work: Promise<T>) => {
        let done = false;
        work.finally(() => done = true).catch(() => {});
        while (!done && timers.now < 60_000) {
          await timers.tickAsync(250);
          // The key's derivation is real work (crypto), on no timer: let it run on a busy machine.
          await new Promise((resolve) => realTimeout(resolve, 5));
        }
        ok(done, "settled within a minute");
        return await work;
      };
      const token = await settled(provider.getToken());
      ok(api.service.isValidToken(token.accessToken));
      equal(
        await settled(provider.reportUnauthorized!(token.accessToken)),
        true,
      );
      equal(api.service.tokenRequests, 1);
    });
  }
});

Deno.test("a coordinate of the caller's that fails while its request runs hands out the token the request brings, typed failures stay typed, one that asks twice sends one request, and one that resolves with no usable record, without a request or before its request answered, gets the token of one request (a store error came out raw and the paid token was lost; a retried round paid twice; no record failed 'malformed', sending none)", async () => {
  const api = inProcessFake({ wire: 20 });
  using _ = api;
  const failing: TokenStore = {
    get: () => Promise.resolve(undefined),
    set: () => Promise.resolve(),
    coordinate: (_key, { request }) => {
      void request().catch(() => {});
      return Promise.reject(
        new Error("ECONNRESET: the lease's store went away"),
      );
    },
  };
  const twice: TokenStore = {
    get: () => Promise.resolve(undefined),
    set: () => Promise.resolve(),
    coordinate: async (_key, { request }) => {
      await request();
      return await request(); // a round retried after a failed write
    },
  };
  const resolving = (answer: unknown, background: boolean): TokenStore => ({
    get: () => Promise.resolve(undefined),
    set: () => Promise.resolve(),
    coordinate: (_key, { request }) => {
      if (background) void request().catch(() => {});
      return Promise.resolve(answer as never);
    },
  });
  const broken = [
    resolving("garbage", false),
    resolving({}, false),
    resolving(undefined, false),
    resolving({}, true),
  ];
  for (const store of [failing, twice, ...broken]) {
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      store,
    });
    const before = api.service.tokenRequests;
    const token = await provider.getToken();
    ok(api.service.isValidToken(token.accessToken));
    equal(await provider.getToken(), token);
    equal(api.service.tokenRequests - before, 1);
  }
  // The request's own failure, typed, not the store's.
  api.service.injectTokenFaults({ kind: "status", status: 401 });
  const refused = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    fetch: api.fetch,
    store: failing,
    retry: false,
  });
  await rejects(refused.getToken(), TokenRequestError);
});

Deno.test("a quota reading a store holds dated past the fleet's clock slack (a member an hour ahead) is not believed: it hid every later real reading", async () => {
  await using api = await startFakePartnerApi({ quota: { perHour: 100 } });
  const store = createMemoryTokenStore();
  const ahead = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    store,
    now: () => Date.now() + 3_600_000,
  });
  await ahead.getToken(); // its reading, dated an hour ahead
  const heard: number[] = [];
  const own = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    store,
    onQuota: (quota) => void heard.push(quota.buckets[0]!.remaining),
  });
  const token = await own.getToken();
  await own.invalidate(token.accessToken);
  await own.getToken(); // its own request: the service's latest reading
  const left = 100 - api.tokenRequests;
  equal(own.quota?.buckets[0]?.remaining, left);
  equal(heard.at(-1), left);
});

Deno.test("a KV store whose reads fail twice once the lease holder's token request answered still stores the token it paid for (the holder's publish reads the record first since 4966e5da)", async () => {
  using real = await Deno.openKv(":memory:");
  let failing = 0;
  const kv = new Proxy(real, {
    get: (target, name) => {
      const value = Reflect.get(target, name);
      if (name !== "get") return value.bind(target);
      return (...args: Parameters<Deno.Kv["get"]>) =>
        failing-- > 0 ? Promise.reject(new Error("busy")) : target.get(...args);
    },
  });
  const store = createKvTokenStore(kv);
  const token = {
    accessToken: "paid-for-token-0123456789",
    tokenType: "Bearer" as const,
    expiresIn: 3600,
    quota: [],
    expiresAt: Date.now() + 3_600_000,
  };
  const out = await store.coordinate!("k", {
    settled: (record) => record.token !== undefined,
    request: () => {
      failing = 2;
      return Promise.resolve({ token });
    },
    signal: new AbortController().signal,
    requestBudget: 1_000,
  });
  equal(out.token?.accessToken, token.accessToken);
  equal((await store.get("k"))?.token?.accessToken, token.accessToken);
});
