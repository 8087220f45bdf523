// Outside attack r151 F10: a record key holding another program's hash or
// list made update() throw Redis's raw WRONGTYPE error. A key of another type
// is handled as get() handles it, and as the take script does: it holds no
// record (absent), and the write replaces it (docs/fleets.md, "fail closed").
// With scripts and with the plain commands of a Redis that refuses EVAL.

import { deepStrictEqual, equal } from "node:assert/strict";
import { createRedisTokenStore } from "../../src/store/redis.ts";
import {
  allowScripts,
  connectRedis,
  redisTest as test,
  startRedis,
} from "./_redis_server.ts";

/** Commands that leave `key` holding a value of another type than a string. */
const FOREIGN: Record<string, (key: string) => string[]> = {
  hash: (key) => ["HSET", key, "not", "a record"],
  list: (key) => ["RPUSH", key, "not a record"],
  set: (key) => ["SADD", key, "not a record"],
  "sorted set": (key) => ["ZADD", key, "1", "not a record"],
  stream: (key) => ["XADD", key, "*", "not", "a record"],
};

for (const scripts of [true, false]) {
  test(`Redis${scripts ? "" : " refusing EVAL"}: a record key of another type reads as absent, and update() and set() replace it`, async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    try {
      await allowScripts(client, scripts);
      const store = createRedisTokenStore({ command: client.command });
      await store.set("c", { blockedUntil: 1 });
      const [record] = await client.command(["KEYS", "*:record"]) as string[];
      for (const [kind, write] of Object.entries(FOREIGN)) {
        const foreign = async () => {
          await client.command(["DEL", record!]);
          await client.command(write(record!));
        };
        await foreign();
        equal(await store.get("c"), undefined, `${kind}: get()`);
        const handed: unknown[] = [];
        const written = await store.update!("c", (stored) => {
          handed.push(stored);
          return { blockedUntil: 2 };
        });
        deepStrictEqual(handed, [undefined], `${kind}: update() handed`);
        deepStrictEqual(written, { blockedUntil: 2 });
        deepStrictEqual(await store.get("c"), written, `${kind}: replaced`);
        await foreign();
        await store.set("c", { blockedUntil: 3 });
        equal((await store.get("c"))?.blockedUntil, 3, `${kind}: set()`);
      }
    } finally {
      client.close();
    }
  });
}
