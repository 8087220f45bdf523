// deno task bench
//
// Side by side, in one run, against the fake service on loopback:
// - 20 pages at 40 ms latency each, concurrency 1 against 4 (goal ≥ 3.5×);
// - client.fetch() against a raw fetch() with the same token (goal ≤ 5 %);
// and, measured once: heap growth while paging 1,000,000 items (goal < 16 MB).

import { createClient } from "../src/client.ts";
import { type PageRequest, paginate } from "../src/paginate.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";

const slow = await startFakePartnerApi({
  latency: 40,
  items: { transactions: 20 * 50 - 1 }, // 20 pages, the last one short
});
const fast = await startFakePartnerApi();
globalThis.addEventListener("unload", () => {
  void slow.close();
  void fast.close();
});

const slowClient = createClient({
  environment: slow.environment,
  ...slow.credentials,
});
async function pageThrough(concurrency: number) {
  let count = 0;
  for await (const _ of slowClient.list("transactions", { concurrency })) {
    count++;
  }
  if (count !== 999) throw new Error(`expected 999 items, got ${count}`);
}

Deno.bench({
  name: "20 pages at 40 ms, concurrency 1",
  group: "paging",
  baseline: true,
  n: 5,
  warmup: 1,
  fn: async () => {
    await pageThrough(1);
  },
});

Deno.bench({
  name: "20 pages at 40 ms, concurrency 4",
  group: "paging",
  n: 5,
  warmup: 1,
  fn: async () => {
    await pageThrough(4);
  },
});

const client = createClient({
  environment: fast.environment,
  ...fast.credentials,
});
const { accessToken } = await client.tokenProvider.getToken();
const organizations = new URL(
  "organizations?limit=1",
  fast.environment.baseUrl,
);

Deno.bench({
  name: "raw fetch() with a bearer token",
  group: "fetch",
  baseline: true,
  fn: async () => {
    const response = await fetch(organizations, {
      headers: { authorization: `Bearer ${accessToken}` },
    });
    await response.arrayBuffer();
  },
});

Deno.bench({
  name: "client.fetch()",
  group: "fetch",
  fn: async () => {
    const response = await client.fetch("organizations?limit=1");
    await response.arrayBuffer();
  },
});

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
