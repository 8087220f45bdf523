// The guard judged before each window against the 24 hours: a window weighs
// the cycle's share of the copy's largest size in them, as the end does, but
// not their deletes, which the cycle's end weighs, when some may have left the
// 24 hours. Never stricter than the end: a healthy list is not refused.

import { deepStrictEqual } from "node:assert/strict";
import { inProcess } from "./_sync_fake.ts";
import {
  createJsonlSink,
  createSqliteSink,
  type SyncError,
  syncList,
} from "../src/sync/mod.ts";
import type { SyncSink } from "../src/sync/sink.ts";
import { seededRandom } from "../src/testing/_list_data.ts";

const HOUR = 3_600_000;

/**
 * A copy of 1,000 transactions in `sink`, read once at a clock the test moves (`later(ms)`), the options of its runs,
 * and `remove(n)`: n items removed from the list at random (seeded).
 */
async function copied(sink: SyncSink<unknown>, seed: number) {
  const random = seededRandom(seed);
  const fake = inProcess({
    seed,
    items: { organizations: 1, transactions: 1000, cardholders: 1 },
  });
  let clock = Date.UTC(2026, 0, 1);
  const options = {
    id: "transactionID",
    maxLimit: 100,
    limit: 100,
    sink,
    now: () => clock,
  };
  await syncList(fake.client, "transactions", { ...options, sweep: 0 });
  const remove = async (count: number) => {
    const all = await Array.fromAsync(fake.client.list("transactions"));
    const ids = all.map((item) =>
      (item as { transactionID: string }).transactionID
    );
    for (let gone = 0; gone < count;) {
      const id = ids[Math.floor(random() * ids.length)]!;
      if (fake.service.remove("transactions", id)) gone++;
    }
  };
  const later = (ms: number) => void (clock += ms);
  return { fake, options, remove, later };
}

/** 40 runs 6 h apart, sweep 2 of 100-item windows (cycles of about 36 h), after 8 % removed at once; then 0.5 % removed and as many added before each run. No cycle and no 24 hours remove 10 %. */
async function refusalsOf(sink: SyncSink<unknown>): Promise<number> {
  const { fake, options, remove, later } = await copied(sink, 7);
  await remove(80);
  let refusals = 0;
  for (let run = 0; run < 40; run++) {
    later(6 * HOUR);
    await remove(5);
    fake.service.insertTransactions(5);
    await syncList(fake.client, "transactions", { ...options, sweep: 2 })
      .catch(() => refusals++);
  }
  return refusals;
}

Deno.test("cycles longer than 24 hours after a cycle that removed close to the share: no refusal (SQLite, JSONL)", async () => {
  using sqlite = createSqliteSink(":memory:", { table: "transactions" });
  const path = ".test-tmp/sync-long-cycle.jsonl";
  await Deno.mkdir(".test-tmp", { recursive: true });
  for (const suffix of ["", ".checkpoint.json", ".lock", ".rewrite"]) {
    await Deno.remove(`${path}${suffix}`).catch(() => {});
  }
  deepStrictEqual(
    [await refusalsOf(sqlite), await refusalsOf(createJsonlSink(path))],
    [0, 0],
  );
});

Deno.test("after a confirmed mass delete, a window weighs the share of the copy's largest size in the 24 hours, as the end does: 80 more of 1,000 pass, 20 after them are refused, and a refusal's share is above maxDeletes", async () => {
  using sink = createSqliteSink(":memory:", { table: "transactions" });
  const { fake, options, remove, later } = await copied(sink, 3);
  const run = (maxDeletes: number) => {
    later(HOUR);
    const all = { ...options, sweep: Infinity, maxDeletes };
    return syncList(fake.client, "transactions", all).then(
      (result) => result.deleted,
      (error: SyncError) => error.maxDeletesNeeded,
    );
  };
  await remove(10);
  deepStrictEqual(await run(0.1), 10);
  await remove(500);
  deepStrictEqual(await run(0.1), 0.51); // refused
  deepStrictEqual(await run(0.51), 500); // confirmed: not counted
  await remove(80);
  deepStrictEqual(await run(0.1), 80); // 10 + 80 of the largest 1,000
  await remove(20);
  deepStrictEqual(await run(0.1), 0.11); // 110 of 1,000: refused, above 0.1
});
