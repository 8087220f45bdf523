// deno task bench
//
// Scale out, measured side by side in one run (real time, real sockets):
//
// 1. A crawl of 20,000 items (limit 50, concurrency 4) through the fake's
//    rate limit of 90 requests per 3 s (the service's 900 per 5 minutes,
//    scaled down), paced by the client and with `rateLimit: false`. The
//    floor is the limit itself: (⌈requests / 90⌉ - 1) × 3 s.
// 2. Fleets of 1, 4, 8 and 32 providers (each with its own store
//    connection, as processes would have) over ten token lifetimes, on
//    Redis and on KV, with the store down in the middle of one lifetime:
//    token requests per refresh (goal ≤ 1.2) and first-token p99 against
//    one process alone, the floor (goal ≤ 2×).

import { createClient } from "../src/client/mod.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { createKvTokenStore } from "../src/store/kv.ts";
import { createRedisTokenStore } from "../src/store/redis.ts";
import type { TokenStore } from "../src/store/mod.ts";
import { createRateLimiter } from "../src/client/rate_limit.ts";
import {
  createFakePartnerService,
  startFakePartnerApi,
} from "../src/testing/mod.ts";
import { manualClock } from "./_helpers.ts";
import { connectRedis, type RedisClient } from "./redis/_resp.ts";
import { redisInstalled, startRedis } from "./redis/_redis_server.ts";

const LIMIT = { requests: 90, interval: 3000 };
const ITEMS = 20_000;

/** Crawls every transaction; counts answers by status. */
async function crawl(rateLimit: typeof LIMIT | false) {
  const service = createFakePartnerService({
    items: { transactions: ITEMS },
    apiRateLimit: LIMIT,
    quota: { perHour: 1e6, perDay: 1e6 },
  });
  const statuses = new Map<number, number>();
  const serve = (handler: (request: Request) => Promise<Response>) =>
    Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  const api = serve(async (request) => {
    const response = await service.handle(request);
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    return response;
  });
  const pci = serve(async (request) => await service.handlePci(request));
  const origin = (server: Deno.HttpServer<Deno.NetAddr>) =>
    `http://127.0.0.1:${server.addr.port}`;
  const client = createClient({
    environment: service.environmentAt(origin(api), origin(pci)),
    ...service.credentials,
    rateLimit,
  });
  const started = performance.now();
  let items = 0;
  let failed = 0;
  try {
    for await (
      const _ of client.list("transactions", { limit: 50, concurrency: 4 })
    ) items++;
  } catch {
    failed++;
  }
  const ms = performance.now() - started;
  service.close();
  await Promise.all([api.shutdown(), pci.shutdown()]);
  const requests = [...statuses].reduce((sum, [, n]) => sum + n, 0) - 1; // - token
  // The first `requests` go at once, the next when they leave the window...
  const floor = (Math.ceil(requests / LIMIT.requests) - 1) * LIMIT.interval;
  return {
    rateLimit: rateLimit === false ? "false" : "90 per 3 s",
    items,
    "429s": statuses.get(429) ?? 0,
    "failed calls": failed,
    "time (s)": (ms / 1000).toFixed(1),
    "time ÷ floor": failed > 0 ? "-" : (ms / floor).toFixed(3),
  };
}

console.log("Crawl of 20,000 items at c=4 through 90 requests per 3 s");
console.table([await crawl(LIMIT), await crawl(false)]);

/** A store that fails while `down()` says so, as a database in an outage. */
function failing(store: TokenStore, down: () => boolean): TokenStore {
  const outage = () => Promise.reject(new Error("store unavailable"));
  return {
    get: (key) => down() ? outage() : store.get(key),
    set: (key, record) => down() ? outage() : store.set(key, record),
    discard: (key, token) => down() ? outage() : store.discard!(key, token),
    coordinate: (key, options) =>
      down() ? outage() : store.coordinate!(key, options),
  };
}

