// Outside review r149 F1: a shared store's sealed records carry a version, and
// a record older than one seen is refused as a rollback. Sealing counted its
// version as seen before the write landed, and a read was checked against the
// highest version seen when it finished, not when it began: a write that lost
// its compare-and-set, or a read a concurrent one overtook, took the record
// stored for an older one. Concurrent update() calls were handed `undefined`
// for it, and providers sharing the store renewed 2-3 times after one
// revocation. Here on the in-memory Deno KV (on Redis:
// tests/redis/redis_store_race_test.ts): no change() is handed `undefined`
// while a record is stored, what is stored reads back, and a revocation costs
// one renewal.

import { createKvTokenStore } from "../src/store/kv.ts";
import { checkStores } from "./_store_race.ts";

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
