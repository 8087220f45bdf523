// One process of a Redis fleet, on Deno, Node or Bun, through the bundles
// the test task builds. Waits for the common start moment, gets a token and
// prints {runtime, token} (a hash, never the token).
//
//   node tests/redis/fleet_worker.mjs <bundles> <redis port> <start epoch ms> [<outage epoch ms>]
//
// With an outage time, it gets a second token after Redis is gone.
//
// Credentials come from PARTNER_API_* variables. Node talks to Redis through
// ioredis, Bun through node-redis, Deno through the tests' RESP client: the
// store needs nothing but a command function from any of them.

import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { connect } from "./_connect.mjs";

const [bundleDir, port, startAt, outageAt] = globalThis.Deno?.args ??
  process.argv.slice(2);
const bundles = pathToFileURL(resolve(bundleDir)).href;
const { createTokenProvider } = await import(`${bundles}/partner-api.mjs`);
const { createRedisTokenStore } = await import(`${bundles}/redis.mjs`);
const env = (name) =>
  globalThis.Deno?.env.get(`PARTNER_API_${name}`) ??
    process.env[`PARTNER_API_${name}`];
const runtime = globalThis.Deno ? "deno" : globalThis.Bun ? "bun" : "node";

const redis = await connect(bundles, runtime, port);
const provider = createTokenProvider({
  tokenUrl: env("TOKEN_URL"),
  audience: env("AUDIENCE"),
  clientId: env("CLIENT_ID"),
  clientSecret: env("CLIENT_SECRET"),
  store: createRedisTokenStore({
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
