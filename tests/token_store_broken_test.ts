// Stores of the caller's at the edges of their contract: an update that breaks
// it counts as a failing store (the provider acts on what it knows, and never
// hands out a token it was told to drop), and a coordinate that keeps it is
// never bypassed. (A coordinate that breaks it: token_store_edges_test.ts.)

import { equal, notEqual, ok, rejects } from "node:assert/strict";
import { createTokenProvider } from "../src/token/mod.ts";
import type { TokenRecord, TokenStore } from "../src/store/mod.ts";
import { QuotaExceededError } from "../src/core/errors.ts";
import { inProcessFake } from "./_fast_setup.ts";
import { manualClock } from "./_helpers.ts";

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

Deno.test("a coordinate that keeps its contract is asked again when the record it settled on stops answering on its way back (a block ended while its lock was released): the token is requested through it, never beside it (one request per such provider, outside the store's lock)", async () => {
  const clock = manualClock();
  const api = inProcessFake({ now: clock });
  using _ = api;
  const records = new Map<string, TokenRecord>();
  let inside = false;
  let outside = 0;
  const store: TokenStore = {
    get: (key) => Promise.resolve(records.get(key)),
    set: (key, record) => (records.set(key, record), Promise.resolve()),
    coordinate: async (key, { settled, request }) => {
      const stored = records.get(key);
      if (stored !== undefined && settled(stored)) {
        clock.advance(11_000); // releasing its lock takes a while (a block lasts 10 s at least)
        return stored;
      }
      inside = true;
      const record = await request().finally(() => inside = false);
      records.set(key, record);
      return record;
    },
  };
  const provider = () =>
    createTokenProvider({
      ...api.environment,
      ...api.credentials,
      now: clock,
      retry: false,
      store,
      fetch: (input, init) => {
        if (!inside) outside++;
        return api.fetch(input, init);
      },
    });
  api.service.injectTokenFaults({ kind: "status", status: 429, retryAfter: 1 });
  await rejects(provider().getToken(), QuotaExceededError);
  const token = await provider().getToken(); // reads the block, which ends
  ok(api.service.isValidToken(token.accessToken));
  equal(api.service.tokenRequests, 2);
  equal(outside, 0);
});
