// One process of a fleet sharing one rate limit on Redis, on Deno, Node or
// Bun, through the bundles the test task builds. Waits for the fleet's start
// (_worker.mjs: now, a moment, or a barrier in Redis), sends its requests one
// after another through a client paced by createRedisRateLimiter, and prints
// what it saw. With a signal file, it counts the requests it began after the
// test created that file (the test does once it has killed Redis).
//
//   node tests/redis/rate_worker.mjs <bundles> <redis port> <start> <requests> [<signal file>]
//
// The fake's addresses, the credentials (_worker.mjs) and the limit come
// from PARTNER_API_* variables.

import { signalled, startWorker, waitForStart } from "./_worker.mjs";

// One try per command: a process must notice at once that Redis is away.
const { args, lib, redisLib, runtime, redis, env, options } = await startWorker(
  { maxRetriesPerRequest: 1 },
);
const [start, count, signal] = args;
let degraded = 0;
let restored = 0;
let afterSignal = 0;
const statuses = {};
const onEvent = (event) => {
  if (event.type === "rate.degraded") degraded++;
  if (event.type === "rate.restored") restored++;
  if (event.type === "api.request") {
    statuses[event.status] = (statuses[event.status] ?? 0) + 1;
  }
};
const rateLimit = redisLib.createRedisRateLimiter({
  command: redis.command,
  requests: Number(env("RATE_REQUESTS")),
  interval: Number(env("RATE_INTERVAL")),
  prefix: env("RATE_PREFIX"),
  commandTimeout: Number(env("RATE_COMMAND_TIMEOUT") ?? 300),
  onEvent,
});
const client = lib.createClient({ ...options, rateLimit, onEvent });
await waitForStart(redis, start);
for (let i = 0; i < Number(count); i++) {
  if (signal !== undefined && signalled(signal)) afterSignal++;
  const response = await client.fetch("organizations");
  await response.body?.cancel();
}
await rateLimit[Symbol.asyncDispose]();
await redis.close();
console.log(
  JSON.stringify({ runtime, statuses, degraded, restored, afterSignal }),
);
// A rejection nobody handled (a command answered after its time limit)
// would end the process with an error while it waits here.
await new Promise((done) => setTimeout(done, 300));
