// A store of the caller's whose update breaks its contract counts as a failing
// one: the provider acts on what it knows, and never hands out a token it was
// told to drop. (A coordinate that breaks it: token_store_edges_test.ts.)

import { equal, notEqual, ok } from "node:assert/strict";
import { createTokenProvider } from "../src/token/mod.ts";
import type { TokenStore } from "../src/store/mod.ts";
import { inProcessFake } from "./_fast_setup.ts";

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
