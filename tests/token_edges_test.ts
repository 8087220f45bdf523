// Each edge of the token core that the round-2 review found, against a
// loopback server where one can show it. Time is driven, never waited for.

import {
  deepStrictEqual,
  equal,
  notEqual,
  ok,
  rejects,
} from "node:assert/strict";
import { QuotaExceededError, TokenRequestError } from "../src/core/errors.ts";
import { createTokenProvider, requestToken } from "../src/token/mod.ts";
import {
  type CoordinateOptions,
  createMemoryTokenStore,
  type TokenRecord,
  type TokenStore,
} from "../src/store/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";
import { inProcessFake } from "./_fast_setup.ts";

const HOUR = 3_600_000;

/** A loopback server that answers every request with `answer()`. */
function serve(answer: (request: Request) => Response | Promise<Response>) {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    answer,
  );
  return {
    tokenUrl: `http://127.0.0.1:${server.addr.port}/oauth/token`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

const CLIENT = {
  audience: "https://partner-api.test",
  clientId: "client",
  clientSecret: 's3cr3t/with spaces&"quotes"',
};

Deno.test("the default fetch is called as a plain function, never as a method", async () => {
  await using api = await startFakePartnerApi();
  const original = globalThis.fetch;
  const calls: unknown[] = [];
  // Like workerd: fetch called with any `this` but the global throws.
  globalThis.fetch = function (this: unknown, input, init) {
    calls.push(this);
    if (this !== undefined && this !== globalThis) {
      throw new TypeError("Illegal invocation");
    }
    return original(input, init);
  };
  try {
    await requestToken({ ...api.environment, ...api.credentials });
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
    });
    await provider.getToken();
    const custom = globalThis.fetch;
    await requestToken({
      ...api.environment,
      ...api.credentials,
      fetch: custom,
    });
  } finally {
    globalThis.fetch = original;
  }
  equal(calls.length, 3);
});

Deno.test("bodyFormat 'form' sends the four fields form-encoded", async () => {
  await using api = await startFakePartnerApi({ tokenBodyFormats: ["form"] });
  const options = { ...api.environment, ...api.credentials };
  await rejects(requestToken(options), (error: unknown) => {
    ok(error instanceof TokenRequestError);
    equal(error.status, 400, "JSON is refused by a form-only server");
    return true;
  });
  const token = await requestToken({ ...options, bodyFormat: "form" });
  ok(api.isValidToken(token.accessToken));
  const provider = createTokenProvider({ ...options, bodyFormat: "form" });
  ok(api.isValidToken((await provider.getToken()).accessToken));
  await rejects(
    requestToken({ ...options, bodyFormat: "xml" as "json" }),
    TypeError,
  );
});

Deno.test("every TokenRequestError says its reason", async (t) => {
  await using api = await startFakePartnerApi({ quota: { perHour: 1 } });
  const options = { ...api.environment, ...api.credentials };
  const reason = async (
    promise: Promise<unknown>,
    expected: TokenRequestError["reason"],
  ) =>
    await rejects(promise, (error: unknown) => {
      ok(error instanceof TokenRequestError);
      equal(error.reason, expected);
      return true;
    });
  await t.step("network: nothing listens", async () => {
    const closed = await startFakePartnerApi();
    const tokenUrl = closed.environment.tokenUrl;
    await closed.close();
    await reason(requestToken({ ...options, tokenUrl }), "network");
  });
  await t.step("status: wrong secret", async () => {
    await reason(requestToken({ ...options, clientSecret: "wrong" }), "status");
  });
  await t.step("malformed: a 200 without a token", async () => {
    api.injectTokenFaults({ kind: "body", body: "{}" });
    await reason(requestToken(options), "malformed");
  });
  await t.step("quota: past the quota", async () => {
    await requestToken(options);
    await reason(requestToken(options), "quota");
  });
  await t.step("timeout: no answer in time", async () => {
    api.injectTokenFaults({ kind: "delay", ms: 200 });
    await reason(requestToken({ ...options, timeout: 20 }), "timeout");
  });
});

