// The PostgreSQL sink against a real server (Debian's package), through
// both drivers users have: node-postgres (`pg`) and postgres.js
// (`postgres`). Each promise is a step, run once per driver, each in a
// database of its own on one cluster per driver.

import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import {
  createPostgresSink,
  SyncError,
  syncList,
  type SyncSink,
} from "../../src/sync/mod.ts";
import {
  postgresJson,
  type PostgresLimits,
  postgresText,
} from "../../src/sync/_postgres_sql.ts";
import { storable } from "../../src/sync/_sql_sink.ts";
import {
  abortingOnWrite,
  edgeGoneAmidInserts,
  inProcess,
  listOf,
} from "../_sync_fake.ts";
import { clusterTest, type Connection, drivers } from "./_postgres.ts";
import { checkpointAt, oddItems, sameGuards } from "../sync_fixtures.ts";

const byDate = { id: "transactionID", sortBy: "creationDate" } as const;

async function count(db: Connection, where = "true"): Promise<number> {
  const [row] = await db.rows<{ n: string }>(
    `SELECT count(*)::text AS n FROM "transactions" WHERE ${where}`,
  );
  return Number(row!.n);
}

/** Everything a table holds, as text, to tell whether it changed. */
/** A driver's failure mid-run. */
class ConnectionLost extends Error {}

async function dump(db: Connection, table: string): Promise<string> {
  const [row] = await db.rows<{ all: string | null }>(
    `SELECT string_agg(t::text, ' | ' ORDER BY t::text) AS all FROM "${table}" t`,
  );
  return row!.all ?? "";
}

async function exists(db: Connection, table: string): Promise<boolean> {
  const [row] = await db.rows<{ found: string }>(
    "SELECT (to_regclass($1::text) IS NOT NULL)::text AS found",
    [table],
  );
  return row!.found === "true";
}

function reason(expected: string) {
  return (error: unknown) => {
    ok(error instanceof SyncError, String(error));
    equal(error.reason, expected, error.message);
    return true;
  };
}

type Transaction = Record<string, string | number>;

/** The fake's list as it stands: each item's JSON by id. */
async function listed(
  fake: ReturnType<typeof inProcess>,
): Promise<Map<string, Transaction>> {
  const items = new Map<string, Transaction>();
  for await (
    const item of fake.client.list<Transaction>("transactions", {
      sortBy: "creationDate",
      limit: 1000,
    })
  ) items.set(String(item.transactionID), item);
  return items;
}

/** The copy's rows (live ones unless `where` says otherwise): each item by id. */
async function copied(
  db: Connection,
  table = "transactions",
  where = "deleted_at IS NULL",
): Promise<Map<string, Transaction>> {
  const rows = await db.rows<{ id: string; item: string }>(
    `SELECT id, item::text AS item FROM "${table}" WHERE ${where} ORDER BY id`,
  );
  return new Map(rows.map((row) => [row.id, JSON.parse(row.item)]));
}

/**
 * The ids a consumer holds after replaying `<table>_changes` by seq, from
 * the items the rows carry (an update may bring back a row deleted before,
 * as `deletes: "mark"` does).
 */
async function replayed(
  db: Connection,
  table = "transactions",
): Promise<Set<string>> {
  const rows = await db.rows<{ id: string; change: string; item: unknown }>(
    `SELECT id, change, item FROM "${table}_changes" ORDER BY seq`,
  );
  const held = new Set<string>();
  for (const { id, change, item } of rows) {
    if (change === "delete") {
      equal(item, null);
      ok(held.delete(id), `delete of ${id}, not held`);
      continue;
    }
    ok(item !== null, `${change} of ${id} without its item`);
    if (change === "insert") ok(!held.has(id), `insert of ${id}, held already`);
    held.add(id);
  }
  return held;
}

/** How many changes of each kind `<table>_changes` holds after `seq`. */
async function changeCounts(
  db: Connection,
  after = 0,
  table = "transactions",
): Promise<Record<string, number>> {
  const rows = await db.rows<{ change: string; n: string }>(
    `SELECT change, count(*)::text AS n FROM "${table}_changes" WHERE seq > $1::text::bigint GROUP BY change`,
    [String(after)],
  );
  return Object.fromEntries(rows.map((row) => [row.change, Number(row.n)]));
}

async function lastSeq(
  db: Connection,
  table = "transactions",
): Promise<number> {
  const [row] = await db.rows<{ seq: string | null }>(
    `SELECT max(seq)::text AS seq FROM "${table}_changes"`,
  );
  return Number(row!.seq ?? 0);
}

/** `n` items with ids 1,000 apart (`suffix` after), so another list's can interleave them. */
function spread(n: number, suffix: string): { id: string }[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `t${String(i * 1000).padStart(9, "0")}${suffix}`,
  }));
}

/** A transaction dated `daysAgo` days before the fake's newest: behind the copy's end. */
function backDated(id: string, date: string): Transaction {
  return {
    transactionID: id,
    creationDate: date,
    amount: 12.5,
    currency: "EUR",
    organizationID: "org_000001",
  };
}

/** The source's changes a sweep must bring in: 6 updated, 5 removed, 3 inserted behind the end. */
async function change(
  fake: ReturnType<typeof inProcess>,
): Promise<{ updated: string[]; removed: Transaction[]; inserted: string[] }> {
  const before = [...(await listed(fake)).values()];
  const updated: string[] = [],
    removed: Transaction[] = [],
    inserted: string[] = [];
  for (let i = 0; i < 6; i++) {
    const item = before[10 + i * 37]!;
    const id = String(item.transactionID);
    ok(
      fake.service.update("transactions", id, {
        amount: 0.01 * (i + 1),
        status: "settled",
      }),
    );
    updated.push(id);
  }
  for (let i = 0; i < 5; i++) {
    const item = before[20 + i * 41]!;
    ok(fake.service.remove("transactions", String(item.transactionID)));
    removed.push(item);
  }
  for (let i = 0; i < 3; i++) {
    // Between two items in the first half: long behind the copy's end.
    const id = `tx_back_${i}`;
    fake.service.insert(
      "transactions",
      backDated(id, String(before[50 + i * 30]!.creationDate)),
    );
    inserted.push(id);
  }
  return { updated, removed, inserted };
}