/**
 * Ten lifetimes of a fleet of `size` on one store kind, with the store down
 * for the middle of the sixth (the tokens are valid: nobody needs a new one
 * until it is back). Counts token requests per refresh and times each
 * first getToken() of a lifetime.
 */
async function fleetOverLifetimes(
  size: number,
  storeFor: (now: () => number) => Promise<TokenStore>,
) {
  const lifetime = 3_600_000;
  await using api = await startFakePartnerApi({
    tokenLifetime: lifetime,
    quota: { perHour: 1e6, perDay: 1e6 },
  });
  const clock = manualClock(Date.now());
  let down = false;
  const fleet = await Promise.all(
    Array.from({ length: size }, async () =>
      createTokenProvider({
        ...api.environment,
        ...api.credentials,
        store: failing(await storeFor(clock), () => down),
        now: clock,
      })),
  );
  const times: number[] = [];
  const everyone = () =>
    Promise.all(fleet.map(async (provider) => {
      const started = performance.now();
      await provider.getToken();
      return performance.now() - started;
    }));
  let duringOutage = 0;
  for (let life = 0; life < 10; life++) {
    times.push(...await everyone());
    if (life === 5) {
      clock.advance(lifetime / 2);
      down = true;
      const before = api.tokenRequests;
      await everyone();
      duringOutage = api.tokenRequests - before;
      down = false;
      clock.advance(lifetime / 2);
    } else clock.advance(lifetime);
  }
  times.sort((a, b) => a - b);
  return {
    perLifetime: (api.tokenRequests - duringOutage) / 10,
    duringOutage,
    p99: times[Math.max(0, Math.ceil(times.length * 0.99) - 1)]!,
  };
}

const rows = [];
const kv = await Deno.openKv(":memory:");
const redis = redisInstalled ? await startRedis() : undefined;
const connections: RedisClient[] = [];
const alone: Record<string, number> = {};
for (const size of [1, 4, 8, 32]) {
  const prefix = crypto.randomUUID(); // a fresh record for each fleet
  const onKv = await fleetOverLifetimes(
    size,
    (now) => Promise.resolve(createKvTokenStore(kv, { now, prefix: [prefix] })),
  );
  const onRedis = redis && await fleetOverLifetimes(size, async (now) => {
    const connection = await connectRedis(redis.port);
    connections.push(connection);
    return createRedisTokenStore({ command: connection.command, now, prefix });
  });
  if (size === 1) {
    alone.kv = onKv.p99;
    alone.redis = onRedis?.p99 ?? NaN;
  }
  rows.push({
    processes: size,
    "requests/refresh KV": onKv.perLifetime,
    "requests/refresh Redis": onRedis?.perLifetime ?? "no redis-server",
    "in the outage KV": onKv.duringOutage,
    "first token p99 KV (ms, ÷ one)": `${onKv.p99.toFixed(1)} (${
      (onKv.p99 / alone.kv!).toFixed(2)
    }×)`,
    "first token p99 Redis (ms, ÷ one)": onRedis
      ? `${onRedis.p99.toFixed(1)} (${
        (onRedis.p99 / alone.redis!).toFixed(2)
      }×)`
      : "-",
  });
}
for (const connection of connections) connection.close();
await redis?.kill();
kv.close();
console.log(
  "Fleets over ten token lifetimes, the store down mid-lifetime once (goals: ≤ 1.2 requests per refresh, p99 ≤ 2× one process)",
);
console.table(rows);

// What pacing adds to one request when a slot is free: the window check.
let time = 0;
const limiter = createRateLimiter({
  requests: 900,
  interval: 1,
  now: () => time += 2, // every slot is free again by the next take
});
Deno.bench({
  name: "rate limiter: take a free slot and answer it",
  fn: () => {
    const ticket = limiter.take();
    if (typeof ticket !== "number") throw new Error("no free slot");
    limiter.answered(ticket);
  },
});
