// A store of the caller's that breaks its contract counts as a failing one:
// the provider acts on what it knows, and never hands out nothing or a token
// it was told to drop.

import { equal, notEqual, ok } from "node:assert/strict";
import { createTokenProvider } from "../src/token/mod.ts";
import type { TokenStore } from "../src/store/mod.ts";
import { inProcessFake } from "./_fast_setup.ts";

Deno.test("a coordinate that resolves with no usable record, without a request or before its request answered, gets the token of one request (it failed 'malformed', sending none)", async () => {
  const api = inProcessFake({ wire: 20 });
  using _ = api;
  const resolving = (
    answer: unknown,
    background: boolean,
  ): TokenStore => ({
    get: () => Promise.resolve(undefined),
    set: () => Promise.resolve(),
    coordinate: (_key, { request }) => {
      if (background) void request().catch(() => {});
      return Promise.resolve(answer as never);
    },
  });
  const stores = [
    resolving("garbage", false),
    resolving({}, false),
    resolving(undefined, false),
    resolving({}, true),
  ];
  for (const store of stores) {
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
});

Deno.test("an update that resolves without calling its change counts as a failing store: invalidate() drops the token here, and the next call gets a new one (the same was served again)", async () => {
  const api = inProcessFake({ wire: 20 });
  using _ = api;
  const records = new Map<string, unknown>();
  const store: TokenStore = {
    get: (key) => Promise.resolve(records.get(key) as never),
    set: (key, record) => (records.set(key, record), Promise.resolve()),
    update: (key) => Promise.resolve(records.get(key) as never),
  };
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    fetch: api.fetch,
    store,
  });
  const first = await provider.getToken();
  await provider.invalidate(first.accessToken);
  const second = await provider.getToken();
  notEqual(second.accessToken, first.accessToken);
  ok(api.service.isValidToken(second.accessToken));
  equal(api.service.tokenRequests, 2);
});
