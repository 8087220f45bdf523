// deno task bench
//
// DESIGN's goal for a copy, measured for every sink in one run: 1,000,000
// transactions from the fake (loopback, another process) by syncList into
// JSONL, SQLite and PostgreSQL (through `pg` and `postgres.js`, on a
// throwaway cluster; skipped where the server binaries are missing), each
// against the API's own ceiling (1,000 items a request at 900 requests per
// 5 minutes: 3,000 items/s; goal ≥ 10×) and against client.list alone over
// the same list in the same run (the hand-written floor), with the heap's
// growth (goal ≤ 64 MB), read after a collection.
// SYNC_BENCH_ITEMS (with --allow-env=SYNC_BENCH_ITEMS) sets a smaller n.

import { createClient } from "../src/client/mod.ts";
import {
  createJsonlSink,
  createPostgresSink,
  createSqliteSink,
  syncList,
  type SyncSink,
} from "../src/sync/mod.ts";
import {
  freshCopy,
  heapUsed,
  startRemoteFake,
  SYNC_BENCH_ITEMS,
} from "./_bench_server.ts";
import { drivers, startCluster } from "./process/_postgres.ts";

/** The API's ceiling: 1,000 items a request, 900 requests per 5 minutes. */
const CEILING = 1000 * 900 / 300;
const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

await using api = await startRemoteFake([`--transactions=${SYNC_BENCH_ITEMS}`]);
const client = createClient({
  environment: api.environment,
  clientId: api.clientId,
  clientSecret: api.clientSecret,
  rateLimit: false, // a million items is far past 900 requests
});

/** client.list alone over the same list and pages: the floor, in items/s. */
async function listRate(): Promise<number> {
  let listed = 0;
  const start = performance.now();
  const pages = { sortBy: "transactionID", limit: 1000 } as const;
  for await (const _ of client.list("transactions", pages)) listed++;
  return listed / ((performance.now() - start) / 1000);
}

/** One sink's line: items/s against the ceiling and the floor, and the heap. */
async function intoSink(name: string, sink: SyncSink<unknown>) {
  const floor = await listRate();
  const before = heapUsed();
  let peak = 0, batches = 0;
  const start = performance.now();
  const result = await syncList(client, "transactions", {
    id: "transactionID",
    sink,
    limit: 1000,
    // What the run holds, after a collection every 100 batches (ten in all).
    onProgress: () => {
      if (++batches % 100 === 0) peak = Math.max(peak, heapUsed() - before);
    },
  });
  const rate = result.written / ((performance.now() - start) / 1000);
  if (result.written !== SYNC_BENCH_ITEMS) {
    throw new Error(`${name}: synced ${result.written} of ${SYNC_BENCH_ITEMS}`);
  }
  console.log(
    `${SYNC_BENCH_ITEMS} transactions into ${name}: ${
      Math.round(rate)
    } items/s = ${
      (rate / CEILING).toFixed(1)
    }× the API's ceiling (goal ≥ 10×), ${
      (rate / floor).toFixed(2)
    }× client.list (${Math.round(floor)} items/s); heap +${
      mb(heapUsed() - before)
    } MB after, at most +${mb(peak)} MB held during (goal ≤ 64 MB)`,
  );
}

await intoSink("JSONL", createJsonlSink(await freshCopy("sinks-bench.jsonl")));
{
  using sink = createSqliteSink(await freshCopy("sinks-bench.db"), {
    table: "transactions",
  });
  await intoSink("SQLite", sink);
}
const cluster = await startCluster();
if (cluster !== undefined) {
  try {
    const admin = drivers[0]!.connect(cluster.port, "postgres");
    await admin.rows("CREATE DATABASE bench");
    await admin.end();
    for (const driver of drivers) {
      const connection = driver.connect(cluster.port, "bench");
      const table = `t_${driver.name.replace(/\W/g, "")}`;
      const sink = createPostgresSink({ query: connection.query, table });
      await intoSink(`PostgreSQL (${driver.name})`, sink);
      await connection.end();
    }
  } finally {
    await cluster.stop();
  }
}