Deno.test("requestToken() gives up after 30 s by default, even on a fetch that ignores its signal", async () => {
  await withFakeTimers(async (clock) => {
    const hanging = () => new Promise<Response>(() => {});
    const pending = requestToken({
      tokenUrl: "https://idp.example/oauth/token",
      ...CLIENT,
      fetch: hanging,
    });
    const outcome = pending.then(() => "resolved", (error) => error);
    await clock.tickAsync(29_999);
    let settled = false;
    outcome.then(() => settled = true);
    await Promise.resolve();
    ok(!settled, "still waiting at 29.999 s");
    await clock.tickAsync(1);
    const error = await outcome;
    ok(error instanceof TokenRequestError);
    equal(error.reason, "timeout");
  });
});

Deno.test("a token answer over 64 KiB is refused without reading the rest", async () => {
  let sent = 0;
  const chunk = new Uint8Array(16 * 1024).fill(0x20);
  await using server = serve(() =>
    new Response(
      new ReadableStream({
        pull(controller) {
          // A 500 MB answer, if anyone read it all.
          if (sent >= 500 * 1024 * 1024) return controller.close();
          sent += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
      { headers: { "content-type": "application/json" } },
    )
  );
  await rejects(
    requestToken({ ...CLIENT, tokenUrl: server.tokenUrl }),
    (error: unknown) => {
      ok(error instanceof TokenRequestError);
      equal(error.reason, "malformed");
      return true;
    },
  );
  // The server runs ahead of the client by what socket buffers hold (a few
  // MB here); what matters is that the 500 MB are never pulled.
  ok(sent < 16 * 1024 * 1024, `the server sent ${sent} bytes`);
});

Deno.test("a declared Content-Length over 64 KiB is refused before reading", async () => {
  await using api = await startFakePartnerApi();
  api.injectTokenFaults({
    kind: "body",
    body: JSON.stringify({
      access_token: "a",
      expires_in: 60,
      token_type: "Bearer",
      pad: "x".repeat(70_000),
    }),
  });
  await rejects(
    requestToken({ ...api.environment, ...api.credentials }),
    (error: unknown) =>
      error instanceof TokenRequestError && error.reason === "malformed",
  );
});

Deno.test("a gzip token answer of a small declared length that inflates past 64 KiB is refused", async () => {
  const inflated = new TextEncoder().encode(JSON.stringify({
    access_token: "a",
    expires_in: 60,
    token_type: "Bearer",
    pad: " ".repeat(1024 * 1024),
  }));
  const gzip = new Uint8Array(
    await new Response(
      new Blob([inflated]).stream().pipeThrough(new CompressionStream("gzip")),
    ).arrayBuffer(),
  );
  ok(gzip.byteLength < 64 * 1024, "declared far below the bound");
  await using server = serve(() =>
    new Response(gzip, {
      headers: {
        "content-type": "application/json",
        "content-encoding": "gzip",
        "content-length": String(gzip.byteLength),
      },
    })
  );
  await rejects(
    requestToken({ ...CLIENT, tokenUrl: server.tokenUrl }),
    (error: unknown) =>
      error instanceof TokenRequestError && error.reason === "malformed",
  );
});

Deno.test("JSON.stringify of a token shows the access token redacted", async () => {
  await using api = await startFakePartnerApi();
  const token = await requestToken({ ...api.environment, ...api.credentials });
  const json = JSON.stringify({ token });
  ok(!json.includes(token.accessToken));
  equal(JSON.parse(json).token.accessToken, "[redacted]");
  equal(JSON.parse(json).token.expiresIn, token.expiresIn);
  ok(api.isValidToken(token.accessToken), "the property still reads the token");
  deepStrictEqual(Object.keys(token), [
    "tokenType",
    "expiresIn",
    "expiresAt",
    "quota",
  ]);
});

Deno.test("a token's access token never shows in a spread, Object.entries or structuredClone", async () => {
  await using api = await startFakePartnerApi();
  const token = await requestToken({ ...api.environment, ...api.credentials });
  const views = [
    JSON.stringify({ ...token }),
    JSON.stringify(Object.entries(token)),
    JSON.stringify(structuredClone(token)),
    Deno.inspect(token, { showHidden: false }),
  ];
  for (const view of views) ok(!view.includes(token.accessToken), view);
  equal(({ ...token } as { accessToken?: string }).accessToken, undefined);
  ok(api.isValidToken(token.accessToken), "the property still reads it");
});

Deno.test("a 429 whose day bucket lacks 't' still blocks until the hour bucket resets", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    now: clock,
  });
  api.injectTokenFaults({
    kind: "status",
    status: 429,
    headers: {
      "Idp-Client-Quota-Limit": "b=per_hour;q=10;r=0;t=3540,b=per_day;q=50;r=0",
    },
  });
  await rejects(provider.getToken(), (error: unknown) => {
    ok(error instanceof QuotaExceededError);
    equal(error.retryAt, clock() + 3_540_000);
    equal(error.buckets.length, 1, "the bad bucket is dropped");
    return true;
  });
  clock.advance(3_539_000);
  await rejects(provider.getToken(), QuotaExceededError);
  equal(api.tokenRequests, 1, "nothing sent while the hour bucket is empty");
  clock.advance(1_000);
  ok(api.isValidToken((await provider.getToken()).accessToken));
});

