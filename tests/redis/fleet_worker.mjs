// One process of a Redis fleet, on Deno, Node or Bun, through the bundles
// the test task builds. Waits for the common start moment, gets a token and
// prints {runtime, token} (a hash, never the token).
//
//   node tests/redis/fleet_worker.mjs <bundles> <redis port> <start epoch ms> [<outage epoch ms>]
//
// With an outage time, it gets a second token after Redis is gone.
//
// Credentials come from PARTNER_API_* variables (_worker.mjs).

import { startWorker } from "./_worker.mjs";

const { args, lib, redisLib, runtime, redis, options } = await startWorker();
const [startAt, outageAt] = args;
const provider = lib.createTokenProvider({
  ...options,
  store: redisLib.createRedisTokenStore({
    command: redis.command,
    pollInterval: 20,
    commandTimeout: 500,
  }),
});
await new Promise((done) =>
  setTimeout(done, Math.max(0, Number(startAt) - Date.now()))
);
const token = await provider.getToken();
let second;
if (outageAt !== undefined) {
  // Redis is gone by now: this process needs a new token all the same.
  await new Promise((done) =>
    setTimeout(done, Math.max(0, Number(outageAt) + 300 - Date.now()))
  );
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

/** A short hash of a token: never the token. */
async function hashOf(accessToken) {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(accessToken),
  );
  return Array.from(
    new Uint8Array(digest).slice(0, 8),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}
