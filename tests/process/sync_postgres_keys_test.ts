// The PostgreSQL sink's key column: every write keys its rows (`keyText`),
// rows earlier versions wrote are keyed once a run, and `unseenBetween`
// answers a key range from the index as a brute-force filter of the table
// would. One cluster for the file, a database per driver and step.

import fc from "fast-check";
import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import {
  createPostgresSink,
  type SyncCheckpoint,
  syncList,
  type SyncSink,
  type SyncWriteContext,
} from "../../src/sync/mod.ts";
import {
  type KeyedCopy,
  type KeyRange,
  keyText,
  storedKey,
  type UnseenRow,
} from "../../src/sync/_key_text.ts";
import type { SyncKey } from "../../src/sync/_window.ts";
import { runs } from "../_property_runs.ts";
import { listOf } from "../_sync_fake.ts";
import { checkpointAt } from "../sync_fixtures.ts";
import { clusterTest, type Connection, drivers } from "./_postgres.ts";

type Item = { id: string | number; sort?: number | string; v: number };
type Sink = SyncSink<Item> & KeyedCopy;

/** As syncList keys an item by `id` and `sort`: one without a sort value cannot be keyed. */
function keyOf(item: unknown): SyncKey {
  const { id, sort } = item as Item;
  if (sort === undefined) throw new TypeError(`item ${id} has no sort value`);
  return { value: sort, id: String(id) };
}

const keyOrNull = (item: Item) => storedKey(keyOf, item);

const byText = (a: string, b: string) => a < b ? -1 : a > b ? 1 : 0;

const CHECKPOINT: SyncCheckpoint = checkpointAt("items", 1);

/** The checkpoint of a write in cycle `cycle`, as syncList's: its ids are logged seen. */
const inCycle = (cycle: number): SyncCheckpoint => ({
  ...CHECKPOINT,
  sweep: { edge: null, offset: 0, upTo: null, cycle, startedAt: 0 },
});

let tables = 0;

function sinkOf(db: Connection, table: string): Sink {
  return createPostgresSink<Item>({ query: db.query, table }) as Sink;
}

/** Writes `items` in cycle `cycle`, keyed unless `keyed` is false (a write outside a sync): what it did. */
async function written(
  sink: Sink,
  items: readonly Item[],
  context: Omit<SyncWriteContext, "changes" | "keyOf"> & {
    keyed?: boolean;
    changes?: boolean;
  },
) {
  const { keyed = true, changes = false, ...rest } = context;
  const ids = items.map((item) => String(item.id));
  const keys = keyed ? { keyOf } : {};
  const asked = { ...rest, changes, ...keys };
  const checkpoint = inCycle(rest.cycle);
  return (await sink.write(items, checkpoint, ids, asked)) ?? {};
}

/** The table as it stands: each row's id, item, the cycles whose log holds it, whether live, and its key column. */
async function tableRows(db: Connection, table: string) {
  return (await db.rows<
    {
      id: string;
      item: string;
      seen: string;
      live: boolean;
      key: string | null;
    }
  >(
    `SELECT id, item::text AS item, deleted_at IS NULL AS live, partner_api_key AS key,
    (SELECT coalesce(json_agg(v.cycle), '[]') FROM partner_api_sync_seen v WHERE v.target = $1::text AND v.id = t.id)::text AS seen
    FROM "${table}" t`,
    [table],
  )).map((row) => ({
    ...row,
    item: JSON.parse(row.item) as Item,
    seen: JSON.parse(row.seen) as number[],
    live: String(row.live) === "true",
  }));
}

/** What `unseenBetween` answers, by brute force over the table's rows keyed in JS. */
function expected(
  rows: Awaited<ReturnType<typeof tableRows>>,
  cycle: number,
  { after, upTo, descending }: KeyRange,
  most: number,
): UnseenRow[] {
  const sign = descending ? -1 : 1;
  const within = (key: string) =>
    (after === null || sign * byText(key, after) > 0) &&
    (upTo === null || sign * byText(key, upTo) <= 0);
  return rows
    .flatMap(({ id, item, seen, live }) => {
      const key = keyOrNull(item);
      return live && !seen.includes(cycle) && key !== null && within(key)
        ? [{ id, key }]
        : [];
    })
    .sort((a, b) => sign * byText(a.key, b.key))
    .slice(0, most);
}

