// The Redis store's sealed records under concurrent writes (outside review
// r149 F1), against a real redis-server: tests/store_update_race_test.ts says
// what is checked, there on the in-memory Deno KV.

import { createRedisTokenStore } from "../../src/store/redis.ts";
import { checkStores } from "../_store_race.ts";
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
