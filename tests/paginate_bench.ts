// deno task bench
//
// Side by side, in one run:
// - 20 pages at 40 ms latency each from the fake in another process, at
//   concurrency 1 and 4, through list and through a hand-written ordered
//   pool, each against the floor, the latency itself (⌈20 ÷ c⌉ × 40 ms;
//   goal ≤ 1.10×);
// - paginate() per item against the plain loop a user would write: an async
//   generator over the same pages (goal ≤ 1.10×), in CPU time;
// and, measured once: heap growth while paging 1,000,000 items (goal < 16 MB).

import { createClient } from "../src/client/mod.ts";
import { type PageRequest, paginate } from "../src/client/paginate.ts";
import {
  consume,
  cpuTime,
  handOrderedPool,
  ratiosToFloor,
  showRatio,
  startRemoteFake,
} from "./_bench_server.ts";

// The fake in another process, 40 ms added to every answer.
const slow = await startRemoteFake(["--latency=40", "--transactions=999"]);
globalThis.addEventListener("unload", () => void slow[Symbol.asyncDispose]());

const slowClient = createClient({
  environment: slow.environment,
  clientId: slow.clientId,
  clientSecret: slow.clientSecret,
  rateLimit: false, // the bench repeats the crawl far past 900 requests
});
const { accessToken } = await slowClient.tokenProvider.getToken();

/**
 * 20 pages at 40 ms (999 items, 50 a page, the last one short) through
 * list and through a hand-written ordered pool, interleaved; each against
 * the floor, the latency itself: ⌈20 ÷ c⌉ × 40 ms (pages in flight c at a
 * time, none waiting on another's turn).
 */
async function distanceToFloor(concurrency: number, rounds = 7) {
  const floor = Math.ceil(20 / concurrency) * 40;
  const sleep = () => new Promise((done) => setTimeout(done, floor));
  const ratios = await ratiosToFloor(
    {
      floor: sleep,
      list: () =>
        consume(slowClient.list("transactions", { concurrency }), 999),
      hand: () =>
        consume(
          handOrderedPool({
            environment: slow.environment,
            accessToken,
            list: "transactions",
            limit: 50,
            concurrency,
          }),
          999,
        ),
    },
    "floor",
    rounds,
    1,
  );
  console.log(
    `20 pages at 40 ms (fake in another process), concurrency ${concurrency} ÷ the floor (${floor} ms): client.list ${
      showRatio(ratios.list!)
    }, a hand-written ordered pool ${showRatio(ratios.hand!)}`,
  );
}
await consume(slowClient.list("transactions", { concurrency: 4 }), 999);
await distanceToFloor(1);
await distanceToFloor(4);

/** 100 pages of 1,000 items, already in memory: what is left is per-item cost. */
const PAGES = Array.from(
  { length: 100 },
  (_, page) => Array.from({ length: 1000 }, (_, i) => page * 1000 + i),
);
const fromMemory = ({ page }: PageRequest) =>
  Promise.resolve(PAGES[page - 1] ?? []);
let sink = 0;

/** What a user writes without the library: the same async iterator of items. */
async function* plainLoop(limit: number) {
  for (let page = 1;; page++) {
    const items = await fromMemory({ page, limit } as PageRequest);
    for (const item of items) yield item;
    if (items.length < limit) return;
  }
}

const perItem = {
  plain: async () => {
    for await (const item of plainLoop(1000)) sink += item;
  },
  paginate: async () => {
    for await (const item of paginate(fromMemory, { limit: 1000 })) {
      sink += item;
    }
  },
};

Deno.bench({
  name: "100,000 items from a hand-written async generator",
  group: "per item",
  baseline: true,
  fn: perItem.plain,
});

Deno.bench({
  name: "100,000 items through paginate()",
  group: "per item",
  fn: perItem.paginate,
});

// Each side's CPU time ÷ the floor's, round by round, the sides in rotating
// order: CPU time, because other load on the machine does not stretch it; in
// rounds, because a bench that runs one side after the other measured the
// same code 0.8-1.5× apart.
const items = await ratiosToFloor(perItem, "plain", 31, 1, cpuTime);
console.log(
  `100,000 items through paginate() ÷ a hand-written async generator over the same in-memory pages (the floor), CPU time, interleaved: ${
    showRatio(items.paginate!)
  } (goal ≤ 1.10×)`,
);

/** Pages 1,000,000 generated items and reports the largest heap growth seen. */
async function heapGrowthWhilePaging(): Promise<number> {
  const total = 1_000_000;
  const fetchPage = ({ page, limit }: PageRequest) => {
    const start = (page - 1) * limit;
    return Promise.resolve(
      Array.from(
        { length: Math.max(0, Math.min(limit, total - start)) },
        (_, i) => ({
          transactionID: `tx_${start + i}`,
          amount: i,
        }),
      ),
    );
  };
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = Deno.memoryUsage().heapUsed;
  let peak = 0;
  let count = 0;
  for await (const _ of paginate(fetchPage, { limit: 1000, concurrency: 4 })) {
    if (++count % 50_000 === 0) {
      gc?.();
      peak = Math.max(peak, Deno.memoryUsage().heapUsed - before);
    }
  }
  if (count !== total) throw new Error(`paged ${count} items`);
  return peak;
}

const growth = await heapGrowthWhilePaging();
console.log(
  `heap growth while paging 1,000,000 items: ${
    (growth / 2 ** 20).toFixed(2)
  } MB`,
);
