// What every process of a Redis fleet starts with, on Deno, Node or Bun: its
// arguments, the bundles the test task builds, the fake's addresses and
// credentials from PARTNER_API_* variables, and a Redis connection.
//
//   <worker>.mjs <bundles> <redis port> [...the worker's own arguments]

import { statSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { connect } from "./_connect.mjs";

/**
 * Imports the bundles named on the command line and connects to Redis;
 * `ioredisOptions` go to ioredis as they are. `args` are the arguments after
 * the Redis port; `lib` and `redisLib` the bundles of `.` and `./redis`;
 * `options` what a client or provider needs to reach the fake.
 */
export async function startWorker(ioredisOptions = {}) {
  const [bundleDir, port, ...args] = globalThis.Deno?.args ??
    process.argv.slice(2);
  const bundles = pathToFileURL(resolve(bundleDir)).href;
  const lib = await import(`${bundles}/partner-api.mjs`);
  const redisLib = await import(`${bundles}/redis.mjs`);
  const runtime = globalThis.Deno ? "deno" : globalThis.Bun ? "bun" : "node";
  const redis = await connect(bundles, runtime, port, ioredisOptions);
  const env = (name) =>
    globalThis.Deno?.env.get(`PARTNER_API_${name}`) ??
      process.env[`PARTNER_API_${name}`];
  const options = {
    environment: lib.defineEnvironment({
      baseUrl: env("BASE_URL"),
      pciBaseUrl: env("PCI_BASE_URL"),
      tokenUrl: env("TOKEN_URL"),
      audience: env("AUDIENCE"),
    }),
    clientId: env("CLIENT_ID"),
    clientSecret: env("CLIENT_SECRET"),
  };
  return { args, lib, redisLib, runtime, redis, env, options };
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/**
 * Waits for the fleet's start: `"now"`, a moment (epoch ms), or
 * `"barrier:<key>"`: the worker counts itself in (INCR <key>:ready) and
 * waits until the test sets <key>:go, once every worker is in. No worker
 * starts late, however slowly the machine started it.
 */
export async function waitForStart(redis, start) {
  if (start.startsWith("barrier:")) {
    const key = start.slice("barrier:".length);
    await redis.command(["INCR", `${key}:ready`]);
    while (!await redis.command(["GET", `${key}:go`])) await sleep(10);
  } else if (start !== "now") {
    await sleep(Math.max(0, Number(start) - Date.now()));
  }
}

/** Whether the test has signalled, by creating the file at `path`. */
export function signalled(path) {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** A short hash of a token: never the token. */
export async function hashOf(accessToken) {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(accessToken),
  );
  return Array.from(
    new Uint8Array(digest).slice(0, 8),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}
