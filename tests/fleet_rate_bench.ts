// deno task bench
//
// One rate limit for a fleet, side by side in one run:
//
// 1. Fleets of N = 2, 4 and 8 Deno processes crawling through a scaled
//    limit (90 requests per 1.5 s) against the fake's own limit (no
//    Retry-After), sharing it on Redis and on KV; Bottleneck's Redis
//    clustering beside them on the same server and limit. Reported: 429s
//    (goal 0), time ÷ floor (goal ≤ 1.10; the floor is the time the limit
//    itself needs) and fairness: each process's share of the requests
//    answered while all were sending, times N (1 is an even split; the
//    goal is at least 0.5, a 1/(2N) share).
//    A fleet's wall time is mostly process start-up, so the crawl is timed
//    from a common start moment, not with Deno.bench.
// 2. The cost of a take when the window is not full (Deno.bench): the
//    in-process limiter, the Redis limiter (and its Redis commands per
//    request) and the KV limiter.

import { createRateLimiter } from "../src/client/rate_limit.ts";
import { configFor } from "./_cli_helpers.ts";
import { createKvRateLimiter } from "../src/store/kv.ts";
import { createRedisRateLimiter } from "../src/store/redis.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { scratchDir } from "./process/_fleet.ts";
import { connectRedis, startRedis } from "./redis/_redis_server.ts";
import { mostInAnyWindow } from "./_windows.ts";

const LIMIT = { requests: 90, interval: 1500 };
/** Requests in each crawl: two windows' waits after the first. */
const TOTAL = 2 * LIMIT.requests + 1;
const SIZES = [2, 4, 8];

const redis = await startRedis();
const dir = await scratchDir();
globalThis.addEventListener("unload", () => {
  void redis.kill();
  Deno.removeSync(dir, { recursive: true });
});

/** One crawl by `size` processes sharing the limit through `store`. */
async function crawl(store: string, size: number) {
  const arrivals: number[] = [];
  let refused = 0;
  await using api = await startFakePartnerApi({
    apiRateLimit: LIMIT,
    onRequest: ({ path, status }) => {
      if (!path.startsWith("/api/")) return;
      if (status === 429) refused++;
      else arrivals.push(Date.now());
    },
  });
  const startAt = Date.now() + 800 + 200 * size;
  const each = Math.ceil(TOTAL / size);
  const runs = Array.from({ length: size }, () =>
    new Deno.Command("deno", {
      args: [
        "run",
        "--no-prompt",
        "--allow-net=127.0.0.1",
        "--allow-env",
        `--allow-read=${dir}`,
        `--allow-write=${dir}`,
        "--allow-sys",
        "tests/_fleet_rate_worker.ts",
        store,
        String(startAt),
        String(each),
        String(LIMIT.requests),
        String(LIMIT.interval),
      ],
      env: configFor(api),
      stdout: "piped",
      stderr: "piped",
    }).output());
  const outputs = await Promise.all(runs);
  const failed = outputs.find((output) => !output.success);
  if (failed !== undefined) {
    const why = new TextDecoder().decode(failed.stderr).trim().split("\n");
    return { failed: why.find((line) => /error/i.test(line)) ?? why[0] };
  }
  const lines = outputs.map((output) =>
    JSON.parse(new TextDecoder().decode(output.stdout)) as {
      endAt: number;
      answered: number[];
    }
  );
  const ends = lines.map((line) => line.endAt - startAt);
  // Shares while every process was sending: from the last one's first
  // answer (start-up is not the limiter's) to the first one's end.
  const from = Math.max(...lines.map((line) => line.answered[0]!));
  const until = Math.min(...lines.map((line) => line.endAt));
  const shares = lines.map((line) =>
    line.answered.filter((at) => at >= from && at < until).length
  );
  const all = shares.reduce((a, b) => a + b);
  const share = (pick: (...n: number[]) => number) =>
    (pick(...shares) / all * size).toFixed(2);
  const sent = each * size;
  const floor = (Math.ceil(sent / LIMIT.requests) - 1) * LIMIT.interval;
  return {
    "429s": refused,
    "time ÷ floor": (Math.max(...ends) / floor).toFixed(3),
    "share × N (min, max)": `${share(Math.min)}, ${share(Math.max)}`,
    "most in a window": mostInAnyWindow(arrivals, LIMIT.interval),
  };
}

const rows = [];
let kvFile = 0;
for (const size of SIZES) {
  for (
    const [name, store] of [
      ["Redis limiter", `redis:${redis.port}`],
      ["KV limiter", `kv:${dir}/rate-${kvFile++}.sqlite`],
      ["Bottleneck (ioredis)", `bottleneck:${redis.port}`],
    ]
  ) {
    rows.push({ processes: size, limiter: name, ...await crawl(store!, size) });
  }
}
console.log(
  `Fleets crawling ${TOTAL} requests through ${LIMIT.requests} per ${LIMIT.interval} ms:`,
);
console.table(rows);

// The cost of one take and answer when the window has room.
const client = await connectRedis(redis.port);
let commands = 0;
const roomy = { requests: 1_000_000, interval: 60_000 };
const local = createRateLimiter(roomy);
const onRedis = createRedisRateLimiter({
  command: (args) => (commands++, client.command(args)),
  prefix: "bench:take",
  ...roomy,
});
const kv = await Deno.openKv(":memory:");
// (One KV value holds the window: at most 1,000 sends, short-lived here.)
const onKv = createKvRateLimiter(kv, { requests: 1000, interval: 1 });
let redisTakes = 0;

Deno.bench(
  "take + answered, in-process limiter",
  { group: "take" },
  async () => {
    local.answered(await local.take());
  },
);
Deno.bench(
  "take + answered, Redis limiter",
  { group: "take", baseline: true },
  async () => {
    onRedis.answered(await onRedis.take());
    redisTakes++;
  },
);
Deno.bench(
  "take + answered, KV limiter (:memory:)",
  { group: "take" },
  async () => {
    onKv.answered(await onKv.take());
  },
);
globalThis.addEventListener("unload", () => {
  console.log(
    `Redis limiter: ${
      (commands / Math.max(1, redisTakes)).toFixed(2)
    } commands per request (take and answer; answers of a burst go together)`,
  );
  client.close();
  kv.close();
});
