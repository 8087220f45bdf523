// The SQLite copy's keys for the guard's range reads (`unseenBetween`): every write carries its item's key text, rows
// written before the key column are keyed when a run first asks, and a range's unseen rows equal a brute-force filter
// of the table's live rows over the cycle's log, sorted by `keyText`.

import fc from "fast-check";
import { deepStrictEqual, equal } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import {
  createSqliteSink,
  type SqliteSink,
  type SyncCheckpoint,
  type SyncWriteContext,
} from "../src/sync/mod.ts";
import {
  type KeyedCopy,
  type KeyRange,
  keyText,
  type UnseenRow,
} from "../src/sync/_key_text.ts";
import { runs } from "./_property_runs.ts";
import { withFakeTimers } from "./_helpers.ts";
import { freshTarget } from "./_sync_fake.ts";

type Item = {
  id: string | number;
  v?: string | number | undefined;
  rev: number;
};
type Sink = SqliteSink<Item> & KeyedCopy;

const TABLE = "items";

/** The run's key: an item without a sort value cannot be keyed (as one written by an earlier configuration). */
function keyOf(item: unknown) {
  const { id, v } = item as Item;
  if (v === undefined) throw new Error(`item ${id} has no sort value`);
  return { value: v, id: String(id) };
}

function checkpoint(cycle: number): SyncCheckpoint {
  const sweep = { edge: null, offset: 0, upTo: null, cycle, startedAt: 0 };
  return {
    ...{ version: 1, path: "items", sortBy: "v", id: "id", query: {} },
    ...{ edge: null, offset: 0, full: false, complete: true, sweep },
  };
}

function context(
  cycle: number,
  more: Partial<SyncWriteContext> = {},
): SyncWriteContext {
  return { cycle, phase: "head", changes: false, keyOf, ...more };
}

function open(db: DatabaseSync): Sink {
  return createSqliteSink<Item>(db, { table: TABLE }) as Sink;
}

async function write(
  sink: Sink,
  items: readonly Item[],
  cycle: number,
  more: Partial<SyncWriteContext> = {},
) {
  const ids = items.map((item) => String(item.id));
  const done = await sink.write(items, checkpoint(cycle), ids, {
    ...context(cycle),
    ...more,
  });
  return done ?? {};
}

/** What the copy should answer: its live rows the cycle's log lacks, keyed by `keyOf` (one it cannot key left out). */
function bruteForce(
  db: DatabaseSync,
  cycle: number,
  { after, upTo, descending }: KeyRange,
  most: number,
): UnseenRow[] {
  const log = db.prepare(
    "SELECT id FROM partner_api_sync_seen WHERE target = ? AND cycle = ?",
  ).all(TABLE, cycle);
  const seen = new Set(log.map((row) => row.id));
  const live = db.prepare(
    `SELECT id, item FROM ${TABLE} WHERE deleted_at IS NULL`,
  ).all();
  const rows = live.flatMap(({ id, item }) => {
    if (seen.has(id)) return [];
    try {
      return [{ id: `${id}`, key: keyText(keyOf(JSON.parse(`${item}`))) }];
    } catch {
      return [];
    }
  });
  const inside = (key: string) =>
    descending
      ? (after === null || key < after) && (upTo === null || key >= upTo)
      : (after === null || key > after) && (upTo === null || key <= upTo);
  const sorted = rows.filter((row) => inside(row.key))
    .sort((a, b) => a.key < b.key ? -1 : 1);
  return (descending ? sorted.reverse() : sorted).slice(0, most);
}

/** Every live row's stored key: its item's (null for one `keyOf` cannot key, or not yet keyed). */
function storedKeys(db: DatabaseSync) {
  const rows = db.prepare(
    `SELECT item, partner_api_key AS key FROM ${TABLE} WHERE deleted_at IS NULL`,
  ).all();
  return rows.map((row) => {
    let key: string | null = null;
    try {
      key = keyText(keyOf(JSON.parse(`${row.item}`)));
    } catch { /* cannot be keyed */ }
    return { stored: row.key, key };
  });
}

const value = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -3, max: 3 }),
  fc.string({ maxLength: 3 }),
);
const universe = fc.uniqueArray(
  fc.record({
    id: fc.oneof(
      fc.integer({ min: -50, max: 50 }),
      fc.string({ minLength: 1, maxLength: 3 }).filter((id) =>
        !id.includes("\0")
      ),
    ),
    v: fc.option(value, { nil: undefined, freq: 8 }),
  }),
  { selector: (item) => String(item.id), minLength: 1, maxLength: 24 },
);
const pick = fc.record({
  at: fc.nat(),
  rev: fc.nat({ max: 2 }),
  v: fc.option(value, { nil: undefined, freq: 3 }),
});
const bound = fc.oneof(
  fc.constant(null),
  fc.nat().map((at) => ({ at })),
  fc.record({ value, id: fc.string({ maxLength: 3 }) }).map(keyText),
);
const step = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("write" as const),
      picks: fc.array(pick, { maxLength: 12 }),
      phase: fc.constantFrom("head" as const, "sweep" as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("end" as const),
      deletes: fc.constantFrom("remove" as const, "mark" as const),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("ask" as const),
      bounds: fc.tuple(bound, bound),
      inverted: fc.nat({ max: 5 }).map((n) => n === 0), // bounds out of the range's order: none is in it
      descending: fc.boolean(),
      most: fc.oneof(fc.nat({ max: 30 }), fc.constant(Infinity)),
      before: fc.nat({ max: 3 }).map((n) => n === 0),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("run" as const),
      same: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("legacy" as const),
      every: fc.nat({ max: 3 }),
      same: fc.boolean(),
    }),
  },
);

