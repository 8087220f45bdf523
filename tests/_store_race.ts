// Shared by the KV and Redis race tests (outside review r149 F1): concurrent
// writes on a shared store, and providers sharing it after a revocation.

import { equal, ok, rejects } from "node:assert/strict";
import type { TokenRecord, TokenStore } from "../src/store/mod.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { QuotaExceededError } from "../src/core/errors.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { inProcessFake } from "./_fast_setup.ts";

const ROUNDS = 10;

/** A record told apart by its renewal's time. */
const record = (at: number): TokenRecord => ({
  renewal: { at, expiresAt: at + 3_600_000, token: `fingerprint-${at}` },
});

/** What `stores` (one database) do with concurrent writes: change() calls, those handed `undefined`, records not read back. */
async function raceOn(stores: TokenStore[]) {
  let calls = 0, handedNothing = 0, unread = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const key = `race-${round}`;
    await stores[0]!.set(key, record(1));
    // Three updates at once on each store object, each one writing.
    await Promise.all(
      stores.flatMap((store, s) =>
        [0, 1, 2].map((u) =>
          store.update!(key, (stored) => {
            calls++;
            if (stored === undefined) handedNothing++;
            return record(100 + 10 * s + u);
          })
        )
      ),
    );
    for (const store of stores) {
      if (await store.get(key) === undefined) unread++;
    }
    // Three set() calls at once on one store object.
    await Promise.all([1, 2, 3].map((i) => stores[0]!.set(key, record(i))));
    for (const store of stores) {
      if (await store.get(key) === undefined) unread++;
    }
  }
  return { calls, handedNothing, unread };
}

/** `P` providers over `stores` (one database) hold a token; it is revoked; each reports 3 401s at once. */
async function renewalsAfterRevocation(stores: TokenStore[], P: number) {
  using api = inProcessFake();
  const providers = Array.from({ length: P }, (_, i) =>
    createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      store: stores[i % stores.length]!,
      retry: false,
    }));
  const held = await Promise.all(providers.map((p) => p.getToken()));
  equal(new Set(held.map((t) => t.accessToken)).size, 1, "one token shared");
  const before = api.service.tokenRequests;
  api.service.revokeTokens();
  await Promise.all(providers.flatMap((provider) =>
    [1, 2, 3].map(async () => {
      await provider.reportUnauthorized?.(held[0]!.accessToken);
      return await provider.getToken();
    })
  ));
  return api.service.tokenRequests - before;
}

/** Both properties over stores made by `open` (one database): `objects` store objects. */
export async function checkStores(open: () => TokenStore, objects: number) {
  // Each group of `objects` stores opened has a prefix of its own.
  const group = () => Array.from({ length: objects }, open);
  const { calls, handedNothing, unread } = await raceOn(group());
  ok(calls >= ROUNDS * objects * 3, `${calls} change() calls`);
  equal(
    handedNothing,
    0,
    `${handedNothing} of ${calls} change() calls handed undefined`,
  );
  equal(unread, 0, `${unread} stored records read as absent`);
  for (const P of [3, 5]) {
    const renewals = await renewalsAfterRevocation(group(), P);
    equal(renewals, 1, `${renewals} renewals for ${P} providers`);
  }
}

/**
 * A lease holder whose leases `drop` while its token request is out (a stall past leaseDuration), answered 429 (the
 * hour's one token spent), stores the block over `stores[0]`: a provider over `stores[1]` sends no request.
 */
export async function checkLostLeaseBlock(
  stores: [TokenStore, TokenStore],
  drop: () => Promise<void>,
) {
  await using api = await startFakePartnerApi({ quota: { perHour: 1 } });
  const options = {
    ...api.environment,
    ...api.credentials,
    retry: false as const,
  };
  await createTokenProvider(options).getToken(); // the hour's one token
  const tokenUrl = String(api.environment.tokenUrl);
  const stalling: typeof fetch = async (input, init) => {
    if (String(input instanceof Request ? input.url : input) === tokenUrl) {
      await drop();
    }
    return await fetch(input, init);
  };
  const a = createTokenProvider({
    ...options,
    store: stores[0],
    fetch: stalling,
  });
  const b = createTokenProvider({ ...options, store: stores[1] });
  await rejects(a.getToken(), QuotaExceededError);
  equal(api.tokenRequests, 2);
  await rejects(b.getToken(), QuotaExceededError);
  equal(api.tokenRequests, 2, "B saw A's block");
}
