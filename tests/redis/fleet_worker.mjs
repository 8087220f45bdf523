// One process of a Redis fleet, on Deno, Node or Bun, through the bundles
// the test task builds. Waits for the common start moment, gets a token and
// prints {runtime, token} (a hash, never the token).
//
//   node tests/redis/fleet_worker.mjs <bundles> <redis port> <start epoch ms>
//
// Credentials come from PARTNER_API_* variables. Node talks to Redis through
// ioredis, Bun through node-redis, Deno through the tests' RESP client: the
// store needs nothing but a command function from any of them.

import { createRequire } from "node:module";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [bundleDir, port, startAt] = globalThis.Deno?.args ??
  process.argv.slice(2);
const bundles = pathToFileURL(resolve(bundleDir)).href;
const { createTokenProvider } = await import(`${bundles}/partner-api.mjs`);
const { createRedisTokenStore } = await import(`${bundles}/redis.mjs`);
const env = (name) =>
  globalThis.Deno?.env.get(`PARTNER_API_${name}`) ??
    process.env[`PARTNER_API_${name}`];
const runtime = globalThis.Deno ? "deno" : globalThis.Bun ? "bun" : "node";

/** A command function, and how to close the connection. */
async function connect() {
  const require = createRequire(`${bundles}/`);
  if (runtime === "node") {
    const { Redis } = require("ioredis");
    const client = new Redis({ port: Number(port), host: "127.0.0.1" });
    return {
      command: (args) => client.call(...args),
      close: () => client.quit(),
    };
  }
  if (runtime === "bun") {
    const { createClient } = require("redis");
    const client = await createClient({ url: `redis://127.0.0.1:${port}` })
      .connect();
    return {
      command: (args) => client.sendCommand(args),
      close: () => client.quit(),
    };
  }
  const { connectRedis } = await import("./_resp.ts");
  return await connectRedis(Number(port));
}

const redis = await connect();
const provider = createTokenProvider({
  tokenUrl: env("TOKEN_URL"),
  audience: env("AUDIENCE"),
  clientId: env("CLIENT_ID"),
  clientSecret: env("CLIENT_SECRET"),
  store: createRedisTokenStore({ command: redis.command, pollInterval: 20 }),
});
await new Promise((done) =>
  setTimeout(done, Math.max(0, Number(startAt) - Date.now()))
);
const token = await provider.getToken();
const digest = await crypto.subtle.digest(
  "SHA-256",
  new TextEncoder().encode(token.accessToken),
);
const hash = Array.from(
  new Uint8Array(digest).slice(0, 8),
  (b) => b.toString(16).padStart(2, "0"),
).join("");
console.log(JSON.stringify({ runtime, token: hash }));
await redis.close();
