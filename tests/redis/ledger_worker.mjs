// One short-lived process of a Redis fleet (a CLI run, a new isolate), on
// Deno, Node or Bun through the bundles: a client over the shared Redis
// store makes one call to a path the test has made answer 401, and prints
// the status it got.
//
//   node tests/redis/ledger_worker.mjs <bundles> <redis port>
//
// The environment and credentials come from PARTNER_API_* variables.

import { startWorker } from "./_worker.mjs";

const { lib, redisLib, runtime, redis, options } = await startWorker();
const client = lib.createClient({
  ...options,
  store: redisLib.createRedisTokenStore({ command: redis.command }),
});
const response = await client.fetch("organizations");
await response.body?.cancel();
console.log(JSON.stringify({ runtime, status: response.status }));
await redis.close();
