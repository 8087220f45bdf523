// One process of a fleet sharing one rate limit on a KV file: waits for the
// common start moment, sends its requests one after another through a client
// paced by createKvRateLimiter, and prints what it saw. With an outage time
// it closes its database then (as a store that fails) and goes on alone.
//
//   deno run --allow-net=127.0.0.1 --allow-env='PARTNER_API_*' \
//     --allow-read=<dir> --allow-write=<dir> kv_rate_worker.ts \
//     <kv file> <start epoch ms> <requests> <limit requests> <limit ms> [<outage epoch ms>]

import { configFromEnv } from "../../src/core/config.ts";
import { createClient } from "../../src/client/mod.ts";
import { createKvRateLimiter } from "../../src/store/kv.ts";
import type { PartnerApiEvent } from "../../src/core/events.ts";
import { openKv } from "./_open_kv.ts";

const [kvPath, startAt, count, requests, interval, outageAt] = Deno.args;

const kv = await openKv(kvPath!);
let degraded = 0;
const onEvent = (event: PartnerApiEvent) => {
  if (event.type === "rate.degraded") degraded++;
};
const rateLimit = createKvRateLimiter(kv, {
  requests: Number(requests),
  interval: Number(interval),
  onEvent,
});
const client = createClient({
  ...configFromEnv(),
  rateLimit,
  onEvent,
});
await new Promise((resolve) =>
  setTimeout(resolve, Math.max(0, Number(startAt) - Date.now()))
);
const outage = outageAt === undefined ? undefined : setTimeout(
  () => kv.close(),
  Math.max(0, Number(outageAt) - Date.now()),
);
for (let i = 0; i < Number(count); i++) {
  const response = await client.fetch("organizations");
  await response.body?.cancel();
}
const endAt = Date.now();
await rateLimit[Symbol.asyncDispose]();
clearTimeout(outage);
try {
  kv.close();
} catch {
  // closed at the outage already
}
console.log(JSON.stringify({ degraded, endAt }));
