// One rate limit for every process on this address, through Redis:
//
//   deno run --env-file=.env --allow-net --allow-env examples/redis_rate_limit.ts
//
// (with the PARTNER_API_* variables in .env and REDIS_URL, or a Redis on
// 127.0.0.1:6379). docs/fleets.md shows this file from its first import.

import { Redis } from "ioredis";
import { configFromEnv, createClient } from "@partner-api/client";
import { createRedisRateLimiter } from "@partner-api/client/redis";

const redis = new Redis(Deno.env.get("REDIS_URL") ?? "redis://127.0.0.1:6379");
const client = createClient({
  ...configFromEnv(),
  rateLimit: createRedisRateLimiter({
    command: (args) => redis.call(...args as [string, ...string[]]),
  }),
});
const response = await client.fetch("organizations");
console.log(response.status);
await response.body?.cancel();
// disconnect(), not quit(): quit() waits on a Redis that is away.
redis.disconnect();
