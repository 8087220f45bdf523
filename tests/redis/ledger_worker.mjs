// One short-lived process of a Redis fleet (a CLI run, a new isolate), on
// Deno, Node or Bun through the bundles: a client over the shared Redis
// store makes one call to a path the test has made answer 401, and prints
// the status it got.
//
//   node tests/redis/ledger_worker.mjs <bundles> <redis port>
//
// The environment and credentials come from PARTNER_API_* variables.

import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { connect } from "./_connect.mjs";

const [bundleDir, port] = globalThis.Deno?.args ?? process.argv.slice(2);
const bundles = pathToFileURL(resolve(bundleDir)).href;
const { createClient, defineEnvironment } = await import(
  `${bundles}/partner-api.mjs`
);
const { createRedisTokenStore } = await import(`${bundles}/redis.mjs`);
const env = (name) =>
  globalThis.Deno?.env.get(`PARTNER_API_${name}`) ??
    process.env[`PARTNER_API_${name}`];
const runtime = globalThis.Deno ? "deno" : globalThis.Bun ? "bun" : "node";

const redis = await connect(bundles, runtime, port);
const client = createClient({
  environment: defineEnvironment({
    baseUrl: env("BASE_URL"),
    pciBaseUrl: env("PCI_BASE_URL"),
    tokenUrl: env("TOKEN_URL"),
    audience: env("AUDIENCE"),
  }),
  clientId: env("CLIENT_ID"),
  clientSecret: env("CLIENT_SECRET"),
  store: createRedisTokenStore({ command: redis.command }),
});
const response = await client.fetch("organizations");
await response.body?.cancel();
console.log(JSON.stringify({ runtime, status: response.status }));
await redis.close();
