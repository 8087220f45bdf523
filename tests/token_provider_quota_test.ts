// The token provider after a 429, its quota, invalidate(), its options and
// a day of refreshes (moved from token_provider_test.ts, which had grown
// past 400 lines).

import {
  deepStrictEqual,
  equal,
  notEqual,
  ok,
  rejects,
  throws,
} from "node:assert/strict";
import { QuotaExceededError, TokenRequestError } from "../src/core/errors.ts";
import {
  createTokenProvider,
  type IssuedToken,
  type QuotaSnapshot,
  requestToken,
} from "../src/token/mod.ts";
import { createMemoryTokenStore, type TokenStore } from "../src/store/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { setup } from "./_token_setup.ts";
import { loopbackTokenEndpoint } from "./_loopback_api.ts";

Deno.test("getToken() sends nothing after a 429 until the quota resets", async (t) => {
  const { api, provider, clock, background } = await setup({
    quota: { perHour: 1 },
    tokenLifetime: 600_000,
  });
  await using _ = api;
  clock.set(Date.UTC(2026, 10, 21, 10, 30));
  const first = await provider.getToken();

  await t.step(
    "a background refresh hits the quota; the valid token is still served",
    async () => {
      clock.set(first.expiresAt - 30_000);
      equal(await provider.getToken(), first);
      await background.settle();
      equal(api.tokenRequests, 2);
      equal(await provider.getToken(), first);
      equal(api.tokenRequests, 2);
    },
  );

  await t.step(
    "a caller that needs a new token fails at once, without a request",
    async () => {
      clock.set(first.expiresAt);
      await rejects(provider.getToken(), (error: unknown) => {
        ok(error instanceof QuotaExceededError);
        equal(error.buckets[0]?.bucket, "per_hour");
        equal(error.retryAt, Date.UTC(2026, 10, 21, 11));
        return true;
      });
      equal(api.tokenRequests, 2);
    },
  );

  await t.step("once the bucket resets, a request is sent again", async () => {
    clock.set(Date.UTC(2026, 10, 21, 11));
    ok(api.isValidToken((await provider.getToken()).accessToken));
    equal(api.tokenRequests, 3);
  });
});

Deno.test("getToken() waits for the largest reset among exhausted buckets", async () => {
  const { api, provider, clock } = await setup({
    quota: { perHour: 5, perDay: 1 },
  });
  await using _ = api;
  clock.set(Date.UTC(2026, 10, 21, 10, 30));
  await provider.getToken();
  await provider.invalidate();
  await rejects(provider.getToken(), { retryAt: Date.UTC(2026, 10, 22) });
  clock.set(Date.UTC(2026, 10, 21, 23));
  await rejects(provider.getToken(), QuotaExceededError);
  equal(api.tokenRequests, 2);
});

Deno.test("getToken() tries a failed background refresh again only after a pause", async () => {
  const { api, provider, clock, background } = await setup({}, {
    retry: false,
  });
  await using _ = api;
  const first = await provider.getToken();
  clock.set(first.expiresAt - 60_000);
  api.injectTokenFaults({ kind: "status", status: 500 });
  equal(await provider.getToken(), first);
  await background.settle();
  equal(api.tokenRequests, 2);
  for (let i = 0; i < 5; i++) {
    clock.advance(1000);
    equal(await provider.getToken(), first);
  }
  equal(api.tokenRequests, 2);
  clock.advance(6000);
  equal(await provider.getToken(), first);
  await background.settle();
  equal(api.tokensIssued, 2);
});

Deno.test("the provider keeps the last quota seen and reports it to onQuota", async () => {
  const seen: QuotaSnapshot[] = [];
  const { api, provider, clock } = await setup({ quota: { perHour: 10 } }, {
    onQuota: (quota) => {
      seen.push(quota);
      throw new Error("a failing callback loses nothing");
    },
  });
  await using _ = api;
  equal(provider.quota, undefined);
  await provider.getToken();
  deepStrictEqual(provider.quota, {
    observedAt: clock(),
    buckets: [
      { bucket: "per_hour", limit: 10, remaining: 9, resetAfter: 3600 },
      {
        bucket: "per_day",
        limit: 10_000,
        remaining: 9_999,
        resetAfter: 50_400,
      },
    ],
  });
  deepStrictEqual(seen, [provider.quota]);
  api.injectTokenFaults({ kind: "status", status: 400 });
  await provider.invalidate();
  await rejects(provider.getToken(), { status: 400 });
  equal(seen.length, 2, "a refusal's quota header is read too");
});

Deno.test("invalidate() drops that token only", async () => {
  const { api, provider } = await setup();
  await using _ = api;
  const first = await provider.getToken();
  await provider.invalidate(first.accessToken);
  const second = await provider.getToken();
  notEqual(second.accessToken, first.accessToken);
  await provider.invalidate(first.accessToken);
  equal(await provider.getToken(), second);
  equal(api.tokenRequests, 2);
});

Deno.test("invalidate() removes the token from a shared store", async () => {
  const { api, clock } = await setup();
  await using _ = api;
  const memory = createMemoryTokenStore();
  const keys = new Set<string>();
  const store: TokenStore = {
    ...memory,
    update: (key, change) => (keys.add(key), memory.update!(key, change)),
  };
  const options = { ...api.environment, ...api.credentials, now: clock, store };
  const token = await createTokenProvider(options).getToken();
  const [key] = keys;
  ok(key !== undefined && !key.includes(api.credentials.clientSecret));
  await createTokenProvider(options).invalidate(token.accessToken);
  equal((await memory.get(key))?.token, undefined);
  notEqual(
    (await createTokenProvider(options).getToken()).accessToken,
    token.accessToken,
  );
});

