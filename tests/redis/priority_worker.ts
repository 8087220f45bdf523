// One process of the priority fleet (redis_rate_priority_test.ts): waits
// for the test's go key (`<run>:go:<role>`), then sends its requests through
// a client paced by a Redis limiter shared under `<run>`: a background
// crawl ("low": transactions, 4 callers at once, `priority: "low"`) or live
// calls ("live": organizations, one after another). Counts itself done.
//
//   deno run --allow-net=127.0.0.1 --allow-env='PARTNER_API_*' \
//     priority_worker.ts <redis port> <run> <low|live> <requests> <limit requests> <limit ms>

import { configFromEnv } from "../../src/core/config.ts";
import { createClient } from "../../src/client/mod.ts";
import { createRedisRateLimiter } from "../../src/store/redis.ts";
import { connectRedis } from "./_resp.ts";

const [port, run, role, count, requests, interval] = Deno.args;
const redis = await connectRedis(Number(port));
const rateLimit = createRedisRateLimiter({
  command: (args) => redis.command(args),
  prefix: run!,
  requests: Number(requests),
  interval: Number(interval),
});
const low = role === "low";
const client = createClient({
  ...configFromEnv(),
  rateLimit,
  priority: low ? "low" : "auto",
});
while (await redis.command(["GET", `${run}:go:${role}`]) === null) {
  await new Promise((done) => setTimeout(done, 5));
}
let next = 0;
await Promise.all(Array.from({ length: low ? 4 : 1 }, async () => {
  while (next++ < Number(count)) {
    const response = await client.fetch(low ? "transactions" : "organizations");
    await response.body?.cancel();
  }
}));
await rateLimit[Symbol.asyncDispose]();
await redis.command(["INCR", `${run}:done`]);
redis.close();
