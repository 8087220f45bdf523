// A SQL copy's keys must say where each row lies, or a window's range hides it from the guard (the attacker of the
// range reads): rows another writer rewrote without keys, and keys an earlier `id` function made, are keyed again.

import { deepStrictEqual, equal, rejects } from "node:assert/strict";
import { setImmediate } from "node:timers";
import { DatabaseSync } from "node:sqlite";
import { createSqliteSink, syncList } from "../src/sync/mod.ts";
import { counts, listOf } from "./_sync_fake.ts";
import { checkpointAt } from "./sync_fixtures.ts";
import type { KeyedCopy } from "../src/sync/_key_text.ts";

type Ranked = { id: string; rank: number };

/** The copy's live rows, and how many of them have ids `LIKE` the other list's. */
function liveRows(database: DatabaseSync, foreign: string) {
  const live = database.prepare(
    `SELECT count(*) AS n, sum(id LIKE ?) AS x FROM "things" WHERE deleted_at IS NULL`,
  ).get(foreign);
  return [live!.n, live!.x];
}

Deno.test("rows a writer that keeps no keys (0.4) moved keep no stale key: a sweep window answered with another list where they moved is read again, and nothing that exists is removed (it removed 100 that exist and put 100 foreign rows in)", async () => {
  const list: Ranked[] = Array.from({ length: 2_000 }, (_, i) => ({
    id: `a${String(i).padStart(5, "0")}`,
    rank: i,
  }));
  const sorted = () => list.toSorted((a, b) => a.rank - b.rank);
  const foreign: Ranked[] = [];
  const service = listOf(sorted, {
    answer: (page, n) => n === foreignAt ? foreign.slice(0, page.length) : page,
  });
  let foreignAt = -1;
  const database = new DatabaseSync(":memory:");
  using sink = createSqliteSink<Ranked>(database, { table: "things" });
  const options = { id: "id", sortBy: "rank", maxLimit: 100, sink };
  await syncList(service.client, "things", { ...options, sweep: 0 });
  // 100 of the last move to the front (the last committed row stays: the copy's record names it), and a writer that
  // keeps no keys copies that: items and checkpoint, not keys.
  const moved = sorted().slice(-101, -1);
  moved.forEach((item, j) => item.rank = -100 + j);
  const rewrite = database.prepare(`UPDATE "things" SET item = ? WHERE id = ?`);
  for (const item of moved) rewrite.run(JSON.stringify(item), item.id);
  database.exec(
    `UPDATE partner_api_sync SET checkpoint = json_set(checkpoint, '$.verifiedAt', 1)`,
  );
  foreign.push(...moved.map((item, j) => ({ id: `x${j}`, rank: item.rank })));
  foreignAt = service.requests + 2; // the sweep's first window, after the head's one request
  const run = await syncList(service.client, "things", {
    ...options,
    sweep: Infinity,
  });
  deepStrictEqual(counts(run), [0, 0, 0]);
  deepStrictEqual(liveRows(database, "x%"), [2_000, 0]);
});

Deno.test("keys an earlier `id` function made (the id as a string, then as the number it is) are made again: a sweep window answered with another list is read again (84 foreign rows went in and 83 that exist were removed)", async () => {
  type Numbered = { id: number; name: string };
  const list: Numbered[] = Array.from({ length: 2_000 }, (_, i) => ({
    id: 1000 + i,
    name: `n${i}`,
  }));
  const foreign = list.map((item) => ({ ...item, id: item.id + 0.5 }));
  let foreignAt = -1;
  const service = listOf(() => service.requests === foreignAt ? foreign : list);
  const database = new DatabaseSync(":memory:");
  using sink = createSqliteSink<Numbered>(database, { table: "things" });
  const options = { maxLimit: 100, sink };
  const asText = (item: Numbered) => String(item.id);
  const asNumber = (item: Numbered) => item.id as unknown as string;
  await syncList(service.client, "things", {
    ...options,
    id: asText,
    sweep: 0,
  });
  foreignAt = service.requests + 10;
  const run = await syncList(service.client, "things", {
    ...options,
    id: asNumber,
    sweep: Infinity,
  });
  deepStrictEqual(counts(run), [0, 0, 0]);
  deepStrictEqual(liveRows(database, "%.5"), [2_000, 0]);
});

Deno.test("keying a copy's rows again stops between pages when the run aborts (PostgreSQL kept a Ctrl-C waiting 41 s while it keyed 300,000 rows), and the pages keyed so far stay", async () => {
  const database = new DatabaseSync(":memory:");
  using sink = createSqliteSink<{ n: number }>(database, { table: "n" });
  const items = Array.from({ length: 5_000 }, (_, n) => ({ n }));
  // Written without keys, as a writer that keeps none leaves them.
  await sink.write(items, checkpointAt("n", 0), items.map(({ n }) => `${n}`));
  const keyed = sink as unknown as KeyedCopy;
  const keyOf = (item: unknown) => {
    const { n } = item as { n: number };
    return { value: n, id: `${n}` };
  };
  const open = { after: null, upTo: null, descending: false };
  const stop = new AbortController();
  setImmediate(() => stop.abort()); // once the first page is keyed
  await rejects(
    keyed.unseenBetween(1, open, 10, keyOf, stop.signal),
    (error: Error) => error.name === "AbortError",
  );
  const count = database.prepare(
    `SELECT count(partner_api_key) AS n FROM "n"`,
  );
  equal(count.get()!.n, 1_000);
  equal((await keyed.unseenBetween(1, open, 10_000, keyOf)).length, 5_000);
});
