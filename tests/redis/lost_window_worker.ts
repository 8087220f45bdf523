// One process of the lost-window fleet (redis_rate_lost_test.ts): for each
// trial, waits for the test's go key, then sends its requests one after
// another through a client paced by a Redis limiter of that trial's own
// prefix, and counts itself done. The fake's addresses and credentials come
// from PARTNER_API_* variables.
//
//   deno run --allow-net=127.0.0.1 --allow-env='PARTNER_API_*' \
//     lost_window_worker.ts <redis port> <run> <trials> <requests each> <limit requests> <limit ms>

import { configFromEnv } from "../../src/core/config.ts";
import { createClient } from "../../src/client/mod.ts";
import { createRedisRateLimiter } from "../../src/store/redis.ts";
import { connectRedis } from "./_resp.ts";

const [port, run, trials, each, requests, interval] = Deno.args;
const redis = await connectRedis(Number(port));
const config = configFromEnv();
for (let trial = 0; trial < Number(trials); trial++) {
  while (await redis.command(["GET", `${run}:go:${trial}`]) === null) {
    await new Promise((done) => setTimeout(done, 5));
  }
  const rateLimit = createRedisRateLimiter({
    command: (args) => redis.command(args),
    prefix: `${run}:${trial}`,
    requests: Number(requests),
    interval: Number(interval),
  });
  const client = createClient({ ...config, rateLimit });
  for (let i = 0; i < Number(each); i++) {
    const response = await client.fetch("organizations");
    await response.body?.cancel();
  }
  await rateLimit[Symbol.asyncDispose]();
  await redis.command(["INCR", `${run}:done:${trial}`]);
}
redis.close();
