// A healthy list under the guard judged before each window: cycles that span
// more than 24 hours, begun soon after a cycle that removed close to the
// share. The window weighs the cycle's own share; the 24 hours' deletes are
// weighed at the cycle's end, when some have left the 24 hours.

import { deepStrictEqual } from "node:assert/strict";
import { inProcess } from "./_sync_fake.ts";
import {
  createJsonlSink,
  createSqliteSink,
  syncList,
} from "../src/sync/mod.ts";
import type { SyncSink } from "../src/sync/sink.ts";
import { seededRandom } from "../src/testing/_list_data.ts";

const HOUR = 3_600_000;

/** 40 runs 6 h apart, sweep 2 of 100-item windows (cycles of about 36 h), after 8 % removed at once; then 0.5 % removed and as many added before each run. No cycle and no 24 hours remove 10 %. */
async function refusalsOf(sink: SyncSink<unknown>): Promise<number> {
  const random = seededRandom(7);
  const fake = inProcess({
    seed: 7,
    items: { organizations: 1, transactions: 1000, cardholders: 1 },
  });
  let clock = Date.UTC(2026, 0, 1);
  const base = {
    id: "transactionID",
    maxLimit: 100,
    limit: 100,
    sink,
    now: () => clock,
  };
  await syncList(fake.client, "transactions", { ...base, sweep: 0 });
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
  await remove(80);
  let refusals = 0;
  for (let run = 0; run < 40; run++) {
    clock += 6 * HOUR;
    await remove(5);
    fake.service.insertTransactions(5);
    await syncList(fake.client, "transactions", { ...base, sweep: 2 })
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
