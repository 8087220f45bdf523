// One process of a benchmarked fleet (fleet_rate_bench.ts): waits for the
// common start moment, sends its requests one after another through a client
// paced by the limiter named, and prints what it saw.
//
//   deno run --allow-net=127.0.0.1 --allow-env --allow-read=<dir> --allow-write=<dir> \
//     tests/_fleet_rate_worker.ts <redis:PORT | kv:FILE | bottleneck:PORT> \
//     <start epoch ms> <requests to send> <limit requests> <limit ms>
//
// Bottleneck runs with its own Redis datastore (ioredis), as its docs show
// for clustering: a reservoir of the limit, refilled every interval.

import { configFromEnv } from "../src/core/config.ts";
import { createClient } from "../src/client/mod.ts";
import type { RateLimiter } from "../src/client/rate_limit.ts";
import { createKvRateLimiter } from "../src/store/kv.ts";
import { createRedisRateLimiter } from "../src/store/redis.ts";
import { connectRedis } from "./redis/_resp.ts";
import { openKv } from "./process/_open_kv.ts";

const [store, startAt, count, requests, interval] = Deno.args;
const [kind, where] = store!.split(/:(.*)/) as [string, string];
const limit = { requests: Number(requests), interval: Number(interval) };
let refused = 0;
/** When each of its requests was answered. */
const answered: number[] = [];

const { rateLimit, schedule, close } = await limiterOf(kind, where);
const client = createClient({
  ...configFromEnv(),
  rateLimit,
  retry: { retries: 10 },
  onEvent: (event) => {
    if (event.type !== "api.request") return;
    if (event.status === 429) refused++;
    else answered.push(Date.now());
  },
});
await new Promise((resolve) =>
  setTimeout(resolve, Math.max(0, Number(startAt) - Date.now()))
);
for (let i = 0; i < Number(count); i++) {
  await schedule(async () => {
    const response = await client.fetch("organizations");
    await response.body?.cancel();
  });
}
const endAt = Date.now();
await close();
console.log(JSON.stringify({ refused, endAt, answered }));

async function limiterOf(kind: string, where: string): Promise<{
  rateLimit: RateLimiter | false;
  schedule: (job: () => Promise<void>) => Promise<void>;
  close: () => Promise<void>;
}> {
  const direct = (job: () => Promise<void>) => job();
  if (kind === "kv") {
    const kv = await openKv(where);
    const rateLimit = createKvRateLimiter(kv, limit);
    return {
      rateLimit,
      schedule: direct,
      close: async () => {
        await rateLimit[Symbol.asyncDispose]();
        kv.close();
      },
    };
  }
  if (kind === "redis") {
    const redis = await connectRedis(Number(where));
    const rateLimit = createRedisRateLimiter({
      command: (args) => redis.command(args),
      ...limit,
    });
    return {
      rateLimit,
      schedule: direct,
      close: async () => {
        await rateLimit[Symbol.asyncDispose]();
        redis.close();
      },
    };
  }
  const { default: Bottleneck } = await import("bottleneck");
  const bottleneck = new Bottleneck({
    id: "fleet-rate-bench",
    datastore: "ioredis",
    clearDatastore: false,
    clientOptions: { host: "127.0.0.1", port: Number(where) },
    reservoir: limit.requests,
    reservoirRefreshAmount: limit.requests,
    reservoirRefreshInterval: limit.interval,
  });
  return {
    rateLimit: false,
    schedule: (job) => bottleneck.schedule(job),
    close: () => bottleneck.disconnect(),
  };
}
