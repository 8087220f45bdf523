// One process of a Redis fleet, on Deno, Node or Bun, through the bundles
// the test task builds. Waits for the fleet's start (_worker.mjs), gets a
// token and prints {runtime, token} (a hash, never the token).
//
//   node tests/redis/fleet_worker.mjs <bundles> <redis port> <start> [<key> <signal file>]
//
// With a key and a signal file: once it has its token it counts itself in
// Redis (INCR <key>:tokens) and waits for the test to create the signal
// file (the test does once every process has a token and Redis is gone),
// then gets a second token without Redis.
//
// Credentials come from PARTNER_API_* variables (_worker.mjs).

import { hashOf, signalled, startWorker, waitForStart } from "./_worker.mjs";

const { args, lib, redisLib, runtime, redis, options } = await startWorker();
const [start, key, signal] = args;
const provider = lib.createTokenProvider({
  ...options,
  store: redisLib.createRedisTokenStore({
    command: redis.command,
    pollInterval: 20,
    commandTimeout: 500,
  }),
});
await waitForStart(redis, start);
const token = await provider.getToken();
let second;
if (signal !== undefined) {
  await redis.command(["INCR", `${key}:tokens`]);
  // Redis is gone by then: this process needs a new token all the same.
  while (!signalled(signal)) {
    await new Promise((done) => setTimeout(done, 10));
  }
  await provider.invalidate(token.accessToken);
  second = await hashOf((await provider.getToken()).accessToken);
}
console.log(
  JSON.stringify({ runtime, token: await hashOf(token.accessToken), second }),
);
await redis.close();
// A rejection nobody handled (a command answered after its time limit)
// would end the process with an error while it waits here.
await new Promise((done) => setTimeout(done, 200));
