// deno task bench
//
// Side by side, in one run:
// - 1,000,000 transactions from the fake (loopback, another process) into SQLite with
//   syncList, against client.list alone over the same list in the same run
//   (goal ≥ 0.5× its items/s), and the heap's growth (goal flat:
//   O(window × concurrency));
// - list requests per page (⌈n / limit⌉) without drift (goal ≤ 1.1) and
//   with 1 insert + 1 delete anywhere per request (goal ≤ 1.5);
// - the plain client.list crawl (with dedupeBy) under the same churn, with
//   the items it missed (that existed throughout) and repeated;
// - the sweep (issue 41): list requests of a whole cycle against
//   ⌈n / window⌉ (goal ≤ 1.1, ≤ 1.5 under churn), a run with nothing new and
//   sweep 0 (goal 1 request), a sweep that finds nothing changed against
//   client.list of the same list in items/s (goal ≥ 0.5×), and what the
//   sweep costs the head's crawl of new items (goal: nothing beyond its own
//   requests).
// SYNC_BENCH_ITEMS (with --allow-env=SYNC_BENCH_ITEMS) sets a smaller n.

import { createClient } from "../src/client/mod.ts";
import { createSqliteSink, syncList } from "../src/sync/mod.ts";
import { planWindow } from "../src/sync/_window_plan.ts";
import {
  freshCopy,
  heapUsed,
  startRemoteFake,
  SYNC_BENCH_ITEMS,
} from "./_bench_server.ts";
import { seededRandom } from "../src/testing/_list_data.ts";
import { inProcess, memorySink } from "./_sync_fake.ts";

/** One order's figures: the floor's items/s, syncList's, and the heap. */
interface Throughput {
  readonly listRate: number;
  readonly syncRate: number;
  readonly heapAfter: number;
  readonly heapPeak: number;
  readonly requests: number;
}

/**
 * syncList into SQLite against client.list alone, in one order, on one
 * fake in another process (as the service is: its work does not share this
 * process's CPU).
 */
async function throughput(
  sortBy: "transactionID" | "creationDate",
): Promise<Throughput> {
  await using api = await startRemoteFake([
    `--transactions=${SYNC_BENCH_ITEMS}`,
  ]);
  const client = createClient({
    environment: api.environment,
    clientId: api.clientId,
    clientSecret: api.clientSecret,
    rateLimit: false, // a million items is far past 900 requests
  });
  let listed = 0;
  const listStart = performance.now();
  const pages = { sortBy, sortDirection: "ASC", limit: 1000 } as const;
  for await (const _ of client.list("transactions", pages)) listed++;
  const listRate = listed / ((performance.now() - listStart) / 1000);
  const target = await freshCopy("sync-bench.db");
  using sink = createSqliteSink(target, { table: "transactions" });
  const before = heapUsed();
  let peak = 0;
  let batches = 0;
  const syncStart = performance.now();
  const result = await syncList(client, "transactions", {
    id: "transactionID",
    sortBy,
    sink,
    limit: 1000,
    // Sampled without a collection (one would cost more than the batch):
    // garbage included, an upper bound.
    onProgress: () => {
      if (++batches % 50 === 0) {
        peak = Math.max(peak, Deno.memoryUsage().heapUsed - before);
      }
    },
  });
  const syncRate = result.written / ((performance.now() - syncStart) / 1000);
  const heapAfter = heapUsed() - before;
  if (result.written !== SYNC_BENCH_ITEMS || listed !== SYNC_BENCH_ITEMS) {
    throw new Error(
      `synced ${result.written}, listed ${listed} of ${SYNC_BENCH_ITEMS}`,
    );
  }
  return {
    listRate,
    syncRate,
    heapAfter,
    heapPeak: peak,
    requests: result.requests,
  };
}

/** Both orders side by side, each against its floor: client.list over the same list, order and page size. */
async function throughputs(): Promise<void> {
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  const line = (name: string, goal: string, t: Throughput) =>
    `${name} ${(t.syncRate / t.listRate).toFixed(2)}× (goal ≥ ${goal}; ` +
    `syncList ${Math.round(t.syncRate)} items/s, client.list ${
      Math.round(t.listRate)
    }; heap +${mb(t.heapAfter)} MB after, at most +${
      mb(t.heapPeak)
    } MB during, garbage included; ${t.requests} requests)`;
  // By id, new rows land at the end of SQLite's index; by creation date at
  // random places in it, so each batch dirties a page per row.
  const byId = await throughput("transactionID");
  const byDate = await throughput("creationDate");
  console.log(
    `${SYNC_BENCH_ITEMS} transactions into SQLite, syncList ÷ the floor (client.list over the same list, order and pages of 1,000, in this run): ` +
      `${line("by id", "0.7×", byId)}; ${
        line("by creationDate", "0.5×", byDate)
      }`,
  );
}