Deno.test("a range's unseen rows are the brute-force filter of the live rows over the cycle's log, in key order, at most `most`", async () => {
  await fc.assert(
    fc.asyncProperty(
      universe,
      fc.array(step, { minLength: 1, maxLength: 14 }),
      async (all, steps) => {
        const db = new DatabaseSync(":memory:");
        let sink = open(db);
        let lock = await sink.lock!();
        let cycle = 1;
        // A run of the same sink, or of another over the same database.
        const rerun = async (same: boolean) => {
          await lock[Symbol.asyncDispose]();
          if (!same) sink = open(db);
          lock = await sink.lock!();
        };
        try {
          for (const s of steps) {
            if (s.op === "write") {
              const items = s.picks.map(({ at, rev, v }) => {
                const item = all[at % all.length]!;
                return { ...item, rev, ...(v === undefined ? {} : { v }) };
              });
              await write(sink, items, cycle, { phase: s.phase });
            } else if (s.op === "end") {
              const ends = { deletes: s.deletes, maxDeletes: 1e9 };
              await write(sink, [], cycle, { endsCycle: ends });
              cycle++;
            } else if (s.op === "run") await rerun(s.same);
            else if (s.op === "legacy") {
              // As an earlier version left them: rows without a key.
              db.exec(
                `UPDATE ${TABLE} SET partner_api_key = NULL WHERE rowid % 4 >= ${s.every}`,
              );
              await rerun(s.same);
            } else {
              const keys = storedKeys(db).flatMap((row) => row.key ?? []);
              const at = (b: typeof s.bounds[0]) =>
                typeof b === "object" && b !== null
                  ? keys.length === 0 ? null : keys.sort()[b.at % keys.length]!
                  : b;
              let [after, upTo] = s.bounds.map(at) as [string | null, string];
              if (
                after !== null && upTo !== null &&
                (after > upTo) !== (s.descending !== s.inverted)
              ) [after, upTo] = [upTo, after];
              const range = { after, upTo, descending: s.descending };
              const asked = s.before ? cycle - 1 : cycle;
              const answer = await sink.unseenBetween(
                asked,
                range,
                s.most,
                keyOf,
              );
              deepStrictEqual(answer, bruteForce(db, asked, range, s.most));
              // Each live row keyed as its item is (none left unkeyed but what cannot be).
              for (const { stored, key } of storedKeys(db)) equal(stored, key);
            }
          }
        } finally {
          await lock[Symbol.asyncDispose]();
          equal(db.isTransaction, false);
          db.close();
        }
      },
    ),
    { numRuns: runs(150, 2_000) },
  );
});

Deno.test("a table the previous version made (no key column, rows, a checkpoint) is taken, keyed when asked, and answered right", async () => {
  using db = new DatabaseSync(":memory:");
  const items: Item[] = [
    { id: 3, v: 30, rev: 0 },
    { id: "b", v: "x", rev: 0 },
    { id: 1, v: -1, rev: 0 },
    { id: "nokey", rev: 0 }, // no sort value: never keyed, never answered
    { id: "seen", v: 5, rev: 0 },
  ];
  const first = open(db);
  await using _lock = await first.lock!();
  await write(first, items, 1);
  await _lock[Symbol.asyncDispose]();
  // As 0.4 left it: no key column, no index on it or on the log.
  db.exec(
    `DROP INDEX items_partner_api_key; DROP INDEX partner_api_sync_seen_ids;
    ALTER TABLE ${TABLE} DROP COLUMN partner_api_key`,
  );
  db.exec(
    `INSERT INTO partner_api_sync_seen (target, cycle, id) VALUES ('${TABLE}', 2, 'seen')`,
  );
  const sink = open(db);
  equal((await sink.load())?.sweep?.cycle, 1); // not refused
  await using lock = await sink.lock!();
  const columns = db.prepare(`SELECT name FROM pragma_table_info('${TABLE}')`)
    .all().map((row) => row.name);
  deepStrictEqual(columns, ["id", "item", "deleted_at", "partner_api_key"]);
  const all = { after: null, upTo: null, descending: false };
  const answer = await sink.unseenBetween(2, all, Infinity, keyOf);
  const expected = [items[2]!, items[0]!, items[1]!].map((item) => ({
    id: String(item.id),
    key: keyText(keyOf(item)),
  }));
  deepStrictEqual(answer, expected); // numbers first, then strings; "seen" and "nokey" left out
  const keyed = db.prepare(
    `SELECT id, partner_api_key AS key FROM ${TABLE} ORDER BY id`,
  ).all().map((row) => [row.id, row.key]);
  deepStrictEqual(keyed, [
    ["1", expected[0]!.key],
    ["3", expected[1]!.key],
    ["b", expected[2]!.key],
    ["nokey", null],
    ["seen", keyText({ value: 5, id: "seen" })],
  ]);
  const down = { after: null, upTo: expected[0]!.key, descending: true };
  deepStrictEqual(
    await sink.unseenBetween(2, down, 2, keyOf),
    [expected[2]!, expected[1]!],
  );
  await lock[Symbol.asyncDispose]();
  equal(db.isTransaction, false);
});