Deno.test("absurd quota waits block for 25 hours at most, with a typed error", async (t) => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  const cases: [string, Record<string, string>][] = [
    ["a huge 't'", {
      "Idp-Client-Quota-Limit":
        `b=per_hour;q=1;r=0;t=${Number.MAX_SAFE_INTEGER}`,
    }],
    ["a huge Retry-After", { "retry-after": "99999999999999999999" }],
    ["a Retry-After date in the year 9999", {
      "retry-after": "Fri, 31 Dec 9999 23:59:59 GMT",
    }],
  ];
  for (const [name, headers] of cases) {
    await t.step(name, async () => {
      const provider = createTokenProvider({
        ...api.environment,
        ...api.credentials,
        now: clock,
      });
      api.injectTokenFaults({ kind: "status", status: 429, headers });
      await rejects(provider.getToken(), (error: unknown) => {
        ok(error instanceof QuotaExceededError);
        equal(error.retryAt, clock() + 25 * HOUR);
        return true;
      });
    });
  }
});

Deno.test("a 429 with Retry-After: 0 is a QuotaExceededError", async () => {
  await using api = await startFakePartnerApi();
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
  });
  api.injectTokenFaults({
    kind: "status",
    status: 429,
    headers: { "retry-after": "0" },
  });
  await rejects(provider.getToken(), (error: unknown) => {
    ok(error instanceof QuotaExceededError);
    equal(error.reason, "quota");
    return true;
  });
  ok(
    api.isValidToken((await provider.getToken()).accessToken),
    "no block left",
  );
});

Deno.test("Retry-After dates are measured against the injected clock (2031 behaves like 2026)", async () => {
  const clock = manualClock(Date.UTC(2031, 5, 1, 9, 15));
  await using api = await startFakePartnerApi({ now: clock });
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    now: clock,
  });
  const inTwoMinutes = new Date(clock() + 120_000).toUTCString();
  api.injectTokenFaults({
    kind: "status",
    status: 429,
    headers: { "retry-after": inTwoMinutes },
  });
  await rejects(provider.getToken(), (error: unknown) => {
    ok(error instanceof QuotaExceededError);
    equal(error.retryAt, clock() + 120_000);
    return true;
  });
  clock.advance(120_000);
  ok(api.isValidToken((await provider.getToken()).accessToken));
});

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

Deno.test("the store is read once per flight, not on every call during a failed refresh", async () => {
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
  equal(reads, 1, "the cold start reads once");
  clock.set(token.expiresAt - 60_000);
  api.injectTokenFaults({ kind: "status", status: 503 });
  equal(await provider.getToken(), token);
  equal(background.length, 1, "the background refresh went to waitUntil");
  await Promise.all(background);
  equal(api.tokenRequests, 2);
  for (let i = 0; i < 50; i++) equal(await provider.getToken(), token);
  equal(reads, 2, "one read for the refresh flight, none in the cooldown");
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
    set: (k, record) => (key = k, memory.set(k, record)),
    get: async (k) => {
      const record = await memory.get(k);
      await raceOnce();
      return record;
    },
    update: async (k, change) => {
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

Deno.test("a flight that never settles is given up on once its timeouts and retries are spent", async () => {
  await withFakeTimers(async (timers) => {
    // In process: no socket beside the fake timers.
    using api = inProcessFake();
    const store = hangingStore(1);
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      store,
      retry: false,
      timeout: 1_000,
    });
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
    const store = hangingStore(1);
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      store,
      now: clock,
      retry: false,
      timeout: 1_000,
    });
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
  const { issuedToken } = await import("../src/token/_value.ts");
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
