// Outside review r150 M2: a store object that wrote v1 then v2 with plain
// set() took v1 back once it was written back into the database (a restore,
// a replay): set() did not count the version it wrote as seen, so its own
// get() returned v1 and update() was handed it (no read between the two
// set() calls and the write-back: a read counted v2 seen). docs/fleets.md: "a process
// refuses a copy older than one it has seen". Here on the in-memory Deno KV
// (on Redis: tests/redis/redis_store_race_test.ts).

import { equal } from "node:assert/strict";
import { createKvTokenStore } from "../src/store/kv.ts";
import type { TokenRecord } from "../src/store/mod.ts";

const record = (blockedUntil: number): TokenRecord => ({ blockedUntil });

Deno.test("KV: a record written by set(), then written back after a newer set(), is refused by the store object that wrote both", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = createKvTokenStore(kv);
  await store.set("c", record(1));
  const v1: [Deno.KvKey, unknown][] = [];
  for await (const entry of kv.list({ prefix: [] })) {
    v1.push([entry.key, entry.value]);
  }
  await store.set("c", record(2));
  for (const [key, value] of v1) await kv.set(key, value); // written back
  equal(await store.get("c"), undefined, "v1 read back after v2");
  const handed: unknown[] = [];
  await store.update!("c", (stored) => {
    handed.push(stored);
    return undefined;
  });
  equal(handed[0], undefined, "update() handed v1 after v2");
  // A newer write still lands and reads back.
  await store.set("c", record(3));
  equal((await store.get("c"))?.blockedUntil, 3);
});
