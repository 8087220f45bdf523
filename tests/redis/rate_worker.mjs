// One process of a fleet sharing one rate limit on Redis, on Deno, Node or
// Bun, through the bundles the test task builds. Waits for the common start
// moment, sends its requests one after another through a client paced by
// createRedisRateLimiter, and prints what it saw.
//
//   node tests/redis/rate_worker.mjs <bundles> <redis port> <start epoch ms> <requests>
//
// The fake's addresses, the credentials and the limit come from PARTNER_API_*
// variables. Node talks to Redis through ioredis, Bun through node-redis,
// Deno through the tests' RESP client.

import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { connect } from "./_connect.mjs";

const [bundleDir, port, startAt, count] = globalThis.Deno?.args ??
  process.argv.slice(2);
const bundles = pathToFileURL(resolve(bundleDir)).href;
const lib = await import(`${bundles}/partner-api.mjs`);
const { createRedisRateLimiter } = await import(`${bundles}/redis.mjs`);
const env = (name) =>
  globalThis.Deno?.env.get(`PARTNER_API_${name}`) ??
    process.env[`PARTNER_API_${name}`];
const runtime = globalThis.Deno ? "deno" : globalThis.Bun ? "bun" : "node";

// One try per command: a process must notice at once that Redis is away.
const redis = await connect(bundles, runtime, port, {
  maxRetriesPerRequest: 1,
});
let degraded = 0;
const statuses = {};
const onEvent = (event) => {
  if (event.type === "rate.degraded") degraded++;
  if (event.type === "api.request") {
    statuses[event.status] = (statuses[event.status] ?? 0) + 1;
  }
};
const rateLimit = createRedisRateLimiter({
  command: redis.command,
  requests: Number(env("RATE_REQUESTS")),
  interval: Number(env("RATE_INTERVAL")),
  prefix: env("RATE_PREFIX"),
  commandTimeout: 300,
  onEvent,
});
const client = lib.createClient({
  environment: lib.defineEnvironment({
    baseUrl: env("BASE_URL"),
    pciBaseUrl: env("PCI_BASE_URL"),
    tokenUrl: env("TOKEN_URL"),
    audience: env("AUDIENCE"),
  }),
  clientId: env("CLIENT_ID"),
  clientSecret: env("CLIENT_SECRET"),
  rateLimit,
  onEvent,
});
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
