// One process of a fleet sharing one rate limit on a KV file: waits for the
// common start moment, sends its requests one after another through a client
// paced by createKvRateLimiter, and prints what it saw. With an outage file:
// before each request it looks for that file, and once the test has created
// it, closes its database (as a store that fails) and goes on alone; it
// counts the requests it sent after. Its clock may be skewed (the limiter's
// `now` reads Date.now() plus PARTNER_API_SKEW ms), and with
// PARTNER_API_REFUSED set it tells its limiter of one 429 before it starts,
// as a process that met another user of the address would. With
// PARTNER_API_PARALLEL set, that many callers send at once; with
// PARTNER_API_PRIORITY=low the process crawls transactions in the background
// (`priority: "low"`); it begins PARTNER_API_DELAY ms after the start, and
// PARTNER_API_EACH overrides how many requests it sends.
//
//   deno run --allow-net=127.0.0.1 --allow-env='PARTNER_API_*' \
//     --allow-read=<dir> --allow-write=<dir> kv_rate_worker.ts \
//     <kv file> <start epoch ms> <requests> <limit requests> <limit ms> [<outage file>]

import { configFromEnv } from "../../src/core/config.ts";
import { createClient } from "../../src/client/mod.ts";
import { createKvRateLimiter } from "../../src/store/kv.ts";
import type { PartnerApiEvent } from "../../src/core/events.ts";
import { openKv } from "./_open_kv.ts";

const [kvPath, startAt, count, requests, interval, outageFile] = Deno.args;

const kv = await openKv(kvPath!);
let degraded = 0;
const onEvent = (event: PartnerApiEvent) => {
  if (event.type === "rate.degraded") degraded++;
  if (event.type === "api.request" && event.status === 429) refused++;
};
const skew = Number(Deno.env.get("PARTNER_API_SKEW") ?? 0);
let refused = 0;
const rateLimit = createKvRateLimiter(kv, {
  requests: Number(requests),
  interval: Number(interval),
  now: () => Date.now() + skew,
  onEvent,
});
const low = Deno.env.get("PARTNER_API_PRIORITY") === "low";
const client = createClient({
  ...configFromEnv(),
  rateLimit,
  onEvent,
  // A store failing lets a window's worth past the limit (DESIGN): a request may meet 429 more than the default 2
  // retries allow (1 of 120 failed so under CI's load); the tests count what the limiter sends, not the retry budget.
  retry: { retries: 10 },
  ...(low ? { priority: "low" as const } : {}),
});
const delay = Number(Deno.env.get("PARTNER_API_DELAY") ?? 0);
const total = Number(Deno.env.get("PARTNER_API_EACH") ?? count);
await new Promise((resolve) =>
  setTimeout(resolve, Math.max(0, Number(startAt) + delay - Date.now()))
);
if (Deno.env.get("PARTNER_API_REFUSED") !== undefined) rateLimit.refused();
/** Whether the test has created the outage file. */
const outage = () => {
  try {
    return outageFile !== undefined && Deno.statSync(outageFile).isFile;
  } catch {
    return false;
  }
};
let closed = false;
let afterOutage = 0;
const parallel = Number(Deno.env.get("PARTNER_API_PARALLEL") ?? 1);
let next = 0;
await Promise.all(Array.from({ length: parallel }, async () => {
  while (next++ < total) {
    if (!closed && outage()) {
      kv.close();
      closed = true;
    }
    if (closed) afterOutage++;
    const response = await client.fetch(low ? "transactions" : "organizations");
    await response.body?.cancel();
  }
}));
await rateLimit[Symbol.asyncDispose]();
if (!closed) kv.close();
console.log(JSON.stringify({ degraded, afterOutage, refused }));