const steps: {
  name: string;
  fn: (db: Connection) => Promise<void>;
}[] = [
  {
    name:
      "the guard (issue 45): a sweep answered with another list commits nothing and the next healthy run goes on; deletes sliced an hour apart stop at maxDeletes of the day's largest size",
    async fn(db) {
      let items = spread(1000, "");
      let foreignFrom = Infinity;
      const service = listOf(() =>
        service.requests >= foreignFrom ? spread(1000, "x") : items
      );
      let clock = Date.UTC(2026, 10, 28);
      const options = {
        id: "id",
        sink: tableSink<{ id: string }>(db, "guarded"),
        maxLimit: 100,
        changes: true,
        now: () => clock,
      };
      const live = async () =>
        Number(
          (await db.rows<{ n: string }>(
            `SELECT count(*)::text AS n FROM "guarded" WHERE deleted_at IS NULL`,
          ))[0]!.n,
        );
      await syncList(service.client, "things", options);
      const before = await dump(db, "guarded");
      const seq = await lastSeq(db, "guarded");
      foreignFrom = service.requests + 2;
      await rejects(
        syncList(service.client, "things", { ...options, sweep: Infinity }),
        (error: SyncError) => error.reason === "too-many-deletes",
      );
      equal(await dump(db, "guarded"), before);
      equal(await lastSeq(db, "guarded"), seq);
      foreignFrom = Infinity;
      const healthy = await syncList(service.client, "things", {
        ...options,
        sweep: Infinity,
      });
      deepStrictEqual([healthy.inserted, healthy.deleted], [0, 0]);
      let refused = 0;
      for (let run = 0; run < 6; run++) {
        clock += 3_600_000;
        items = items.filter((_, i) => i % 11 !== 5);
        await syncList(service.client, "things", {
          ...options,
          sweep: Infinity,
        })
          .catch((error: SyncError) => {
            equal(error.reason, "too-many-deletes");
            refused++;
          });
        ok(1000 - await live() <= 100, String(await live()));
      }
      ok(refused > 0);
    },
  },
  {
    name:
      "a cycle spread over runs of a list at random ids gaining 600 at random ids, its last item read deleted every other run: no run is refused, newest first or ascending (r167a: items an earlier run of the cycle staged were taken for another list's page, in a window or a confirming read)",
    async fn(db) {
      await edgeGoneAmidInserts(tableSink(db, "spread"));
      const shape = { seed: 50, ascending: true, sweep: 2, spread: true };
      await edgeGoneAmidInserts(tableSink(db, "spread_asc"), shape);
    },
  },
  {
    name:
      "an abort that comes while the sink prepares a batch handed on before it (its change table's round trip): the batch is not sent, no row or change row of it written (r166c F1: 50 rows and their change rows committed after Ctrl-C)",
    async fn(db) {
      let items = spread(200, "");
      const service = listOf(() => items);
      const options = { id: "id", sink: tableSink(db, "aborted"), sweep: 0 };
      await syncList(service.client, "things", { ...options, changes: true });
      const before = await dump(db, "aborted");
      items = [...items, ...spread(250, "n").slice(200)];
      const controller = new AbortController();
      const sink = abortingOnWrite(tableSink(db, "aborted"), controller);
      const { signal } = controller;
      const run = { ...options, sink, changes: true, signal };
      await rejects(syncList(service.client, "things", run));
      equal(await dump(db, "aborted"), before);
      equal(await lastSeq(db, "aborted"), 200);
    },
  },
  {
    name:
      "a run answered whole by another list whose ids interleave the copy's, 50 past its end, commits nothing of it (its head put those 50 in); healthy again, the next run removes the real deletes",
    async fn(db) {
      let items = spread(600, ""), foreign = false;
      const service = listOf(() => foreign ? spread(650, "f") : items);
      const sink = tableSink<{ id: string }>(db, "interleaved");
      const options = { id: "id", sink, maxLimit: 100, changes: true };
      await syncList(service.client, "things", options);
      const [before, seq] = [
        await dump(db, "interleaved"),
        await lastSeq(db, "interleaved"),
      ];
      foreign = true;
      await rejects(
        syncList(service.client, "things", options),
        (error: SyncError) => error.reason === "too-many-deletes",
      );
      deepStrictEqual([
        await dump(db, "interleaved"),
        await lastSeq(db, "interleaved"),
      ], [before, seq]);
      [foreign, items] = [false, items.filter((_, i) => i % 30 !== 7)];
      const healthy = await syncList(service.client, "things", {
        ...options,
        sweep: Infinity,
      });
      deepStrictEqual([healthy.inserted, healthy.deleted], [0, 20]);
    },
  },
  {
    name:
      "the guard (issue 45): unguarded (a sink that lists no rows), runs killed right after a cycle's ending batch remove at most maxDeletes of 1,000 (it records them uncounted: the day's share is taken as spent); the refusal then names a share below 1, which confirms that cycle; the uncounted one counts for its 24 hours",
    async fn(db) {
      let items = spread(1000, "");
      const service = listOf(() => items);
      let clock = Date.UTC(2026, 10, 28), ended = false;
      const inner = tableSink<{ id: string }>(db, "uncounted");
      const sink: SyncSink<{ id: string }> = {
        load: () => inner.load(),
        lock: (run) => inner.lock!(run),
        write(items, checkpoint, ids, context) {
          if (ended) return Promise.reject(new Error("killed"));
          ended = context?.endsCycle !== undefined;
          return inner.write(items, checkpoint, ids, context);
        },
      };
      const options = { id: "id", sink, now: () => clock, sweep: Infinity };
      await syncList(service.client, "things", options);
      const live = async () =>
        Number(
          (await db.rows<{ n: string }>(
            `SELECT count(*)::text AS n FROM "uncounted"`,
          ))[0]!.n,
        );
      for (let run = 0; run < 4; run++) {
        [clock, ended] = [clock + 3_600_000, false];
        items = items.filter((_, i) => i % 11 !== 5);
        await syncList(service.client, "things", options).catch(() => {});
        ok(1000 - await live() <= 100, String(await live()));
      }
      const error = await syncList(service.client, "things", {
        ...options,
        sink: inner,
      }).then(() => undefined, (error: SyncError) => error);
      const needed = error!.maxDeletesNeeded!;
      ok(needed < 1, String(needed));
      await syncList(service.client, "things", {
        ...options,
        sink: inner,
        maxDeletes: needed,
      });
      equal(await live(), items.length);
      // The uncounted cycle counts on for its 24 hours, then the default passes.
      [clock, items] = [clock + 3_600_000, items.slice(2)];
      const alone = { ...options, sink: inner };
      await rejects(syncList(service.client, "things", alone), SyncError);
      clock += 86_400_000;
      await syncList(service.client, "things", alone);
      equal(await live(), items.length);
    },
  },
  {
    name:
      "the guard (issue 45): a cycle that removes nothing passes, whatever the last 24 hours removed: after a run that raised maxDeletes for itself removed 20 of 100, the next default run brings a back-dated item and an update (it was refused 'would remove 0')",
    async fn(db) {
      let items: { id: string; v?: number }[] = spread(100, "");
      const service = listOf(() => items);
      let clock = Date.UTC(2026, 10, 28);
      const options = {
        id: "id",
        sink: tableSink<{ id: string }>(db, "nothing_gone"),
        changes: true,
        now: () => clock,
        sweep: Infinity,
      };
      await syncList(service.client, "things", options);
      items = items.slice(20);
      clock += 3_600_000;
      const raised = { ...options, maxDeletes: 0.5 };
      equal((await syncList(service.client, "things", raised)).deleted, 20);
      const back = { id: `${items[10]!.id}5` }; // between two: behind the end
      items = [...items.slice(0, 11), back, ...items.slice(11)];
      items[40] = { ...items[40]!, v: 1 };
      clock += 3_600_000;
      const next = await syncList(service.client, "things", options);
      deepStrictEqual([next.inserted, next.updated, next.deleted], [1, 1, 0]);
    },
  },
  {
    name:
      "the guard (issue 45): a sweep answered with another list sorting before the copy puts none of it in the copy; the runs after it complete with no refusal",
    async fn(db) {
      const real = spread(1000, "");
      const foreign = spread(1500, "").map(({ id }) => ({ id: `a${id}` }));
      let foreignFrom = Infinity;
      const service = listOf(() =>
        service.requests >= foreignFrom ? foreign : real
      );
      const options = {
        id: "id",
        sink: createPostgresSink<{ id: string }>({
          query: db.query,
          table: "before",
        }),
        maxLimit: 100,
        sweep: 3,
      };
      await syncList(service.client, "things", options);
      foreignFrom = service.requests + 2; // the sweep's: a head answered so fails (another step)
      await syncList(service.client, "things", options);
      foreignFrom = Infinity;
      for (let run = 0; (await options.sink.load())?.sweep; run++) {
        ok(run < 30, "the cycle never completed");
        const { inserted, deleted } = await syncList(
          service.client,
          "things",
          options,
        );
        deepStrictEqual([inserted, deleted], [0, 0]);
      }
      const ids = await db.rows<{ id: string }>(
        `SELECT id FROM "before" ORDER BY id`,
      );
      deepStrictEqual(ids.map((row) => row.id), real.map((item) => item.id));
    },
  },
  {
    name:
      "the guard before each window (issue 45): a sweep answered with another list in a cycle that spans runs fails at that run, changing no row or change row; the next runs against the healthy list complete the cycle with no refusal and no option changed",
    async fn(db) {
      const real = spread(1000, "");
      const foreign = spread(1000, "x");
      let foreignFrom = Infinity;
      const service = listOf(() =>
        service.requests < foreignFrom ? real : foreign
      );
      const sink = createPostgresSink<{ id: string }>({
        query: db.query,
        table: "windows",
      });
      const options = {
        id: "id",
        sink,
        maxLimit: 100,
        sweep: 3,
        changes: true,
      };
      await syncList(service.client, "things", options); // the first read: cycle 1
      await syncList(service.client, "things", options); // cycle 2's first windows
      const before = [await dump(db, "windows"), await lastSeq(db, "windows")];
      foreignFrom = service.requests + 2; // the head's window is the list's own
      await rejects(
        syncList(service.client, "things", options),
        (error: SyncError) => error.reason === "too-many-deletes",
      );
      deepStrictEqual(
        [await dump(db, "windows"), await lastSeq(db, "windows")],
        before,
      );
      foreignFrom = Infinity;
      const runs = [];
      while ((await sink.load())?.refused !== undefined) {
        ok(runs.length < 6, "the cycle never completed");
        const run = await syncList(service.client, "things", options);
        runs.push([run.inserted, run.updated, run.deleted]);
      }
      ok(runs.length > 1); // the cycle spans runs
      deepStrictEqual(runs, runs.map(() => [0, 0, 0]));
      const ids = await db.rows<{ id: string }>(
        `SELECT id FROM "windows" WHERE deleted_at IS NULL ORDER BY id COLLATE "C"`,
      );
      deepStrictEqual(ids.map((row) => row.id), real.map((item) => item.id));
    },
  },
  {
    name:
      "a sync stores every item once, as a JSON object, under drift; a second run resumes and writes only the new ones",
    async fn(db) {
      const fake = inProcess({ items: { transactions: 1000 } });
      // One insert anywhere and one delete per request, remembered.
      const removed = new Set<string>();
      fake.beforeList = (n) => {
        const id = `tx_${String(n * 7).padStart(6, "0")}`;
        fake.service.remove("transactions", id);
        removed.add(id);
        fake.service.insert("transactions", {
          transactionID: `tx_${String(n * 13).padStart(6, "0")}_x`,
          creationDate: new Date(Date.UTC(2025, 0, 1 + n)).toISOString(),
        });
      };
      const sink = tableSink(db);
      const options = { ...byDate, sink, limit: 100, maxLimit: 200 };
      await syncList(fake.client, "transactions", options);
      const first = await count(db);
      const [distinct] = await db.rows<{ n: string }>(
        'SELECT count(DISTINCT id)::text AS n FROM "transactions"',
      );
      equal(Number(distinct!.n), first);
      equal(await count(db, "jsonb_typeof(item) <> 'object'"), 0);
      const held = new Set(
        (await db.rows<{ id: string }>('SELECT id FROM "transactions"')).map((
          row,
        ) => row.id),
      );
      for (let i = 1; i <= 1000; i++) {
        const id = `tx_${String(i).padStart(6, "0")}`;
        if (!removed.has(id)) ok(held.has(id), id);
      }
      equal((await sink.load())?.complete, true);
      fake.beforeList = undefined;
      fake.service.insertTransactions(30);
      // The head alone: what the sweep brings in is the cycle steps' promise.
      const later = await syncList(fake.client, "transactions", {
        ...options,
        sweep: 0,
      });
      equal(later.written, 30);
      equal(await count(db), first + 30);
      equal(await count(db, "jsonb_typeof(item) <> 'object'"), 0);
    },
  },
  {
    name:
      "items PostgreSQL cannot hold (NUL, lone surrogates, in items or ids) are skipped and reported, never stop a run; a page's repeated id and 7/'7' keep the last occurrence",
    async fn(db) {
      const odd: { id: string | number; text: unknown }[] = [
        { id: 1, text: "a\u0000b" },
        { id: 2, text: "lone \ud800 high" },
        { id: 3, text: "x".repeat(200_000) },
        { id: 4, text: "first" },
        { id: 4, text: "last" },
        { id: 5, text: { "key\u0000": 1 } },
        { id: 6, text: "a backslash, then u0000: \\u0000, and \u{1f600}" },
        { id: 7, text: "number" },
        { id: "7", text: "string" },
        { id: "8\udc00", text: "an id with a lone surrogate" },
        { id: "9\u0000", text: "an id with a NUL" },
      ];
      const items = [
        ...odd,
        ...Array.from({ length: 60 }, (_, i) => ({
          id: `a${String(i).padStart(3, "0")}`,
          text: `plain ${i}`,
        })),
      ];
      const service = listOf(() => items);
      const options = {
        id: (item: { id: string | number }) => String(item.id),
        sink: createPostgresSink<{ id: string | number; text: unknown }>({
          query: db.query,
          table: "things",
        }),
        limit: 25,
        maxLimit: 25,
      };
      for (let run = 1; run <= 2; run++) {
        const result = await syncList(service.client, "things", options);
        // Each run that reads them (the second one's sweep does) says so.
        deepStrictEqual(
          result.skippedIds,
          ["1", "2", "5", "8\udc00", "9\u0000"],
          `run ${run}`,
        );
      }
      const rows = await db.rows<{ id: string; text: string }>(
        `SELECT id, item ->> 'text' AS text FROM "things" WHERE id NOT LIKE 'a%' ORDER BY id`,
      );
      deepStrictEqual(rows.map((row) => [row.id, row.text]), [
        ["3", "x".repeat(200_000)],
        ["4", "last"],
        ["6", "a backslash, then u0000: \\u0000, and \u{1f600}"],
        ["7", "string"],
      ]);
      equal(
        (await db.rows<{ n: string }>(
          `SELECT count(*)::text AS n FROM "things" WHERE id LIKE 'a%'`,
        ))[0]!.n,
        "60",
      );
    },
  },
  {
    name:
      "an item copied before that PostgreSQL can no longer hold (a NUL, nesting past 1,000) is still in the list: skipped, its row stays live and seen, never removed or marked, no delete change row",
    async fn(db) {
      let deep: unknown = 1;
      for (let i = 0; i < 1100; i++) deep = [deep];
      for (const deletes of ["remove", "mark"] as const) {
        const items: { id: string; note: unknown }[] = Array.from(
          { length: 60 },
          (_, i) => ({ id: `t${String(i).padStart(3, "0")}`, note: "ok" }),
        );
        const service = listOf(() => items, { maxLimit: 25 });
        const table = `kept_${deletes}`;
        const options = {
          id: "id",
          sink: tableSink(db, table),
          sweep: Infinity,
          changes: true,
          deletes,
          limit: 25,
        };
        await syncList(service.client, "things", options);
        items[10] = { ...items[10]!, note: "a\u0000b" };
        items[40] = { ...items[40]!, note: deep };
        for (let run = 1; run <= 2; run++) {
          const result = await syncList(service.client, "things", options);
          deepStrictEqual(result.skippedIds, ["t010", "t040"]);
          deepStrictEqual([result.deleted, result.updated], [0, 0]);
        }
        equal((await copied(db, table)).size, 60, deletes);
        equal((await copied(db, table)).get("t010")?.note, "ok");
        deepStrictEqual(await changeCounts(db, 0, table), { insert: 60 });
      }
    },
  },
  {
    name:
      "once transactions_changes exists, every run records into it, changes asked or not: a consumer reading it by seq misses nothing",
    async fn(db) {
      const { fake, sink } = await copiedOnce(db, 300, { changes: true });
      deepStrictEqual(await changeCounts(db), { insert: 300 });
      const plain = { ...byDate, sink, sweep: Infinity };
      let seq = await lastSeq(db);
      const { updated, removed, inserted } = await change(fake);
      const result = await syncList(fake.client, "transactions", plain);
      const counts = [result.inserted, result.updated, result.deleted];
      deepStrictEqual(counts, [3, 6, 5]);
      deepStrictEqual(await changeCounts(db, seq), {
        insert: inserted.length,
        update: updated.length,
        delete: removed.length,
      });
      // `changes: false` does not stop it either (docs/sync.md): drop the table to stop.
      seq = await lastSeq(db);
      fake.service.insertTransactions(2);
      const options = { ...plain, changes: false };
      equal((await syncList(fake.client, "transactions", options)).inserted, 2);
      deepStrictEqual(await changeCounts(db, seq), { insert: 2 });
      deepStrictEqual(await replayed(db), new Set((await copied(db)).keys()));
    },
  },
  {
    name:
      "a change table made for a copy that holds rows begins with an insert of each live row, so replaying it gives the copy, also once dropped and made again",
    async fn(db) {
      const { fake, sink } = await copiedOnce(db, 300, {}); // no change table
      const options = { ...byDate, sink, sweep: Infinity, changes: true };
      for (const round of [1, 2]) {
        if (round === 1) await change(fake);
        else fake.service.insertTransactions(2);
        await syncList(fake.client, "transactions", options);
        const live = [...(await copied(db)).keys()];
        deepStrictEqual(await replayed(db), new Set(live), `round ${round}`);
        await db.rows(
          `ALTER TABLE "transactions_changes" ADD COLUMN applied boolean`,
        ); // a consumer's
        await syncList(fake.client, "transactions", options); // goes on
        await db.rows(`DROP TABLE "transactions_changes"`); // docs: drop it to stop
      }
    },
  },
  {
    name:
      "a change table dropped during a run is made again with the copy's rows when the run asks for changes, else the run goes on without it",
    async fn(db) {
      const { fake, sink } = await copiedOnce(db, 100, { changes: true });
      let writes = 0, dropAt = 0; // the table dropped before a batch, from outside
      const dropping: typeof sink = {
        ...sink,
        async write(...batch) {
          const drop = `DROP TABLE "transactions_changes"`;
          if (++writes === dropAt) await db.rows(drop);
          return await sink.write(...batch);
        },
      };
      for (const changes of [true, false]) {
        fake.service.insertTransactions(100);
        dropAt = writes + 2; // the head's second batch
        const options = { ...byDate, sink: dropping, changes, limit: 25 };
        const run = await syncList(fake.client, "transactions", {
          ...options,
          maxLimit: 25,
        });
        equal(run.inserted, 100);
        equal(await exists(db, "transactions_changes"), changes);
        if (changes) {
          const live = [...(await copied(db)).keys()];
          deepStrictEqual(await replayed(db), new Set(live));
        }
      }
    },
  },
  {
    name:
      "a batch handed to the sink with an id twice keeps its last occurrence",
    async fn(db) {
      // 0.3: "ON CONFLICT DO UPDATE command cannot affect row a second time".
      const sink = directSink(db);
      const saved = { ...checkpointAt("direct", 8), offset: 2 };
      await sink.write([{ n: 1 }, { n: 2 }, { n: 3 }], saved, [
        "7",
        "8",
        "7",
      ]);
      deepStrictEqual(
        await db.rows(`SELECT id, item ->> 'n' AS n FROM "direct" ORDER BY id`),
        [{ id: "7", n: "3" }, { id: "8", n: "2" }],
      );
      deepStrictEqual(await sink.load(), saved);
    },
  },
  {
    name:
      "a cycle (sweep: Infinity) after updates, removals and back-dated inserts leaves the table equal to the list, counts what it did, and the change table replayed by seq gives exactly the live rows",
    async fn(db) {
      const { fake, sink, options, first } = await copiedOnce(db, 300, {
        limit: 50,
        changes: true,
      });
      equal(first.inserted, 300);
      deepStrictEqual(await changeCounts(db), { insert: 300 });
      const { updated, removed, inserted } = await change(fake);
      const seq = await lastSeq(db);
      const cycle = await syncList(fake.client, "transactions", {
        ...options,
        sweep: Infinity,
      });
      deepStrictEqual(
        [cycle.inserted, cycle.updated, cycle.deleted],
        [inserted.length, updated.length, removed.length],
      );
      deepStrictEqual(
        await copied(db, "transactions", "true"),
        await listed(fake),
      );
      deepStrictEqual(await changeCounts(db, seq), {
        insert: inserted.length,
        update: updated.length,
        delete: removed.length,
      });
      const changed = await db.rows<{ id: string; change: string }>(
        `SELECT id, change FROM "transactions_changes" WHERE seq > $1::text::bigint ORDER BY id`,
        [String(seq)],
      );
      deepStrictEqual(
        changed.map((row) => `${row.change} ${row.id}`).sort(),
        [
          ...inserted.map((id) => `insert ${id}`),
          ...updated.map((id) => `update ${id}`),
          ...removed.map((item) => `delete ${item.transactionID}`),
        ].sort(),
      );
      deepStrictEqual(await replayed(db), new Set((await listed(fake)).keys()));
      // Nothing changed since: a cycle finds nothing, and records nothing.
      const again = await syncList(fake.client, "transactions", {
        ...options,
        sweep: Infinity,
      });
      deepStrictEqual([again.inserted, again.updated, again.deleted], [
        0,
        0,
        0,
      ]);
      equal(
        await lastSeq(db),
        seq + inserted.length + updated.length + removed.length,
      );
      // The copy still passes its own check (row count, last row).
      equal((await sink.load())?.cycles, 3);
    },
  },
  {
    name:
      "with deletes: 'mark', rows the cycle did not see get deleted_at and stay; the live rows equal the list, and an item that comes back is live again",
    async fn(db) {
      const { fake, options } = await copiedOnce(db, 300, {
        limit: 50,
        changes: true,
        deletes: "mark" as const,
        sweep: Infinity,
      });
      const { removed } = await change(fake);
      equal(
        (await syncList(fake.client, "transactions", options)).deleted,
        removed.length,
      );
      deepStrictEqual(await copied(db), await listed(fake));
      const marked = await copied(db, "transactions", "deleted_at IS NOT NULL");
      deepStrictEqual(
        [...marked.keys()].sort(),
        removed.map((item) => String(item.transactionID)).sort(),
      );
      equal(await count(db), 300 + 3);
      deepStrictEqual(await replayed(db), new Set((await listed(fake)).keys()));
      // A second cycle does not count (or record) them again.
      const seq = await lastSeq(db);
      equal((await syncList(fake.client, "transactions", options)).deleted, 0);
      equal(await lastSeq(db), seq);
      // One comes back as it was: live again, an update (it was a row of
      // the copy).
      fake.service.insert("transactions", removed[0]!);
      const back = await syncList(fake.client, "transactions", options);
      deepStrictEqual([back.inserted, back.updated, back.deleted], [0, 1, 0]);
      deepStrictEqual(await copied(db), await listed(fake));
      equal(await count(db, "deleted_at IS NOT NULL"), removed.length - 1);
      deepStrictEqual(await changeCounts(db, seq), { update: 1 });
      deepStrictEqual(await replayed(db), new Set((await listed(fake)).keys()));
    },
  },
  {
    name:
      "with the sink's now, the change table's at and deleted_at are that time (the server's clock without it), so a test drives them",
    async fn(db) {
      const at = Date.UTC(2020, 0, 1);
      const fake = inProcess({ items: { transactions: 60 } });
      const sink = createPostgresSink({
        query: db.query,
        table: "clocked",
        now: () => at,
      });
      const options = {
        ...byDate,
        sink,
        changes: true,
        deletes: "mark" as const,
      };
      await syncList(fake.client, "transactions", options);
      fake.service.remove("transactions", "tx_000007");
      await syncList(fake.client, "transactions", {
        ...options,
        sweep: Infinity,
      });
      const [times] = await db.rows<{ at: string; deleted: string }>(
        `SELECT (SELECT json_agg(DISTINCT extract(epoch FROM at) * 1000) FROM "clocked_changes")::text AS at,
          (SELECT json_agg(extract(epoch FROM deleted_at) * 1000) FROM "clocked" WHERE deleted_at IS NOT NULL)::text AS deleted`,
      );
      deepStrictEqual(JSON.parse(String(times!.at)), [at]);
      deepStrictEqual(JSON.parse(String(times!.deleted)), [at]);
    },
  },
  {
    name:
      "with the sink's now and no step that records a time (no change table, deletes removed), every write goes through (a parameter no step read failed each: 'bind message supplies 7 parameters')",
    async fn(db) {
      const fake = inProcess({ items: { transactions: 60 } });
      const sink = createPostgresSink({
        query: db.query,
        table: "clocked_plain",
        now: () => Date.UTC(2020, 0, 1),
      });
      const options = { ...byDate, sink, sweep: Infinity };
      equal((await syncList(fake.client, "transactions", options)).written, 60);
      fake.service.remove("transactions", "tx_000007");
      equal((await syncList(fake.client, "transactions", options)).deleted, 1);
    },
  },
  {
    name:
      "a cycle that would remove more than maxDeletes of the copy removes nothing, records no change and rejects with 'too-many-deletes'; the share it names then removes them (29 of 100: 0.29 × 100 is 28.99… in float8, which refused it again)",
    async fn(db) {
      const { fake, sink, options } = await copiedOnce(db, 100, {
        limit: 50,
        changes: true,
        sweep: Infinity,
      });
      const before = await copied(db, "transactions", "true");
      const seq = await lastSeq(db);
      // 29 of 100: more than 10 %.
      for (let i = 1; i <= 29; i++) {
        fake.service.remove(
          "transactions",
          `tx_${String(i * 3).padStart(6, "0")}`,
        );
      }
      const refusal = await syncList(fake.client, "transactions", options)
        .catch((error: SyncError) => error);
      equal((refusal as SyncError).reason, "too-many-deletes");
      deepStrictEqual(await copied(db, "transactions", "true"), before);
      equal(await lastSeq(db), seq);
      equal((await sink.load())?.cycles, 1);
      for (const deletes of ["mark", "remove"] as const) {
        await rejects(
          syncList(fake.client, "transactions", { ...options, deletes }),
          reason("too-many-deletes"),
        );
      }
      equal(await count(db, "deleted_at IS NOT NULL"), 0);
      const done = await syncList(fake.client, "transactions", {
        ...options,
        maxDeletes: (refusal as SyncError).maxDeletesNeeded!,
      });
      equal(done.deleted, 29);
      deepStrictEqual(
        await copied(db, "transactions", "true"),
        await listed(fake),
      );
      deepStrictEqual(await replayed(db), new Set((await listed(fake)).keys()));
    },
  },
  {
    name:
      "the batch that ends a cycle with too many deletes changes nothing at all: rows, checkpoint, change table",
    async fn(db) {
      const sink = directSink(db);
      const ids = Array.from({ length: 10 }, (_, i) => String(i + 1));
      await sink.write(
        ids.map((id) => ({ n: Number(id) })),
        checkpointAt("direct", 10),
        ids,
        {
          cycle: 1,
          phase: "head",
          changes: true,
        },
      );
      const tables = ["direct", "direct_changes", "partner_api_sync"];
      const before = await Promise.all(tables.map((table) => dump(db, table)));
      // Cycle 2 sees 2, 3 and 4 (one changed) and ends: 7 of 10 unseen.
      const ends = (maxDeletes: number) => ({
        cycle: 2,
        phase: "sweep" as const,
        changes: true,
        endsCycle: { deletes: "remove" as const, maxDeletes },
      });
      const items = [{ n: 2 }, { n: 3 }, { n: 40 }];
      await rejects(
        sink.write(
          items,
          checkpointAt("direct", 4),
          ["2", "3", "4"],
          ends(0.5),
        ),
        (error: unknown) => {
          ok(error instanceof SyncError, String(error));
          equal(error.reason, "too-many-deletes");
          equal(error.maxDeletesNeeded, 0.7, "7 of 10 rows unseen");
          return true;
        },
      );
      deepStrictEqual(
        await Promise.all(tables.map((table) => dump(db, table))),
        before,
      );
      // 7 > 0.7 × 10 is false: allowed, and told.
      deepStrictEqual(
        await sink.write(
          items,
          checkpointAt("direct", 4),
          ["2", "3", "4"],
          ends(0.7),
        ),
        { skippedIds: [], inserted: 0, updated: 1, deleted: 7, held: 10 },
      );
      deepStrictEqual([...(await copied(db, "direct")).keys()], [
        "2",
        "3",
        "4",
      ]);
      deepStrictEqual(await changeCounts(db, 10, "direct"), {
        update: 1,
        delete: 7,
      });
      deepStrictEqual((await sink.load())?.offset, 4);
    },
  },
  {
    name:
      "the recorded row count and last row stay right when a cycle removes or marks rows, the last one committed among them",
    async fn(db) {
      const sink = directSink(db);
      const write = (
        ids: string[],
        cycle: number,
        ends?: { deletes: "remove" | "mark"; maxDeletes: number },
      ) =>
        sink.write(
          ids.map((id) => ({ n: Number(id) })),
          checkpointAt("direct", ids.length),
          ids,
          {
            cycle,
            // The first read is the head's: a sweep stages what is new.
            phase: cycle === 1 ? "head" : "sweep",
            changes: false,
            ...(ends === undefined ? {} : { endsCycle: ends }),
          },
        );
      const recorded = async () => {
        const [row] = await db.rows<{ rows: string; last: string | null }>(
          "SELECT rows::text, last FROM partner_api_sync WHERE target = 'direct'",
        );
        // And the copy passes its own check against them.
        ok((await sink.load()) !== undefined);
        return [Number(row!.rows), row!.last?.replace(/^.*:/, "") ?? null];
      };
      const ids = Array.from({ length: 20 }, (_, i) => String(i + 1));
      await write(ids, 1);
      deepStrictEqual(await recorded(), [20, "20"]);
      // Cycle 2 sees 1..19: "20" is marked; the last row is "19".
      await write(ids.slice(0, 19), 2);
      equal(
        (await write([], 2, { deletes: "mark", maxDeletes: 0.1 }))?.deleted,
        1,
      );
      deepStrictEqual(await recorded(), [20, "19"]);
      // Cycle 3 sees nothing: all are marked, "19" too.
      equal(
        (await write([], 3, { deletes: "mark", maxDeletes: 1 }))?.deleted,
        19,
      );
      deepStrictEqual(await recorded(), [20, null]);
      // Cycle 4 sees 5 and 6 again (live again), cycle 5 nothing: both go.
      // (Marked rows back are updates: they were rows of the copy.)
      equal((await write(["5", "6"], 4))?.updated, 2);
      equal(
        (await write([], 4, { deletes: "remove", maxDeletes: 1 }))?.deleted,
        0,
      );
      deepStrictEqual(await recorded(), [20, "6"]);
      equal(
        (await write([], 5, { deletes: "remove", maxDeletes: 1 }))?.deleted,
        2,
      );
      deepStrictEqual(await recorded(), [18, null]);
      equal(await dump(db, "direct") !== "", true);
      equal(
        (await db.rows<{ n: string }>(
          `SELECT count(*)::text AS n FROM "direct" WHERE deleted_at IS NULL`,
        ))[0]!.n,
        "0",
      );
    },
  },
  {
    name:
      "a table made before deleted_at and the key column (0.3's) loads unchanged, gets both at the first touch, and a cycle removes what the list lost",
    async fn(db) {
      const fake = inProcess({ items: { transactions: 60 } });
      const sink = tableSink(db);
      await syncList(fake.client, "transactions", {
        ...byDate,
        sink,
        limit: 20,
      });
      await db.rows(
        `ALTER TABLE "transactions" DROP COLUMN IF EXISTS deleted_at, DROP COLUMN IF EXISTS seen, DROP COLUMN partner_api_key`,
      );
      const columns = async () =>
        (await db.rows<{ name: string }>(
          "SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'transactions' ORDER BY column_name",
        )).map((row) => row.name);
      deepStrictEqual(await columns(), ["id", "item"]);
      const fresh = tableSink(db);
      equal((await fresh.load())?.complete, true);
      deepStrictEqual(await columns(), ["id", "item"]); // load() only reads
      fake.service.remove("transactions", "tx_000030");
      const result = await syncList(fake.client, "transactions", {
        ...byDate,
        sink: fresh,
        limit: 20,
        sweep: Infinity,
      });
      equal(result.deleted, 1);
      deepStrictEqual(await columns(), [
        "deleted_at",
        "id",
        "item",
        "partner_api_key",
      ]);
      deepStrictEqual(await copied(db), await listed(fake));
    },
  },
  {
    name:
      "a sweep over an unchanged list rewrites no row (each row's xmin stays), and its completed cycle leaves no seen log; one changed item is the one row written",
    async fn(db) {
      const fake = inProcess({ items: { transactions: 50 } });
      const sink = tableSink(db);
      const run = () =>
        syncList(fake.client, "transactions", {
          ...byDate,
          sink,
          limit: 10,
          sweep: Infinity,
        });
      await run();
      const versions = () =>
        db.rows<{ id: string; version: string }>(
          `SELECT id, xmin::text AS version FROM "transactions" ORDER BY id`,
        );
      const before = await versions();
      const result = await run();
      equal(result.updated, 0);
      deepStrictEqual(await versions(), before);
      const logged = `SELECT count(*)::text AS n FROM partner_api_sync_seen`;
      deepStrictEqual(await db.rows(logged), [{ n: "0" }]);
      fake.service.update("transactions", "tx_000007", { amount: 1 });
      equal((await run()).updated, 1);
      const after = await versions();
      const rewritten = after.filter((row, i) =>
        row.version !== before[i]!.version
      );
      deepStrictEqual(rewritten.map((row) => row.id), ["tx_000007"]);
    },
  },
  {
    name:
      "a table an earlier 0.4 build marked with a `seen` column, taken mid-cycle: its marks become the seen log, the column goes, and the cycle completes removing only what the list lost",
    async fn(db) {
      const fake = inProcess({ items: { transactions: 200 } });
      const sink = tableSink(db);
      const run = (sweep: number) =>
        syncList(fake.client, "transactions", {
          ...byDate,
          sink,
          limit: 25,
          maxLimit: 25,
          sweep,
        });
      await run(0);
      await run(3); // the cycle under way: 75 of 200 read
      // As that build left it: each row read in the cycle marked with it, no log.
      await db.rows(
        `ALTER TABLE "transactions" ADD COLUMN seen bigint NOT NULL DEFAULT 0`,
      );
      await db.rows(
        `UPDATE "transactions" t SET seen = v.cycle FROM partner_api_sync_seen v WHERE v.id = t.id`,
      );
      await db.rows(`DELETE FROM partner_api_sync_seen`);
      fake.service.remove("transactions", "tx_000150");
      const result = await syncList(fake.client, "transactions", {
        ...byDate,
        sink: tableSink(db),
        limit: 25,
        maxLimit: 25,
        sweep: 10,
      });
      equal(result.deleted, 1);
      deepStrictEqual(await copied(db), await listed(fake));
      const [column] = await db.rows<{ n: string }>(
        `SELECT count(*)::text AS n FROM information_schema.columns WHERE table_name = 'transactions' AND column_name = 'seen'`,
      );
      equal(column!.n, "0");
    },
  },
  {
    name:
      "a deleted_at or seen column of another type (seen: not an earlier build's, whose values would become the log's), or a change table of the user's own, is refused with 'sink-mismatch' and left as it was",
    async fn(db) {
      const fake = inProcess({ items: { transactions: 30 } });
      await db.rows(
        `CREATE TABLE "odd" (id text PRIMARY KEY, item jsonb NOT NULL, deleted_at text)`,
      );
      await db.rows(
        `CREATE TABLE "mine" (id text PRIMARY KEY, item jsonb NOT NULL, seen integer)`,
      );
      for (const table of ["odd", "mine"]) {
        await rejects(
          createPostgresSink({ query: db.query, table }).load(),
          reason("sink-mismatch"),
        );
      }
      equal(await dump(db, "mine"), "");
      const sink = tableSink(db);
      await syncList(fake.client, "transactions", { ...byDate, sink });
      await db.rows(`CREATE TABLE "transactions_changes" (seq int, note text)`);
      const before = await dump(db, "transactions");
      fake.service.insertTransactions(3);
      await rejects(
        syncList(fake.client, "transactions", {
          ...byDate,
          sink,
          changes: true,
        }),
        reason("sink-mismatch"),
      );
      equal(await dump(db, "transactions"), before);
      equal(await dump(db, "transactions_changes"), "");
      // A name that leaves no room for "_changes" in 63 bytes, before
      // anything is created.
      const long = "t".repeat(56);
      await rejects(
        createPostgresSink({ query: db.query, table: long }).write(
          [{ n: 1 }],
          {
            version: 1,
            path: "things",
            sortBy: null,
            id: null,
            query: {},
            edge: { value: "1", id: "1" },
            offset: 1,
            full: false,
            complete: true,
          },
          ["1"],
          { cycle: 1, phase: "head", changes: true },
        ),
        (error: unknown) =>
          error instanceof TypeError &&
          (error as TypeError & { option?: string }).option === "table",
      );
      equal(await exists(db, long), false);
    },
  },
  {
    name:
      "a table of the user's own is refused with 'sink-mismatch' and left as it was; the sink's tables are not created",
    async fn(db) {
      await db.rows(
        `CREATE TABLE "transactions" (id text PRIMARY KEY, item jsonb NOT NULL)`,
      );
      await db.rows(
        `INSERT INTO "transactions" VALUES ('tx_000001', '{"mine": true}'), ('x', '{"mine": 2}')`,
      );
      await db.rows(`CREATE TABLE "ledger" (name text)`);
      const before = await dump(db, "transactions");
      const fake = inProcess({ items: { transactions: 20 } });
      for (const table of ["transactions", "ledger"]) {
        const sink = createPostgresSink({ query: db.query, table });
        await rejects(sink.load(), reason("sink-mismatch"));
        await rejects(
          syncList(fake.client, "transactions", { ...byDate, sink }),
          reason("sink-mismatch"),
        );
      }
      equal(await dump(db, "transactions"), before);
      equal(await dump(db, "ledger"), "");
      equal(await exists(db, "partner_api_sync"), false);
      equal(await exists(db, "partner_api_sync_lease"), false);
    },
  },
  {
    name:
      "a copy cut, changed or with a damaged checkpoint is refused with 'sink-mismatch', and left as it was",
    async fn(db) {
      const fake = inProcess({ items: { transactions: 60 } });
      const changes = {
        cut: `DELETE FROM "cut" WHERE id = 'tx_000010'`,
        // The last row committed, which the checkpoint names.
        changed:
          `UPDATE "changed" SET item = item || '{"amount": 0}' WHERE id = (SELECT substr(last, strpos(last, ':') + 1) FROM partner_api_sync WHERE target = 'changed')`,
        damaged:
          `UPDATE partner_api_sync SET checkpoint = '{}' WHERE target = 'damaged'`,
      };
      for (const [table, change] of Object.entries(changes)) {
        const sink = createPostgresSink({ query: db.query, table });
        await syncList(fake.client, "transactions", { ...byDate, sink });
        await db.rows(change);
        const before = await dump(db, table);
        const checkpoint = await dump(db, "partner_api_sync");
        fake.service.insertTransactions(5);
        await rejects(
          syncList(fake.client, "transactions", { ...byDate, sink }),
          reason("sink-mismatch"),
          table,
        );
        equal(await dump(db, table), before, table);
        equal(await dump(db, "partner_api_sync"), checkpoint, table);
      }
    },
  },
  {
    name:
      "a second run waits for the run that holds the table, and gives up with 'locked' when it holds on",
    async fn(db) {
      const fake = inProcess({ items: { transactions: 40 } });
      const first = tableSink(db);
      const held = await first.lock!();
      const waits: string[] = [];
      const second = createPostgresSink({
        query: db.query,
        table: "transactions",
        lockWait: 300,
        onLockWait: (holder) => waits.push(holder),
      });
      await rejects(
        syncList(fake.client, "transactions", { ...byDate, sink: second }),
        reason("locked"),
      );
      deepStrictEqual(waits, [`pid ${Deno.pid}`]); // the first run's process
      equal(await count(db), 0);
      const patient = createPostgresSink({
        query: db.query,
        table: "transactions",
        lockWait: 20_000,
      });
      const run = syncList(fake.client, "transactions", {
        ...byDate,
        sink: patient,
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      equal(await count(db), 0);
      await held[Symbol.asyncDispose]();
      equal((await run).written, 40);
      equal(await exists(db, "partner_api_sync_lease"), true);
      equal(await dump(db, "partner_api_sync_lease"), "");
    },
  },
  {
    name:
      "a run whose lock fails once the lease is taken (clearing stale keys) lets the lease go: the next run waits for nobody (it waited 5 s for the lease to go stale)",
    async fn(db) {
      const failing = createPostgresSink({
        query: (sql: string, params: string[]) =>
          sql.includes("partner_api_key = NULL")
            ? Promise.reject(new ConnectionLost())
            : db.query(sql, params),
        table: "transactions",
      });
      await rejects(failing.lock!(), ConnectionLost);
      equal(await dump(db, "partner_api_sync_lease"), "");
    },
  },
  {
    name:
      "a take of the lease failing as a serialization failure (SQLSTATE 40001: the database's default REPEATABLE READ or SERIALIZABLE, another run writing the lease row) is a lease held: the run waits and takes it next time (r166c F2: the driver's raw error, at once)",
    async fn(db) {
      let failed = 0;
      const waits: string[] = [];
      const sink = createPostgresSink({
        query: (sql: string, params: string[]) =>
          sql.startsWith("WITH taken") && failed++ === 0
            ? Promise.reject(Object.assign(new Error("serialize"), {
              code: "40001",
            }))
            : db.query(sql, params),
        table: "serialized",
        onLockWait: (holder) => waits.push(holder),
      });
      const service = listOf(() => spread(30, ""));
      const run = await syncList(service.client, "things", { id: "id", sink });
      deepStrictEqual([run.inserted, failed, waits], [30, 2, ["another run"]]);
    },
  },
  {
    name: "a lease not refreshed for 5 s is taken over at once",
    async fn(db) {
      const fake = inProcess({ items: { transactions: 10 } });
      const sink = createPostgresSink({
        query: db.query,
        table: "transactions",
        lockWait: 0,
      });
      await (await sink.lock!())[Symbol.asyncDispose]();
      await db.rows(
        `INSERT INTO partner_api_sync_lease VALUES ('transactions', 'a run that died', now() - interval '6 seconds')`,
      );
      equal(
        (await syncList(fake.client, "transactions", { ...byDate, sink }))
          .written,
        10,
      );
    },
  },
  {
    name:
      "a run whose lease was taken over stops with 'lock-lost' and writes nothing",
    async fn(db) {
      const fake = inProcess({ items: { transactions: 200 } });
      const inner = createPostgresSink<unknown>({
        query: db.query,
        table: "transactions",
      });
      let writes = 0;
      let before: { rows: string; checkpoint: string } | undefined;
      const sink: SyncSink<unknown> = {
        load: () => inner.load(),
        lock: (options) => inner.lock!(options),
        async write(items, checkpoint, ids) {
          if (++writes === 2) {
            before = {
              rows: await dump(db, "transactions"),
              checkpoint: await dump(db, "partner_api_sync"),
            };
            await db.rows(
              "UPDATE partner_api_sync_lease SET owner = 'another run'",
            );
          }
          return await inner.write(items, checkpoint, ids);
        },
      };
      await rejects(
        syncList(fake.client, "transactions", {
          ...byDate,
          sink,
          limit: 50,
          maxLimit: 50,
        }),
        reason("lock-lost"),
      );
      equal(writes, 2);
      ok(before !== undefined && before.rows !== "");
      equal(await dump(db, "transactions"), before.rows);
      equal(await dump(db, "partner_api_sync"), before.checkpoint);
      // The other run's lease stays: the stopped run released only its own.
      equal(
        (await db.rows<{ owner: string }>(
          "SELECT owner FROM partner_api_sync_lease",
        ))[0]?.owner,
        "another run",
      );
    },
  },
  {
    name:
      "a copy made by 0.3 (checkpoint jsonb, no row count) loads and resumes",
    async fn(db) {
      const { fake } = await copiedOnce(db, 50, {});
      await madeBy03(db, "checkpoint::jsonb");
      fake.service.insertTransactions(7);
      const later = await syncList(fake.client, "transactions", {
        ...byDate,
        sink: tableSink(db),
      });
      equal(later.written, 7);
      equal(await count(db), 57);
      const [column] = await db.rows<{ type: string }>(
        "SELECT data_type AS type FROM information_schema.columns WHERE table_name = 'partner_api_sync' AND column_name = 'checkpoint'",
      );
      equal(column?.type, "text");
    },
  },
  {
    name:
      "a 0.3 copy made through postgres.js (every item a JSON string) is refused, and resumes once converted as docs/sync.md says",
    async fn(db) {
      const { fake, sink } = await copiedOnce(db, 40, {});
      // What 0.3 left through postgres.js: the JSON text of each item and
      // of the checkpoint stored as a JSON string.
      await madeBy03(db, "to_jsonb(checkpoint)");
      await db.rows(`UPDATE "transactions" SET item = to_jsonb(item::text)`);
      fake.service.insertTransactions(6);
      await rejects(
        syncList(fake.client, "transactions", { ...byDate, sink }),
        (error: SyncError) =>
          error.reason === "sink-mismatch" &&
          error.message.includes("postgres.js"),
      );
      const docs = await Deno.readTextFile("docs/sync.md");
      const conversion = docs.match(/```sql\n([^`]*)```/)![1]!;
      for (const statement of conversion.split(";")) {
        if (statement.trim() !== "") await db.rows(statement);
      }
      equal(
        (await syncList(fake.client, "transactions", { ...byDate, sink }))
          .written,
        6,
      );
      equal(await count(db), 46);
      equal(await count(db, "jsonb_typeof(item) <> 'object'"), 0);
    },
  },
  {
    name:
      "the guard's pages of live rows key every row as its own item would (any JSON type, none, numeric ids), seen rows apart",
    async fn(db) {
      const sink = tableSink(db, "odd");
      const items = [...oddItems(12_000), ["not", "an", "object"]]; // pages of 5,000
      const ids = items.map((item, i) =>
        String((item as { n?: unknown }).n ?? i)
      );
      await sink.write(items, checkpointAt("odd", 0), ids);
      await db.rows(
        `INSERT INTO partner_api_sync_seen (target, cycle, id) SELECT 'odd', 1, id FROM "odd" WHERE length(id) % 2 = 0`,
      );
      const rows = await db.rows<{ id: string; item: string; seen: string }>(
        `SELECT id, item::text AS item, (length(id) % 2 = 0)::text AS seen FROM "odd" ORDER BY id`,
      );
      await sameGuards(
        sink,
        rows.map(({ id, item, seen }) => ({
          id,
          item: seen === "true" ? undefined : JSON.parse(item),
          seen: seen === "true",
        })),
      );
    },
  },
  {
    name:
      "'Transactions' and 'transactions' are two tables, each with its own checkpoint",
    async fn(db) {
      const fake = inProcess({
        items: { transactions: 30, organizations: 20 },
      });
      await syncList(fake.client, "transactions", {
        ...byDate,
        sink: createPostgresSink({ query: db.query, table: "Transactions" }),
      });
      await syncList(fake.client, "organizations", {
        id: "organizationID",
        sink: tableSink(db),
      });
      const targets = await db.rows<{ target: string }>(
        "SELECT target FROM partner_api_sync ORDER BY target",
      );
      deepStrictEqual(targets.map((row) => row.target), [
        "Transactions",
        "transactions",
      ]);
      equal(
        (await db.rows<{ n: string }>(
          `SELECT count(*)::text AS n FROM "Transactions"`,
        ))[0]!.n,
        "30",
      );
      equal(await count(db), 20);
    },
  },
];

// Every step of a driver on one cluster.
for (const driver of drivers) {
  clusterTest(
    `PostgreSQL sink through ${driver.name}`,
    steps.map((step) => [step.name, driver, step.fn]),
  );
}

/** What the sink keeps of a batch (the kit's storable with the dialect's text), decided before anything is sent. */
function postgresBatch(
  items: readonly unknown[],
  ids: readonly string[],
  limits?: PostgresLimits,
): { json: string; ids: readonly string[]; skipped: readonly string[] } {
  const text = (item: unknown, id: string) => postgresText(item, id, limits);
  const { rows, skipped } = storable(items, ids, { text, holds: () => true });
  return { json: postgresJson(rows), ids: rows.ids, skipped };
}

Deno.test("what PostgreSQL cannot hold is decided before sending: ids as strings, last occurrence wins, NUL and lone surrogates left out", () => {
  const batch = postgresBatch(
    [
      { n: 1 },
      { n: "a\u0000" },
      { n: "\\u0000 is text here" },
      { n: 2 },
      { "\ud800": 1 },
      { n: "\ud83d\ude00 a pair" },
      { n: 3 },
      { n: 4 },
      { n: "x".repeat(40) },
      { n: [[[[1]]]] },
    ],
    ["a", "b", "c", "a", "d", "e", "f\u0000", "g\udfff", "h", "i"],
    { idBytes: 8, itemBytes: 500, depth: 3 },
  );
  deepStrictEqual(batch.ids, ["c", "a", "e", "h"]);
  deepStrictEqual(batch.skipped, ["b", "d", "f\u0000", "g\udfff", "i"]);
  deepStrictEqual(JSON.parse(batch.json), [
    ["c", { n: "\\u0000 is text here" }],
    ["a", { n: 2 }],
    ["e", { n: "\ud83d\ude00 a pair" }],
    ["h", { n: "x".repeat(40) }],
  ]);
  // Longer than a key may be, or larger than jsonb holds.
  deepStrictEqual(
    postgresBatch([{}, {}], ["123456789", "12345678"], {
      idBytes: 8,
      itemBytes: 500,
      depth: 3,
    }).ids,
    ["12345678"],
  );
  deepStrictEqual(
    postgresBatch(
      [{ n: "x".repeat(40) }, { n: "y".repeat(600) }, { n: Array(60).fill(1) }],
      ["small", "large", "many"],
      { idBytes: 8, itemBytes: 500, depth: 3 },
    ).skipped,
    ["large", "many"],
  );
  deepStrictEqual(postgresBatch([], []).json, "[]");
});

/** A sink of the test's database in `table` ("transactions" unless told). */
function tableSink<T = unknown>(
  db: { query: Parameters<typeof createPostgresSink>[0]["query"] },
  table = "transactions",
) {
  return createPostgresSink<T>({ query: db.query, table });
}

/**
 * A fake of `transactions` items, copied once into "transactions" by date
 * with `extra` options: the fake, the sink, the options the copy took, and
 * what it did.
 */
async function copiedOnce<Extra extends object>(
  db: Connection,
  transactions: number,
  extra: Extra,
) {
  const fake = inProcess({ items: { transactions } });
  const sink = tableSink(db);
  const options = { ...byDate, sink, ...extra };
  const first = await syncList(fake.client, "transactions", options);
  return { fake, sink, options, first };
}

/**
 * What 0.3 left: no lease table, no row count or last row, and the
 * checkpoint as jsonb, made from the text by the SQL `checkpoint`.
 */
async function madeBy03(db: Connection, checkpoint: string): Promise<void> {
  await db.rows("DROP TABLE partner_api_sync_lease");
  await db.rows(
    `ALTER TABLE partner_api_sync DROP COLUMN rows, DROP COLUMN last, ALTER COLUMN checkpoint TYPE jsonb USING ${checkpoint}`,
  );
}

/** A sink written to directly (no syncList) in the table "direct". */
function directSink(
  db: { query: Parameters<typeof createPostgresSink>[0]["query"] },
) {
  return tableSink<{ n: number }>(db, "direct");
}
