// One process over a Redis token store, on Deno, Node or Bun, through the
// bundles the test task builds, for the store's issue 38 cases. It watches
// its own connection: the largest reply Redis sent it, in bytes.
//
//   node tests/redis/store_worker.mjs <bundles> <redis port> token <start>
//     waits for the fleet's start (_worker.mjs), gets a token, prints
//     {runtime, token, largest} (a hash of the token, never the token);
//   node tests/redis/store_worker.mjs <bundles> <redis port> rollback <key> <signal> <signal>
//     gets a token, says so (INCR <key>:first) and waits for the first
//     signal file (the test copies the record meanwhile); renews the token
//     (the API said 401), says so (INCR <key>:renewed) and waits for the
//     second (the test has put the copy back); then a second provider of
//     this process over the same store gets a token. Prints the hashes
//     {runtime, first, renewed, after}.
//
// Credentials come from PARTNER_API_* variables (_worker.mjs).

import { hashOf, signalled, startWorker, waitForStart } from "./_worker.mjs";

const { args, lib, redisLib, runtime, redis, options } = await startWorker();
const [mode, ...rest] = args;
let largest = 0;
const command = async (command) => {
  const reply = await redis.command(command);
  largest = Math.max(largest, sizeOf(reply));
  return reply;
};
const store = redisLib.createRedisTokenStore({
  command,
  pollInterval: 20,
  commandTimeout: 2000,
});
const provider = () => lib.createTokenProvider({ ...options, store });
let line;
if (mode === "token") {
  await waitForStart(redis, rest[0]);
  const token = await provider().getToken();
  line = { runtime, token: await hashOf(token.accessToken), largest };
} else {
  const [key, copied, replayed] = rest;
  const waitFor = async (signal) => {
    while (!signalled(signal)) {
      await new Promise((done) => setTimeout(done, 10));
    }
  };
  const first = provider();
  const token = await first.getToken();
  await redis.command(["INCR", `${key}:first`]);
  await waitFor(copied);
  await first.reportUnauthorized(token.accessToken); // the API said 401
  const renewed = await first.getToken();
  await redis.command(["INCR", `${key}:renewed`]);
  await waitFor(replayed);
  const after = await provider().getToken();
  line = {
    runtime,
    first: await hashOf(token.accessToken),
    renewed: await hashOf(renewed.accessToken),
    after: await hashOf(after.accessToken),
  };
}
console.log(JSON.stringify(line));
await redis.close();
// A rejection nobody handled would end the process with an error here.
await new Promise((done) => setTimeout(done, 200));

/** Bytes of a reply, nested replies summed. */
function sizeOf(reply) {
  if (typeof reply === "string") return new TextEncoder().encode(reply).length;
  if (reply instanceof Uint8Array) return reply.length;
  if (Array.isArray(reply)) return reply.reduce((sum, r) => sum + sizeOf(r), 0);
  return 0;
}