const unit = fc.constantFrom("a", "b", "A", "é", "日", "😀", "0", " ", "~");
const text = fc.string({ unit, minLength: 1, maxLength: 3 });
const sortValue = fc.option(
  fc.oneof(
    fc.integer({ min: -3, max: 3 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    text,
  ),
  { nil: undefined, freq: 8 },
);
const change = fc.record({ at: fc.nat(), sort: sortValue, v: fc.nat(3) });
const batch = fc.record({
  phase: fc.constantFrom("head" as const, "sweep" as const),
  keyed: fc.boolean(),
  changes: fc.array(change, { maxLength: 8 }),
});
/** A bound: none, one of the table's keys (by index), or any key's text. */
const bound = fc.option(
  fc.oneof(
    fc.nat(),
    fc.record({ value: fc.oneof(fc.integer(), text), id: text }),
  ),
);
const query = fc.record({
  back: fc.integer({ min: -1, max: 1 }),
  after: bound,
  upTo: bound,
  descending: fc.boolean(),
  most: fc.integer({ min: 0, max: 30 }),
});
const round = fc.record({
  newRun: fc.boolean(),
  batches: fc.array(batch, { maxLength: 3 }),
  end: fc.option(fc.constantFrom("mark" as const, "remove" as const)),
  queries: fc.array(query, { minLength: 1, maxLength: 4 }),
});
const scenario = fc.record({
  ids: fc.uniqueArray(fc.oneof(fc.integer({ min: -20, max: 20 }), text), {
    minLength: 1,
    maxLength: 25,
    selector: String,
  }),
  rounds: fc.array(round, { minLength: 1, maxLength: 4 }),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never;

/**
 * One scenario in a new table: each round a cycle, in the run before (its lease) or a new one; its batches, maybe its
 * end, then queries. Written without keyOf only in a run's first round: the run keys such rows once, at its first query.
 */
async function checkScenario(
  db: Connection,
  { ids, rounds }: Scenario,
): Promise<void> {
  const table = `keys_${++tables}`;
  const sink = sinkOf(db, table);
  let lease: AsyncDisposable | undefined;
  try {
    for (const [r, { newRun, batches, end, queries }] of rounds.entries()) {
      const cycle = r + 1;
      const first = r === 0 || newRun;
      if (first) {
        await lease?.[Symbol.asyncDispose]();
        lease = await sink.lock!();
      }
      for (const { phase, keyed, changes } of batches) {
        const items = changes.map(({ at, sort, v }) => ({
          id: ids[at % ids.length]!,
          v,
          ...(sort === undefined ? {} : { sort }),
        }));
        await written(sink, items, { cycle, phase, keyed: keyed || !first });
      }
      if (end !== null) {
        const endsCycle = { deletes: end, maxDeletes: 1 };
        await written(sink, [], { cycle, phase: "sweep", endsCycle });
      }
      await checkQueries(db, table, sink, cycle, queries);
    }
  } finally {
    await lease?.[Symbol.asyncDispose]();
  }
}

/** Each query answered as the brute force over the table; then every live row keyed, in JS's order. */
async function checkQueries(
  db: Connection,
  table: string,
  sink: Sink,
  cycle: number,
  queries: Scenario["rounds"][number]["queries"],
): Promise<void> {
  const rows = await tableRows(db, table);
  for (const { back, after, upTo, descending, most } of queries) {
    const keys = rows.flatMap(({ item }) => keyOrNull(item) ?? []).sort();
    const text = (at: typeof after) =>
      at === null
        ? null
        : typeof at === "number"
        ? keys[at % keys.length] ?? null
        : keyText(at);
    const range = { after: text(after), upTo: text(upTo), descending };
    const asked = cycle + back;
    deepStrictEqual(
      await sink.unseenBetween(asked, range, most, keyOf),
      expected(rows, asked, range, most),
    );
  }
  // Every live row is keyed now (but one that cannot be): PostgreSQL orders the texts as JS does.
  const stored = await tableRows(db, table);
  for (const row of stored.filter((row) => row.live)) {
    equal(row.key, keyOrNull(row.item));
  }
  const [ordered] = await db.rows<{ keys: string[] | null }>(
    `SELECT array_agg(partner_api_key ORDER BY partner_api_key) AS keys FROM "${table}" WHERE partner_api_key IS NOT NULL`,
  );
  const keys = stored.flatMap((row) => row.key ?? []);
  deepStrictEqual(ordered!.keys ?? [], keys.sort(byText));
}

const steps: { name: string; fn: (db: Connection) => Promise<void> }[] = [
  {
    name:
      "unseenBetween answers as a brute-force filter of the copy in keyText order: numbers and strings, ranges both ways and open, rows seen or not, marked, removed, staged, written without keyOf",
    async fn(db) {
      await fc.assert(
        fc.asyncProperty(scenario, (s) => checkScenario(db, s)),
        { numRuns: runs(25, 300) },
      );
    },
  },
  {
    name:
      "a table as the previous version made it (no key column, rows in it) is taken: the column and its index added, its rows keyed at the first query and answered; one its keyOf cannot key stays unkeyed and unanswered",
    async fn(db) {
      const items: Item[] = [
        { id: "b", sort: 2, v: 0 },
        { id: 7, sort: "x", v: 0 },
        { id: "a", sort: -1.5, v: 0 },
        { id: "none", v: 0 },
      ];
      const before = sinkOf(db, "old");
      await written(before, items, { cycle: 1, phase: "head", changes: true });
      await written(before, [{ id: "staged", sort: 1, v: 0 }], {
        cycle: 2,
        phase: "sweep",
      });
      await db.rows(`ALTER TABLE "old" DROP COLUMN partner_api_key`);
      await db.rows(
        "ALTER TABLE partner_api_sync_stage DROP COLUMN partner_api_key",
      );
      const rows = await db.rows(`SELECT id, item FROM "old" ORDER BY id`);
      const sink = sinkOf(db, "old");
      deepStrictEqual(await sink.load(), inCycle(2));
      {
        await using _lease = await sink.lock!();
        deepStrictEqual(await keyIndexes(db, "old"), 1);
        const open = { after: null, upTo: null, descending: false };
        const answer = [
          { id: "a", key: keyText({ value: -1.5, id: "a" }) },
          { id: "b", key: keyText({ value: 2, id: "b" }) },
          { id: "7", key: keyText({ value: "x", id: "7" }) },
        ];
        deepStrictEqual(await sink.unseenBetween(2, open, 10, keyOf), answer);
        // The staged row comes in at the cycle's end, unkeyed (staged before): the next run keys it.
        const endsCycle = { deletes: "mark" as const, maxDeletes: 1 };
        await written(sink, items, { cycle: 2, phase: "sweep", endsCycle });
      }
      const [unkeyed] = await db.rows<{ ids: string[] }>(
        `SELECT array_agg(id ORDER BY id) AS ids FROM "old" WHERE partner_api_key IS NULL`,
      );
      deepStrictEqual(unkeyed!.ids, ["none", "staged"]);
      await using _lease = await sink.lock!();
      const staged = keyText({ value: 1, id: "staged" });
      const open = { after: null, upTo: null, descending: true };
      deepStrictEqual(await sink.unseenBetween(3, open, 1, keyOf), [
        { id: "7", key: keyText({ value: "x", id: "7" }) },
      ]);
      const range = { after: keyText({ value: 2, id: "b" }), upTo: staged };
      deepStrictEqual(
        await sink.unseenBetween(3, { ...range, descending: true }, 5, keyOf),
        [{ id: "staged", key: staged }],
      );
      deepStrictEqual(
        await db.rows(
          `SELECT id, item FROM "old" WHERE id <> 'staged' ORDER BY id`,
        ),
        rows,
      );
      deepStrictEqual(await changes(db, "old"), { insert: 5 });
    },
  },
  {
    name:
      "a rewrite of an unchanged item whose key is NULL, and the back-fill of keys, count nothing as updated and record no change",
    async fn(db) {
      const items: Item[] = [
        { id: 1, sort: 10, v: 0 },
        { id: 2, sort: "b", v: 0 },
        { id: 3, sort: 30, v: 0 },
      ];
      const sink = sinkOf(db, "unchanged");
      const first = await written(sink, items, {
        cycle: 1,
        phase: "head",
        changes: true,
      });
      deepStrictEqual([first.inserted, first.updated], [3, 0]);
      const unkey = () =>
        db.rows(`UPDATE "unchanged" SET partner_api_key = NULL`);
      await unkey();
      const again = await written(sink, items, {
        cycle: 2,
        phase: "sweep",
        changes: true,
      });
      deepStrictEqual([again.inserted, again.updated], [0, 0]);
      await unkey();
      {
        await using _lease = await sink.lock!();
        const open = { after: null, upTo: null, descending: false };
        equal((await sink.unseenBetween(3, open, 10, keyOf)).length, 3);
        const changed = [{ id: 3, sort: 31, v: 1 }, ...items.slice(0, 2)];
        const third = await written(sink, changed, {
          cycle: 3,
          phase: "sweep",
          changes: true,
        });
        deepStrictEqual([third.inserted, third.updated], [0, 1]);
      }
      deepStrictEqual(await changes(db, "unchanged"), { insert: 3, update: 1 });
      const [row] = await db.rows<{ n: string }>(
        `SELECT count(*)::text AS n FROM "unchanged" WHERE partner_api_key IS NULL`,
      );
      equal(row!.n, "0");
    },
  },
  {
    name:
      "rows a writer that keeps no keys (0.4) moved are keyed again, and keys that are not what the run's keyOf makes of their items (as an id function that changed leaves them): a sweep window answered with another list where they lie is read again (100 foreign rows went in and 100 that exist were removed)",
    async fn(db) {
      type Ranked = { id: string; rank: number };
      for (const saved of [true, false]) {
        const list: Ranked[] = Array.from({ length: 2_000 }, (_, i) => ({
          id: `a${String(i).padStart(5, "0")}`,
          rank: i,
        }));
        const sorted = () => list.toSorted((a, b) => a.rank - b.rank);
        let [foreign, foreignAt] = [[] as Ranked[], -1];
        const service = listOf(sorted, {
          answer: (page, n) =>
            n === foreignAt ? foreign.slice(0, page.length) : page,
        });
        const table = `stale${++tables}`;
        const sink = createPostgresSink<Ranked>({ query: db.query, table });
        const options = { sortBy: "rank", maxLimit: 100, sink };
        await syncList(service.client, "things", {
          ...options,
          id: "id",
          sweep: 0,
        });
        const moved = sorted().slice(-101, -1); // the last committed row stays: the record names it
        moved.forEach((item, j) => item.rank = -100 + j);
        for (const item of moved) {
          await db.rows(
            `UPDATE "${table}" SET item = $1::text::jsonb WHERE id = $2::text`,
            [JSON.stringify(item), item.id],
          );
        }
        // Saved by that writer (its checkpoint), or not: then the keys at the ends tell.
        if (saved) {
          await db.rows(
            `UPDATE partner_api_sync SET checkpoint = checkpoint || ' '`,
          );
        }
        foreign = moved.map((item, j) => ({ id: `x${j}`, rank: item.rank }));
        foreignAt = service.requests + 2; // the sweep's first window, after the head's one request
        const run = await syncList(service.client, "things", {
          ...options,
          id: "id",
          sweep: Infinity,
        });
        const live = await db.rows<{ n: string; x: string }>(
          `SELECT count(*)::text AS n, count(*) FILTER (WHERE id LIKE 'x%')::text AS x FROM "${table}" WHERE deleted_at IS NULL`,
        );
        deepStrictEqual([run.inserted, run.deleted, live[0]!.n, live[0]!.x], [
          0,
          0,
          "2000",
          "0",
        ], `saved ${saved}`);
      }
    },
  },
  {
    name:
      "keying rows again stops between pages when the run aborts (a Ctrl-C waited 41 s while 300,000 rows were keyed), and the pages keyed so far stay",
    async fn(db) {
      const stop = new AbortController();
      const table = `abort${++tables}`;
      const sink = createPostgresSink<Item>({
        query: async (sql, params) => {
          const rows = await db.query(sql, params);
          if (sql.startsWith(`UPDATE "${table}" t SET`)) stop.abort(); // a page keyed
          return rows;
        },
        table,
      }) as Sink;
      await using _lease = await sink.lock!();
      const items = Array.from({ length: 3_000 }, (_, i) => ({
        id: `${i}`,
        sort: i,
        v: 0,
      }));
      await written(sink, items, { cycle: 1, phase: "head", keyed: false });
      const open = { after: null, upTo: null, descending: false };
      await rejects(
        sink.unseenBetween(2, open, 10, keyOf, stop.signal),
        (error: Error) => error.name === "AbortError",
      );
      const [counted] = await db.rows<{ n: string }>(
        `SELECT count(partner_api_key)::text AS n FROM "${table}"`,
      );
      equal(counted!.n, "1000");
    },
  },
  {
    name:
      "an item whose key text would pass an index entry's size (a sort value of 2,500 characters, 4 hex digits each) is written with no key and never answered (it failed the write with error 54000, and every run after it)",
    async fn(db) {
      const sink = sinkOf(db, `long${++tables}`);
      await using _lease = await sink.lock!();
      const items = [{ id: "a", sort: "x".repeat(2_500), v: 0 }, {
        id: "b",
        sort: "y",
        v: 0,
      }];
      await written(sink, items, { cycle: 1, phase: "head" });
      const open = { after: null, upTo: null, descending: false };
      const answered = await sink.unseenBetween(2, open, 10, keyOf);
      deepStrictEqual(answered.map((row) => row.id), ["b"]);
    },
  },
  {
    name:
      "two tables of 63 characters that differ only in the last each get their key index (PostgreSQL names it within 63 bytes), once",
    async fn(db) {
      for (const last of ["1", "2", "1"]) {
        const table = `${"t".repeat(62)}${last}`;
        const sink = sinkOf(db, table);
        await using _lease = await sink.lock!();
        equal(await keyIndexes(db, table), 1);
        await written(sink, [{ id: last, sort: 1, v: 0 }], {
          cycle: 1,
          phase: "head",
        });
        const open = { after: null, upTo: null, descending: false };
        deepStrictEqual(await sink.unseenBetween(2, open, 10, keyOf), [
          { id: last, key: keyText({ value: 1, id: last }) },
        ]);
      }
    },
  },
  {
    name:
      "on 100,000 rows, unseenBetween reads the key index (EXPLAIN), ascending and descending, bounded or open",
    async fn(db) {
      const sent: { sql: string; params: string[] }[] = [];
      const sink = createPostgresSink<Item>({
        query: (
          sql,
          params,
        ) => (sent.push({ sql, params }), db.query(sql, params)),
        table: "large",
      }) as Sink;
      await using _lease = await sink.lock!();
      // Keyed as an earlier version left them: none, so the first read keys them all (and checks them, as ever).
      await db.rows(
        `INSERT INTO "large" (id, item) SELECT g::text, json_build_object('id', g::text, 'sort', g, 'v', 0)
          FROM generate_series(1, 100000) AS g`,
      );
      // Cycle 1 saw every other row.
      await db.rows(
        `INSERT INTO partner_api_sync_seen (target, cycle, id) SELECT 'large', 1, g::text
          FROM generate_series(1, 100000, 2) AS g`,
      );
      await sink.unseenBetween(
        1,
        { after: null, upTo: null, descending: false },
        1,
        keyOf,
      );
      await db.rows(`ANALYZE "large"`);
      const key = (n: number) => keyText({ value: n, id: String(n) });
      const ranges: KeyRange[] = [
        { after: key(50_000), upTo: key(50_400), descending: false },
        { after: key(50_400), upTo: key(50_000), descending: true },
        { after: null, upTo: key(200), descending: false },
        { after: null, upTo: null, descending: true },
      ];
      for (const range of ranges) {
        sent.length = 0;
        const answer = await sink.unseenBetween(1, range, 100, keyOf);
        ok(answer.length > 0 && answer.length <= 100);
        // The range read (a lease refresh may come after it).
        const { sql, params } = sent.findLast(({ sql }) =>
          sql.includes("partner_api_sync_seen")
        )!;
        const [plan] = await db.rows<{ "QUERY PLAN": unknown }>(
          `EXPLAIN (FORMAT JSON) ${sql}`,
          params,
        );
        const found = plan!["QUERY PLAN"];
        const text = typeof found === "string" ? found : JSON.stringify(found);
        ok(text.includes('"Index Name":"large_partner_api_key_idx"'), text);
        ok(!/"Node Type": ?"Seq Scan"/.test(text), text);
        // A bounded range the planner may read through a bitmap of the index
        // and sort (it did on a busy machine, by the sampled correlation); the
        // open one, 100,000 rows, it must read in the index's order.
        const open = range.after === null && range.upTo === null;
        if (open) ok(!/"Node Type": ?"Sort"/.test(text), text);
      }
    },
  },
  {
    name:
      "a cycle's end keeps the rows its context names (`kept`: those the run ending a spread cycle could not read again), in both deletes modes: neither removed nor marked, no delete change row; the other unseen rows go",
    async fn(db) {
      for (const deletes of ["remove", "mark"] as const) {
        const table = `kept_${deletes}`;
        const sink = sinkOf(db, table);
        const items = ["a", "b", "c"].map((id) => ({ id, sort: 1, v: 0 }));
        await written(sink, items, { cycle: 1, phase: "head", changes: true });
        const endsCycle = { deletes, maxDeletes: 1 };
        const ending = { cycle: 2, phase: "sweep" as const, changes: true };
        const report = await written(sink, items.slice(0, 1), {
          ...ending,
          endsCycle,
          kept: ["b"],
        });
        equal(report.deleted, 1);
        const live = await db.rows<{ id: string }>(
          `SELECT id FROM "${table}" WHERE deleted_at IS NULL ORDER BY id`,
        );
        deepStrictEqual(live.map((row) => row.id), ["a", "b"]);
        deepStrictEqual(await changes(db, table), { insert: 3, delete: 1 });
      }
    },
  },
];

/** How many indexes of `table` have the key column first. */
async function keyIndexes(db: Connection, table: string): Promise<number> {
  const [row] = await db.rows<{ n: string }>(
    `SELECT count(*)::text AS n FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
    WHERE i.indrelid = to_regclass($1::text) AND a.attname = 'partner_api_key' AND i.indpred IS NOT NULL`,
    [`"${table}"`],
  );
  return Number(row!.n);
}

/** How many changes of each kind `<table>_changes` holds. */
async function changes(
  db: Connection,
  table: string,
): Promise<Record<string, number>> {
  const rows = await db.rows<{ change: string; n: string }>(
    `SELECT change, count(*)::text AS n FROM "${table}_changes" GROUP BY change`,
  );
  return Object.fromEntries(rows.map((row) => [row.change, Number(row.n)]));
}

clusterTest(
  "PostgreSQL sink's key column, through both drivers, on one cluster",
  drivers.flatMap((driver) =>
    steps.map((step) =>
      [`${driver.name}: ${step.name}`, driver, step.fn] as const
    )
  ),
);