/** Requests per page for syncList, and the plain crawl's losses, under churn. */
async function underChurn(
  n: number,
  limit: number,
  churn: boolean,
  maxLimit = 1000,
) {
  const fake = inProcess({ items: { transactions: n } });
  const random = seededRandom(7);
  const present = Array.from(
    { length: n },
    (_, i) => `tx_${String(i + 1).padStart(6, "0")}`,
  );
  const throughout = new Set(present);
  let inserted = 0;
  if (churn) {
    fake.beforeList = () => {
      const model = present[Math.floor(random() * present.length)]!;
      const id = `${model}_${++inserted}`;
      fake.service.insert("transactions", {
        transactionID: id,
        creationDate: new Date(Date.UTC(2025, 0, 1) + random() * 2.6e10)
          .toISOString(),
      });
      present.push(id);
      const [gone] = present.splice(Math.floor(random() * present.length), 1);
      fake.service.remove("transactions", gone!);
      throughout.delete(gone!);
    };
  }
  const sink = memorySink<Record<string, unknown>>();
  const result = await syncList(fake.client, "transactions", {
    id: "transactionID",
    sortBy: "creationDate",
    sink,
    limit,
    maxLimit,
  });
  const lost = [...throughout].filter((id) => !sink.rows.has(id)).length;
  const seen = new Map<string, number>();
  for await (
    const row of fake.client.list<{ transactionID: string }>("transactions", {
      sortBy: "creationDate",
      sortDirection: "ASC",
      limit,
    })
  ) seen.set(row.transactionID, (seen.get(row.transactionID) ?? 0) + 1);
  const missed = [...throughout].filter((id) => !seen.has(id)).length;
  let repeated = 0;
  for (const times of seen.values()) repeated += times - 1;
  console.log(
    `${n} items, limit ${limit}, windows up to ${maxLimit}, ${
      churn ? "1 insert + 1 delete per request" : "no drift"
    }: syncList ${result.requests} requests = ${
      (result.requests / Math.ceil(n / limit)).toFixed(3)
    } per page (goal ≤ ${churn ? "1.5" : "1.1"}), ${lost} missing; ` +
      `plain client.list: ${missed} missing (of those that existed throughout), ${repeated} repeated`,
  );
}

/** A whole cycle's requests, a quiet run's, and what the sweep adds to the head. */
async function sweepCosts(n: number, churn: boolean) {
  const fake = inProcess({
    items: { transactions: n },
    ...(churn ? { churn: { insertAnywhere: 1, remove: 1, update: 1 } } : {}),
  });
  const sink = memorySink<Record<string, unknown>>();
  const options = {
    id: "transactionID",
    sortBy: "creationDate",
    sink,
    limit: 1000,
    maxDeletes: 1,
  };
  await syncList(fake.client, "transactions", options);
  const cycle = await syncList(fake.client, "transactions", {
    ...options,
    sweep: Infinity,
  });
  const window = sink.checkpoint?.accepted ?? 1000;
  // The cycle's own requests: the run's less its head's (one window, or two).
  const head = await syncList(fake.client, "transactions", {
    ...options,
    sweep: 0,
  });
  const sweepRequests = cycle.requests - head.requests;
  fake.service.insertTransactions(5000);
  const alone = await syncList(fake.client, "transactions", {
    ...options,
    sweep: 0,
  });
  fake.service.insertTransactions(5000);
  const withSweep = await syncList(fake.client, "transactions", {
    ...options,
    sweep: 5,
  });
  console.log(
    `sweep of ${n} items${
      churn ? " (1 insert, 1 delete, 1 change per request)" : ""
    }: a cycle ${sweepRequests} requests = ${
      (sweepRequests / Math.ceil(n / window)).toFixed(3)
    }× ⌈n / ${window}⌉ (goal ≤ ${
      churn ? "1.5" : "1.1"
    }); nothing new with sweep 0: ${head.requests} request(s) (goal 1); ` +
      `5,000 new items: the head alone ${alone.requests} requests, with sweep 5 ${withSweep.requests} (goal: the head's + at most 5)`,
  );
}

/** A sweep that finds nothing changed, against client.list of the same list, by items/s. */
async function sweepThroughput() {
  const n = Math.min(SYNC_BENCH_ITEMS, 200_000);
  await using api = await startRemoteFake([`--transactions=${n}`]);
  const client = createClient({
    environment: api.environment,
    clientId: api.clientId,
    clientSecret: api.clientSecret,
    rateLimit: false,
  });
  const target = await freshCopy("sync-sweep-bench.db");
  using sink = createSqliteSink(target, { table: "transactions" });
  const options = {
    id: "transactionID",
    sortBy: "creationDate",
    sink,
    limit: 1000,
  };
  await syncList(client, "transactions", options);
  const rates: [number, number][] = [];
  for (let round = 0; round < 2; round++) {
    let listed = 0;
    const listStart = performance.now();
    const pages = {
      sortBy: "creationDate",
      sortDirection: "ASC",
      limit: 1000,
    } as const;
    for await (const _ of client.list("transactions", pages)) listed++;
    const listRate = listed / ((performance.now() - listStart) / 1000);
    const start = performance.now();
    await syncList(client, "transactions", { ...options, sweep: Infinity });
    rates.push([listRate, n / ((performance.now() - start) / 1000)]);
  }
  console.log(
    `a sweep of ${n} unchanged transactions into SQLite: ${
      rates.map(([list, sweep]) =>
        `${Math.round(sweep)} items/s against client.list ${
          Math.round(list)
        } = ${(sweep / list).toFixed(2)}×`
      ).join("; ")
    } (goal ≥ 0.5×)`,
  );
}

await sweepCosts(20_000, false);
await sweepCosts(20_000, true);
await sweepThroughput();
await underChurn(20_000, 1000, false);
await underChurn(20_000, 1000, true);
await underChurn(20_000, 100, false);
await underChurn(20_000, 100, true);
// Windows no larger than limit overlap only where a page size divides the
// offset: the cost the design expects (about a quarter more).
await underChurn(20_000, 100, false, 100);
await underChurn(20_000, 100, true, 100);
await throughputs();

Deno.bench({
  name: "planWindow at offset 1,000,000 with sizes up to 1,000",
  fn: () => void planWindow(1_000_000, 2, 1000),
});