Deno.test("keying rows, or writing an unchanged item whose row has no key, counts and records nothing as updated", async () => {
  using db = new DatabaseSync(":memory:");
  const items: Item[] = [{ id: 1, v: 1, rev: 0 }, { id: 2, v: 2, rev: 0 }];
  const sink = open(db);
  await using lock = await sink.lock!();
  // A write outside a sync (no `keyOf`): rows without keys, as earlier versions wrote them.
  await sink.write(items, checkpoint(1), ["1", "2"], {
    ...{ cycle: 1, phase: "head", changes: true },
  });
  const keys = () =>
    db.prepare(`SELECT partner_api_key AS key FROM ${TABLE} ORDER BY id`).all()
      .map((row) => row.key);
  deepStrictEqual(keys(), [null, null]);
  const again = await write(sink, items, 1, { changes: true });
  equal(again.updated ?? 0, 0);
  deepStrictEqual(keys(), [null, null]); // left for the back-fill
  const all = { after: null, upTo: null, descending: false };
  equal((await sink.unseenBetween(2, all, 10, keyOf)).length, 2);
  deepStrictEqual(keys(), items.map((item) => keyText(keyOf(item))));
  const third = await write(sink, items, 2, { changes: true });
  equal(third.updated ?? 0, 0);
  const changes = db.prepare(
    `SELECT change, count(*) AS n FROM ${TABLE}_changes GROUP BY change`,
  ).all().map((row) => [row.change, row.n]);
  deepStrictEqual(changes, [["insert", 2]]);
  await lock[Symbol.asyncDispose]();
  equal(db.isTransaction, false);
});

Deno.test("keying rows inside a transaction batches share (a copy of 20,000 rows under a lease) commits with them, none left open", async () => {
  using db = new DatabaseSync(":memory:");
  const items = Array.from(
    { length: 20_500 },
    (_, i) => ({ id: i, v: -i, rev: 0 }),
  );
  const sink = open(db);
  const first = await sink.lock!();
  await write(sink, items, 1);
  await first[Symbol.asyncDispose]();
  db.exec(`UPDATE ${TABLE} SET partner_api_key = NULL WHERE rowid % 3 = 0`);
  const lock = await sink.lock!();
  await write(sink, items.slice(0, 10), 2, { phase: "sweep" });
  equal(db.isTransaction, true); // the batch's transaction left open for the next
  const all = { after: null, upTo: null, descending: false };
  const answer = await sink.unseenBetween(2, all, 3, keyOf);
  deepStrictEqual(answer.map((row) => row.id), ["20499", "20498", "20497"]);
  await lock[Symbol.asyncDispose]();
  equal(db.isTransaction, false);
  const unkeyed = db.prepare(
    `SELECT count(*) AS n FROM ${TABLE} WHERE partner_api_key IS NULL`,
  ).get();
  equal(unkeyed?.n, 0);
});

Deno.test("keying rows while another connection holds the write lock waits on timers, and the run's signal stops it with its reason (r40 F2: the thread blocked in SQLite, the abort heard seconds late)", async () => {
  const path = await freshTarget("sqlite-keys", "held.db");
  const items = [1, 2, 3].map((id) => ({ id, v: id, rev: 0 }));
  using sink = createSqliteSink<Item>(path, { table: TABLE }) as Sink;
  await write(sink, items, 1); // no lease: its refresh would wait on the faked timers
  const other = new DatabaseSync(path);
  other.exec(`UPDATE ${TABLE} SET partner_api_key = NULL; BEGIN IMMEDIATE`);
  await withFakeTimers(async (timers) => {
    const controller = new AbortController();
    const reason = new Error("stop");
    const all = { after: null, upTo: null, descending: false };
    let settled: unknown = "pending";
    sink.unseenBetween(2, all, Infinity, keyOf, controller.signal)
      .then((rows) => settled = rows, (error) => settled = error);
    for (let turn = 0; turn < 10; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
      await timers.tickAsync(100);
    }
    equal(settled, "pending");
    controller.abort(reason);
    await new Promise((resolve) => setImmediate(resolve));
    await timers.tickAsync(200);
    equal(settled, reason);
  });
  other.exec("ROLLBACK");
  other.close();
  const all = { after: null, upTo: null, descending: false };
  equal((await sink.unseenBetween(2, all, Infinity, keyOf)).length, 3);
});
