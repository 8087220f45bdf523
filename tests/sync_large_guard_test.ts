// The guard of a copy larger than a run reads whole (issue 45): a SQL copy answers each window's key range from its
// index, so the guard holds at any size (past 250,000 rows it held at the cycle's end only).

import { deepStrictEqual, equal } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { createSqliteSink, syncList } from "../src/sync/mod.ts";
import { counts, listOf, type Thing, things } from "./_sync_fake.ts";

Deno.test("a SQLite copy of 300,000 rows is judged window by window: a sweep window answered with another list is read again, and nothing of that list gets in (past 250,000 rows it inserted 981 foreign rows and removed 980 that exist)", async () => {
  const database = new DatabaseSync(":memory:");
  using sink = createSqliteSink<Thing>(database, { table: "things" });
  const real = things(300_000, { step: 10 });
  const foreign = things(300_000, { step: 10, suffix: "x" });
  let foreignAt = -1;
  const service = listOf(() => service.requests === foreignAt ? foreign : real);
  const options = { id: "thingID", sink, maxLimit: 1000 };
  await syncList(service.client, "things", { ...options, sweep: 0 });
  foreignAt = service.requests + 150; // a window halfway through the sweep
  const run = await syncList(service.client, "things", {
    ...options,
    sweep: Infinity,
  });
  deepStrictEqual(counts(run), [0, 0, 0]);
  const live = database.prepare(
    "SELECT count(*) AS n, sum(id LIKE '%x') AS x FROM \"things\" WHERE deleted_at IS NULL",
  ).get() as { n: number; x: number };
  deepStrictEqual([live.n, live.x], [300_000, 0]);
  equal(run.requests > 300, true); // the whole cycle was read
});

Deno.test("ids of 260 characters (no sortBy: the id is the value too) keep their keys, so their windows are judged: one answered with another list is read again (their keys passed 2,000 bytes at 4 a character, and 82 foreign rows went in, 81 that exist were removed)", async () => {
  const database = new DatabaseSync(":memory:");
  using sink = createSqliteSink<Thing>(database, { table: "things" });
  const long = (list: Thing[]) =>
    list.map((item) => ({ thingID: item.thingID.padEnd(260, "p") }));
  const real = long(things(2_000));
  const foreign = long(things(2_000, { suffix: "x" }));
  let foreignAt = -1;
  const service = listOf(() => service.requests === foreignAt ? foreign : real);
  const options = { id: "thingID", sink, maxLimit: 100 };
  await syncList(service.client, "things", { ...options, sweep: 0 });
  foreignAt = service.requests + 10;
  const run = await syncList(service.client, "things", {
    ...options,
    sweep: Infinity,
  });
  deepStrictEqual(counts(run), [0, 0, 0]);
});
