// Outside attack r151 F7 on Redis, against a real redis-server:
// tests/store_interleave_test.ts says what is checked, there on Deno KV.

import { createRedisTokenStore } from "../../src/store/redis.ts";
import { checkInterleavings } from "../_store_schedule.ts";
import {
  connectRedis,
  redisTest as test,
  startRedis,
} from "./_redis_server.ts";

test("Redis: store objects whose set(), update() and coordinate() calls interleave each read the write that landed last, never absent", async () => {
  await using redis = await startRedis();
  const client = await connectRedis(redis.port);
  try {
    await checkInterleavings(
      (gate) =>
        createRedisTokenStore({
          command: (args) => gate(() => client.command(args)),
          maxWait: 0,
        }),
      2, // GETRANGE of the record, GET of the lease
      1, // the publish script
      async () => {
        // A lease run out, as Redis expires it.
        const leases = await client.command(["KEYS", "*:lease"]);
        for (const lease of leases as string[]) {
          await client.command(["DEL", lease]);
        }
      },
    );
  } finally {
    client.close();
  }
});
