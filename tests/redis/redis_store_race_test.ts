// The Redis store's sealed records under concurrent writes (outside review
// r149 F1), against a real redis-server: tests/store_update_race_test.ts says
// what is checked, there on the in-memory Deno KV.

import { equal } from "node:assert/strict";
import { createRedisTokenStore } from "../../src/store/redis.ts";
import type { TokenRecord } from "../../src/store/mod.ts";
import { checkLostLeaseBlock, checkStores } from "../_store_race.ts";
import {
  connectRedis,
  redisTest as test,
  startRedis,
} from "./_redis_server.ts";

test("3 store objects on one Redis: concurrent update() calls are never handed undefined while a record is stored, what concurrent set() calls stored reads back, and providers sharing the store renew once after a revocation", async () => {
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
});

// Outside review r150 M2: tests/store_written_back_test.ts says what is
// checked, there on the in-memory Deno KV.
test("Redis: a record written by set(), then written back after a newer set(), is refused by the store object that wrote both", async () => {
  await using redis = await startRedis();
  const client = await connectRedis(redis.port);
  try {
    const store = createRedisTokenStore({
      command: client.command,
      prefix: "written-back",
    });
    await store.set("c", { blockedUntil: 1 });
    const keys = await client.command(["KEYS", "*"]) as string[];
    const v1 = await Promise.all(
      keys.map(async (key) =>
        [key, await client.command(["GET", key]) as string] as const
      ),
    );
    await store.set("c", { blockedUntil: 2 });
    for (const [key, value] of v1) {
      await client.command(["SET", key, value]); // written back
    }
    equal(await store.get("c"), undefined, "v1 read back after v2");
    await store.set("c", { blockedUntil: 3 });
    equal((await store.get("c"))?.blockedUntil, 3);
  } finally {
    client.close();
  }
});

// tests/kv_store_edges_test.ts's lost lease answered 429, on Redis.
test("Redis: a lease holder that lost its lease while its token request was answered 429 stores the block: another process sends no request", async () => {
  await using redis = await startRedis();
  const client = await connectRedis(redis.port);
  try {
    const open = () => createRedisTokenStore({ command: client.command });
    await checkLostLeaseBlock([open(), open()], async () => {
      // A lease run out, as Redis expires it.
      const leases = await client.command(["KEYS", "*:lease"]);
      for (const lease of leases as string[]) {
        await client.command(["DEL", lease]);
      }
    });
  } finally {
    client.close();
  }
});

// Review r9: update() gave up after 10 tries where set() and KV's update() take 100: each try lost is another write
// that landed, and a provider whose update() gives up acts alone (its 401 ledger or cooldown unshared). Review r9/r10
// 2: with no wait between compare-and-set attempts, 200 store objects updating at once gave up 91 times after
// CAS_ATTEMPTS (each round lands one write, and every loser tries again at once). A short jittered wait, longer after
// each loss, spreads them: none gives up. Counts only, never durations. The count is a block an hour ahead: a record
// whose block is over lives a second in Redis, and on a busy machine the first write's expired before the second
// landed (199 of 200 counted, no update failed).
for (const racing of [20, 200]) {
  test(`Redis: ${racing} store objects racing one update() each all land: none gives up, the record counts ${racing}`, async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    try {
      const stores = Array.from(
        { length: racing },
        () => createRedisTokenStore({ command: client.command }),
      );
      const ahead = Date.now() + 3_600_000;
      const count = (record?: TokenRecord) => ({
        blockedUntil: (record?.blockedUntil ?? ahead) + 1,
      });
      const results = await Promise.allSettled(
        stores.map((store) => store.update!("c", count)),
      );
      equal(results.filter((r) => r.status === "rejected").length, 0);
      equal((await stores[0]!.get("c"))?.blockedUntil, ahead + racing);
    } finally {
      client.close();
    }
  });
}