Deno.test("an IssuedToken shows its access token redacted when inspected", async () => {
  await using api = await startFakePartnerApi();
  const token = await requestToken({ ...api.environment, ...api.credentials });
  const shown = Deno.inspect(token);
  ok(shown.startsWith("IssuedToken {"), shown);
  ok(shown.includes("[redacted]"));
  ok(!shown.includes(token.accessToken));
  const { inspect } = await import("node:util");
  ok(!inspect(token).includes(token.accessToken));
  const copy: IssuedToken = { ...token };
  deepStrictEqual(copy, token);
});

Deno.test("createTokenProvider() refuses bad options at once", async () => {
  await using api = await startFakePartnerApi();
  const options = { ...api.environment, ...api.credentials };
  throws(
    () =>
      createTokenProvider({
        ...options,
        tokenUrl: "http://idp.example.com/token",
      }),
    { name: "TypeError", option: "tokenUrl", rule: "must use https" },
  );
  throws(
    () => createTokenProvider({ ...options, clientSecret: "" }),
    { name: "TypeError", option: "clientSecret" },
  );
  throws(
    () => createTokenProvider({ ...options, refreshMargin: -1 }),
    { name: "RangeError", option: "refreshMargin" },
  );
  throws(
    () => createTokenProvider({ ...options, timeout: NaN }),
    RangeError,
  );
  throws(
    () => createTokenProvider({ ...options, retry: { retries: 1.5 } }),
    { name: "RangeError", option: "retries" },
  );
  // Else they meant the default of 2 retries, silently (retry: 0 for none; a misspelt field).
  for (const retry of [0, null, true, "none", []]) {
    throws(() => createTokenProvider({ ...options, retry } as never), {
      name: "TypeError",
      option: "retry",
    });
  }
  throws(
    () => createTokenProvider({ ...options, retry: { retires: 0 } } as never),
    { name: "TypeError", option: "retry.retires" },
  );
  throws(
    () =>
      createTokenProvider({ ...options, onQuota: 1 as unknown as () => void }),
    TypeError,
  );
  // A store without get and set, or a Deno KV database itself, would never be written: each process pays. One whose
  // coordinate or update is there and no function failed every getToken() with a bare TypeError (r173b F2).
  using kv = await Deno.openKv(":memory:");
  const { get, set } = createMemoryTokenStore();
  const odd = [{ coordinate: 1 }, { coordinate: "yes" }, { update: 1 }];
  const stores = [
    {},
    { get: () => {} },
    kv,
    ...odd.map((o) => ({ get, set, ...o })),
  ];
  for (const store of stores as unknown[]) {
    throws(
      () => createTokenProvider({ ...options, store: store as TokenStore }),
      { name: "TypeError", option: "store" },
    );
  }
  equal(api.tokenRequests, 0);
  // A store of the user's that happens to have an `atomic` is still one, and used. Its token is awaited: the store's
  // key, derived in the background from creation on, outlived the test under load (a leaked deriveBits).
  const own = { ...createMemoryTokenStore(), atomic: () => {} };
  const token = await createTokenProvider({ ...options, store: own })
    .getToken();
  const fresh = createTokenProvider({ ...options, store: own });
  equal((await fresh.getToken()).accessToken, token.accessToken);
  equal(api.tokenRequests, 1);
});

Deno.test("createTokenProvider() refuses to run in a browser page unless told", () => {
  const global = globalThis as Record<string, unknown>;
  const hidden = ["Deno", "process"].map((name) =>
    [name, Object.getOwnPropertyDescriptor(globalThis, name)] as const
  );
  const options = {
    tokenUrl: "https://idp.example/token",
    audience: "a",
    clientId: "id",
    clientSecret: "secret",
  };
  try {
    for (const [name] of hidden) delete global[name];
    global.document = {};
    throws(() => createTokenProvider(options), {
      name: "TypeError",
      option: "dangerouslyAllowBrowser",
    });
    createTokenProvider({ ...options, dangerouslyAllowBrowser: true });
  } finally {
    delete global.document;
    for (const [name, descriptor] of hidden) {
      if (descriptor) Object.defineProperty(globalThis, name, descriptor);
    }
  }
  createTokenProvider(options);
});

Deno.test("a provider with a day-long token refreshes a few times a day at most", async () => {
  const { api, provider, clock, background } = await setup();
  await using _ = api;
  const start = clock();
  for (let minute = 0; minute < 3 * 24 * 60; minute += 13) {
    clock.set(start + minute * 60_000);
    ok(clock() < (await provider.getToken()).expiresAt);
    await background.settle();
  }
  equal(api.tokenRequests, api.tokensIssued);
  ok(api.tokenRequests <= 4, `${api.tokenRequests} requests over three days`);
});

Deno.test("a 200 the provider refuses (not JSON, no bearer token, no lifetime) still reports the quota it spent: the error's quota and provider.quota hold it (r169b F7: dropped)", async () => {
  for (
    const body of [
      "not json",
      '{"access_token":"AT-1","token_type":"mac","expires_in":60}',
    ]
  ) {
    await using endpoint = loopbackTokenEndpoint(() =>
      new Response(body, {
        headers: { "idp-client-quota-limit": "b=per_hour;q=10;r=3;t=600" },
      })
    );
    const provider = createTokenProvider({
      ...endpoint.options,
      clientId: "partner-client-13",
      clientSecret: "s3cr3t-malformed-quota",
      retry: false,
    });
    const error = await provider.getToken().catch((error) => error);
    ok(error instanceof TokenRequestError, String(error));
    equal(error.reason, "malformed");
    equal(error.quota?.[0]?.remaining, 3);
    equal(provider.quota?.buckets[0]?.remaining, 3);
  }
});
