// Live traffic first: a service and a nightly sync on one address share one
// budget through Redis, each with its priority. Run the sync as one
// process and the service as others; the sync yields to the service:
//
//   deno run --env-file=.env --allow-net --allow-env --allow-read=. --allow-write=. examples/live_and_nightly.ts
//
// (with the PARTNER_API_* variables in .env and REDIS_URL, or a Redis on
// 127.0.0.1:6379). The README shows this file from its first import.

import { Redis } from "ioredis";
import { configFromEnv, createClient } from "@partner-api/client";
import { createRedisRateLimiter } from "@partner-api/client/redis";
import { createSqliteSink, syncList } from "@partner-api/client/sync";

const redis = new Redis(Deno.env.get("REDIS_URL") ?? "redis://127.0.0.1:6379");
// One budget for every process on this address: 900 requests per 5
// minutes, of which the last 90 of any window are kept for live calls.
const rateLimit = createRedisRateLimiter({
  command: (args) => redis.call(...args as [string, ...string[]]),
  reserve: 90,
});
// The service's own calls are live ("auto"): they take any slot, first.
const service = createClient({ ...configFromEnv(), rateLimit });
const response = await service.fetch("organizations");
console.log(`live call: ${response.status}`);
await response.body?.cancel();
// The nightly copy reads at "low" (syncList's default), and with
// maxDuration sweeps for as long as the budget has spare slots, up to an hour.
using sink = createSqliteSink("transactions.db", { table: "transactions" });
const result = await syncList(service, "transactions", {
  id: "transactionID",
  sortBy: "creationDate",
  sink,
  priority: "low",
  maxDuration: 3_600_000,
});
// No sweep request this run (a first run reads the list whole): when it last was.
const { nextVerifiedAt: next, verifiedAt: last } = result;
const verified = next !== undefined
  ? `next verified whole by ${new Date(next).toISOString()}`
  : `verified whole ${
    last === undefined ? "never" : new Date(last).toISOString()
  }`;
console.log(
  `copy: ${result.inserted} new, ${result.updated} changed, ${result.deleted} removed; ${verified}`,
);
await rateLimit[Symbol.asyncDispose]();
// disconnect(), not quit(): quit() waits on a Redis that is away.
redis.disconnect();
