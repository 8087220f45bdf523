// deno task bench
//
// The client against what a user would write by hand, side by side in one
// run, with the fake service in another process:
// - client.fetch() against a raw fetch() with the same token (goal ≤ 1.05×);
// - 100,000 transactions through client.list (limit 1,000, concurrency 4)
//   against a hand-written loop over the same pages (goal < 2 s);
// and, measured once, 1,000,000 transactions through client.list with the
// heap growth seen while paging (goals < 10 s, < 16 MB).

import { createClient } from "../src/client/mod.ts";
import { interleaved, startRemoteFake } from "./_bench_server.ts";

const fake = await startRemoteFake(["--transactions=100000"]);
const environment = fake.environment;
// Pacing on, at a limit no run reaches: its cost is measured, never a wait.
const rateLimit = { requests: 10_000, interval: 1 };
const client = createClient({
  environment,
  clientId: fake.clientId,
  clientSecret: fake.clientSecret,
  rateLimit,
});
const { accessToken } = await client.tokenProvider.getToken();
const one = new URL("organizations?limit=1", environment.baseUrl);

const raw = async () => {
  const response = await fetch(one, {
    headers: { authorization: `Bearer ${accessToken}` },
  });
  await response.arrayBuffer();
};
const viaClient = async () => {
  const response = await client.fetch("organizations?limit=1");
  await response.arrayBuffer();
};
const perCall = await interleaved({ raw, client: viaClient });
console.log(
  `client.fetch() vs raw fetch(), interleaved medians: ${
    (perCall.client! / perCall.raw!).toFixed(3)
  }x (${(perCall.raw! * 1000).toFixed(0)} µs raw, ${
    (perCall.client! * 1000).toFixed(0)
  } µs client)`,
);

Deno.bench({
  name: "raw fetch() with a bearer token",
  group: "fetch",
  baseline: true,
  fn: async () => {
    const response = await fetch(one, {
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

/** What a user would write without the library: 100 pages, 4 at a time. */
async function handWrittenPages(total: number): Promise<number> {
  const pages = total / 1000;
  let count = 0;
  let next = 1;
  const worker = async () => {
    while (next <= pages) {
      const page = next++;
      const url = new URL("transactions", environment.baseUrl);
      url.search = `limit=1000&page=${page}`;
      const response = await fetch(url, {
        headers: { authorization: `Bearer ${accessToken}` },
      });
      count += (await response.json()).transactions.length;
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return count;
}

async function listAll(total: number): Promise<number> {
  let count = 0;
  for await (
    const _ of client.list("transactions", { limit: 1000, concurrency: 4 })
  ) count++;
  if (count !== total) throw new Error(`listed ${count} of ${total}`);
  return count;
}

Deno.bench({
  name: "100,000 transactions by hand (fetch, 4 pages at a time)",
  group: "list",
  baseline: true,
  n: 5,
  warmup: 1,
  fn: async () => void await handWrittenPages(100_000),
});

Deno.bench({
  name: "100,000 transactions through client.list",
  group: "list",
  n: 5,
  warmup: 1,
  fn: async () => void await listAll(100_000),
});

/** 1,000,000 transactions from a fake of their own: time and heap growth. */
async function million(): Promise<void> {
  await using big = await startRemoteFake(["--transactions=1000000"]);
  const bigClient = createClient({
    environment: big.environment,
    clientId: big.clientId,
    clientSecret: big.clientSecret,
    rateLimit,
  });
  await bigClient.tokenProvider.getToken();
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = Deno.memoryUsage().heapUsed;
  let peak = 0;
  let count = 0;
  const started = performance.now();
  for await (
    const _ of bigClient.list("transactions", { limit: 1000, concurrency: 4 })
  ) {
    if (++count % 100_000 === 0) {
      gc?.();
      peak = Math.max(peak, Deno.memoryUsage().heapUsed - before);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `1,000,000 transactions through client.list: ${seconds.toFixed(1)} s, ` +
      `heap growth ${(peak / 2 ** 20).toFixed(2)} MB (${count} items)`,
  );
}
await million();

globalThis.addEventListener("unload", () => void fake[Symbol.asyncDispose]());
