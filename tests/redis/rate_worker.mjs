// One process of a fleet sharing one rate limit on Redis, on Deno, Node or
// Bun, through the bundles the test task builds. Waits for the common start
// moment, sends its requests one after another through a client paced by
// createRedisRateLimiter, and prints what it saw.
//
//   node tests/redis/rate_worker.mjs <bundles> <redis port> <start epoch ms> <requests>
//
// The fake's addresses, the credentials (_worker.mjs) and the limit come
// from PARTNER_API_* variables.

import { startWorker } from "./_worker.mjs";

// One try per command: a process must notice at once that Redis is away.
const { args, lib, redisLib, runtime, redis, env, options } = await startWorker(
  { maxRetriesPerRequest: 1 },
);
const [startAt, count] = args;
let degraded = 0;
const statuses = {};
const onEvent = (event) => {
  if (event.type === "rate.degraded") degraded++;
  if (event.type === "api.request") {
    statuses[event.status] = (statuses[event.status] ?? 0) + 1;
  }
};
const rateLimit = redisLib.createRedisRateLimiter({
  command: redis.command,
  requests: Number(env("RATE_REQUESTS")),
  interval: Number(env("RATE_INTERVAL")),
  prefix: env("RATE_PREFIX"),
  commandTimeout: 300,
  onEvent,
});
const client = lib.createClient({ ...options, rateLimit, onEvent });
await new Promise((done) =>
  setTimeout(done, Math.max(0, Number(startAt) - Date.now()))
);
for (let i = 0; i < Number(count); i++) {
  const response = await client.fetch("organizations");
  await response.body?.cancel();
}
const endAt = Date.now();
await rateLimit[Symbol.asyncDispose]();
await redis.close();
console.log(JSON.stringify({ runtime, statuses, degraded, endAt }));
// A rejection nobody handled (a command answered after its time limit)
// would end the process with an error while it waits here.
await new Promise((done) => setTimeout(done, 300));
