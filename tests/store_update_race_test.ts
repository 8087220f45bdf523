// Outside review r149 F1: a shared store's sealed records carry a version, and
// a record older than one seen is refused as a rollback. Sealing counted its
// version as seen before the write landed, and a read was checked against the
// highest version seen when it finished, not when it began: a write that lost
// its compare-and-set, or a read a concurrent one overtook, took the record
// stored for an older one. Concurrent update() calls were handed `undefined`
// for it, and providers sharing the store renewed 2-3 times after one
// revocation. On the in-memory Deno KV, and on Redis where redis-server may run
// (--allow-run=redis-server): no change() is handed `undefined` while a record
// is stored, what is stored reads back, and a revocation costs one renewal.

import { equal, ok } from "node:assert/strict";
import { createKvTokenStore } from "../src/store/kv.ts";
import type { TokenRecord, TokenStore } from "../src/store/mod.ts";
import { createTokenProvider } from "../src/token/mod.ts";
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
async function checkStores(open: () => TokenStore, objects: number) {
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

for (const objects of [1, 3]) {
  Deno.test(`KV, ${objects} store object(s): concurrent update() calls are never handed undefined while a record is stored, what concurrent set() calls stored reads back, and providers sharing the store renew once after a revocation`, async () => {
    using kv = await Deno.openKv(":memory:");
    let prefix = 0;
    const open = () =>
      createKvTokenStore(kv, {
        prefix: ["race", Math.floor(prefix++ / objects)],
      });
    await checkStores(open, objects);
  });
}

const mayRunRedis = Deno.permissions.querySync({
  name: "run",
  command: "redis-server",
}).state === "granted";

Deno.test({
  name:
    "Redis, 3 store objects: concurrent update() calls are never handed undefined while a record is stored, what concurrent set() calls stored reads back, and providers sharing the store renew once after a revocation (needs --allow-run=redis-server)",
  ignore: !mayRunRedis,
  async fn() {
    const { connectRedis, redisInstalled, startRedis } = await import(
      "./redis/_redis_server.ts"
    );
    if (!redisInstalled) return;
    const { createRedisTokenStore } = await import("../src/store/redis.ts");
    await using redis = await startRedis();
    const clients = await Promise.all(
      [0, 1, 2].map(() => connectRedis(redis.port)),
    );
    try {
      let opened = 0;
      const open = () =>
        createRedisTokenStore({
          command: clients[opened % 3]!.command,
          prefix: `race-${Math.floor(opened++ / 3)}`,
        });
      await checkStores(open, 3);
    } finally {
      for (const client of clients) client.close();
    }
  },
});
