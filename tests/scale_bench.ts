// deno task bench
//
// Scale out, measured side by side in one run (real time, real sockets):
//
// 1. A crawl of 20,000 items (limit 50, concurrency 4) through the fake's
//    rate limit of 90 requests per 3 s (the service's 900 per 5 minutes,
//    scaled down), paced by the client and with `rateLimit: false`. The
//    floor is the limit itself: (⌈requests / 90⌉ - 1) × 3 s.
// 2. Fleets of 1, 4, 8 and 32 providers in this one process (each with its
//    own store connection, as processes would have) over ten token
//    lifetimes, on KV and on Redis (woken through a second connection to
//    block on, and polling), with the store down in the middle of one
//    lifetime:
//    token requests per refresh (goal ≤ 1) and first-token p99 against
//    one process alone, the floor (goal ≤ 2×), each p99 read from as many
//    samples, after a warm-up.

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
    update: (key, change) => down() ? outage() : store.update!(key, change),
    coordinate: (key, options) =>
      down() ? outage() : store.coordinate!(key, options),
  };
}

/** One process's connection to the fleet's store, under the fleet's prefix. */
type StoreFor = (now: () => number, prefix: string) => Promise<TokenStore>;

/**
 * Ten lifetimes of a fleet of `size` on one store kind, with the store down
 * for the middle of the sixth (the tokens are valid: nobody needs a new one
 * until it is back). Counts token requests per refresh and times each
 * first getToken() of a lifetime.
 */
async function fleetOverLifetimes(
  size: number,
  storeFor: StoreFor,
) {
  const lifetime = 3_600_000;
  await using api = await startFakePartnerApi({
    tokenLifetime: lifetime,
    quota: { perHour: 1e6, perDay: 1e6 },
  });
  const clock = manualClock(Date.now());
  const prefix = crypto.randomUUID(); // a record of the fleet's own
  let down = false;
  const fleet = await Promise.all(
    Array.from({ length: size }, async () =>
      createTokenProvider({
        ...api.environment,
        ...api.credentials,
        store: failing(await storeFor(clock, prefix), () => down),
        now: clock,
      })),
  );
  const times: number[] = [];
  const cold: number[] = [];
  const everyone = () =>
    Promise.all(fleet.map(async (provider) => {
      const started = performance.now();
      await provider.getToken();
      return performance.now() - started;
    }));
  let duringOutage = 0;
  for (let life = 0; life < 10; life++) {
    // The first lifetime also stretches the new secret into the store key
    // (PBKDF2, once per secret in a process): timed apart, not pooled.
    const took = await everyone();
    if (life === 0) cold.push(...took);
    else times.push(...took);
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
  return {
    perLifetime: (api.tokenRequests - duringOutage) / 10,
    duringOutage,
    times,
    cold,
  };
}

/** First-token times pooled per fleet, so that every size has as many. */
const SAMPLES = 960;

/**
 * Runs fleets of `size` until {@linkcode SAMPLES} first-token times of
 * lifetimes 2-10 are pooled (one process alone: 107 runs), so that every p99
 * is read from as many samples as the 32-process fleet's.
 */
async function pooledFleets(size: number, storeFor: StoreFor) {
  const times: number[] = [];
  const cold: number[] = [];
  let perLifetime = 0;
  let duringOutage = 0;
  while (times.length < SAMPLES) {
    const run = await fleetOverLifetimes(size, storeFor);
    times.push(...run.times);
    cold.push(...run.cold);
    perLifetime = Math.max(perLifetime, run.perLifetime);
    duringOutage = Math.max(duringOutage, run.duringOutage);
  }
  const at = (values: number[], share: number) =>
    values.toSorted((a, b) => a - b)[Math.ceil(values.length * share) - 1]!;
  return {
    perLifetime,
    duringOutage,
    p50: at(times, 0.5),
    p99: at(times, 0.99),
    coldP50: at(cold, 0.5),
  };
}

const kv = await Deno.openKv(":memory:");
const redis = redisInstalled ? await startRedis() : undefined;
const connections: RedisClient[] = [];
const onKv: StoreFor = (now, prefix) =>
  Promise.resolve(createKvTokenStore(kv, { now, prefix: [prefix] }));
/** A process's Redis store: woken by the holder's write, or polling. */
const onRedis = (woken: boolean): StoreFor => async (now, prefix) => {
  const connection = await connectRedis(redis!.port);
  connections.push(connection);
  const blocking = woken ? await connectRedis(redis!.port) : undefined;
  if (blocking) connections.push(blocking);
  return createRedisTokenStore({
    command: connection.command,
    ...(blocking ? { blockingCommand: blocking.command } : {}),
    now,
    prefix,
  });
};
// A warm-up, not reported: the one process alone, measured first, must not
// pay for compiling what every later fleet finds compiled.
await pooledFleets(8, onKv);
if (redis) await pooledFleets(8, onRedis(true));
const rows = [];
const alone: Record<string, number> = {};
const shown = (p99: number, floor: number) =>
  `${p99.toFixed(1)} (${(p99 / floor).toFixed(2)}×)`;
for (const size of [1, 4, 8, 32]) {
  const kvRun = await pooledFleets(size, onKv);
  const redisRun = redis && await pooledFleets(size, onRedis(true));
  const pollingRun = redis && await pooledFleets(size, onRedis(false));
  alone.kv ??= kvRun.p99;
  alone.redis ??= redisRun?.p99 ?? NaN;
  alone.polling ??= pollingRun?.p99 ?? NaN;
  rows.push({
    "providers, one process": size,
    "requests/refresh KV": kvRun.perLifetime,
    "requests/refresh Redis": redisRun?.perLifetime ?? "no redis-server",
    "in the outage": kvRun.duringOutage + (redisRun?.duringOutage ?? 0),
    "first token p50 KV / Redis (ms)": `${kvRun.p50.toFixed(1)} / ${
      redisRun?.p50.toFixed(1) ?? "-"
    }`,
    "p99 KV (ms, ÷ one)": shown(kvRun.p99, alone.kv),
    "p99 Redis woken (ms, ÷ one)": redisRun
      ? shown(redisRun.p99, alone.redis)
      : "-",
    "p99 Redis polling (ms, ÷ one)": pollingRun
      ? shown(pollingRun.p99, alone.polling)
      : "-",
    "first lifetime p50 KV / Redis (ms)": `${kvRun.coldP50.toFixed(1)} / ${
      redisRun?.coldP50.toFixed(1) ?? "-"
    }`,
  });
}
for (const connection of connections) connection.close();
await redis?.kill();
kv.close();
console.log(
  `Fleets of providers in this one process (the fake here too; KV in memory on its own thread, redis-server in its own process) over ten token lifetimes, the store down mid-lifetime once; p99 of ${SAMPLES} first tokens of lifetimes 2-10 per size (the first lifetime stretches the secret into the store key, PBKDF2: its p50 apart) (goals: ≤ 1 request per refresh, p99 ≤ 2× one process, the floor)`,
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
