// The guard judged before each sweep window commits (issue 45), as pure
// decisions: which unseen rows a window passed, in either order, and when
// the window is held back. The sinks' side: tests/sync_guard_test.ts.

import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import {
  createJsonlSink,
  createSqliteSink,
  SyncError,
} from "../src/sync/mod.ts";
import {
  doubter,
  heldBack,
  passedUnseen,
  type WindowGuard,
  windowGuard,
} from "../src/sync/_window_guard.ts";
import { syncConfig } from "../src/sync/_config.ts";
import type { SyncKey } from "../src/sync/_window.ts";
import { freshTarget } from "./_sync_fake.ts";
import {
  checkpointAt,
  oddItems,
  plainGuard,
  sameGuards,
} from "./sync_fixtures.ts";

const key = (n: number) => ({ value: n, id: `r${n}` });

/** Rows 1..n, the even ones already seen in the cycle; row 7 has no key. */
async function* rows(n: number) {
  for (let i = 1; i <= n; i++) {
    yield { id: `r${i}`, item: i === 7 ? {} : { n: i }, seen: i % 2 === 0 };
  }
}

const keyOf = (item: unknown) => {
  const n = (item as { n?: number }).n;
  if (n === undefined) throw new Error("no id");
  return key(n);
};

async function guardOf(descending: boolean): Promise<WindowGuard> {
  const recent = { deleted: 0, largest: 0 };
  const figures = { maxDeletes: 0.1, recent, descending };
  return (await windowGuard(rows(100), keyOf, figures))!;
}

Deno.test("the guard keeps every live row in `held` and the unseen ones with a key; a row without one is left to the cycle's end", async () => {
  const guard = await guardOf(false);
  equal(guard.held, 100);
  equal(guard.unseen.size, 49); // the 50 odd rows but row 7
  equal(guard.unseen.has("r7"), false);
});

Deno.test("a copy larger than a run judges window by window is left to the cycle's end: no guard, its rows read no further", async () => {
  const recent = { deleted: 0, largest: 0 };
  const figures = { maxDeletes: 0.1, recent, descending: false };
  equal((await windowGuard(rows(100), keyOf, figures, 100))?.held, 100);
  let read = 0;
  async function* counted() {
    for await (const row of rows(100)) read++, yield row;
  }
  equal(await windowGuard(counted(), keyOf, figures, 10), undefined);
  equal(read, 11);
});

Deno.test("a window passes the unseen rows at or before its last key (descending: at or after); a pass that ended passes them all", async () => {
  const up = await guardOf(false);
  const down = await guardOf(true);
  for (const last of [1, 2, 9, 50, 99, 100]) {
    const odd = (from: number, to: number) =>
      [...Array(100).keys()].map((i) => i + 1).filter((i) =>
        i % 2 === 1 && i !== 7 && i >= from && i <= to
      ).length;
    equal(passedUnseen(up, key(last), false), odd(1, last), `up ${last}`);
    equal(passedUnseen(down, key(last), false), odd(last, 100), `down`);
  }
  equal(passedUnseen(up, null, false), 0);
  equal(passedUnseen(up, key(1), true), 49);
});

Deno.test("a window is held back once its passed-and-unseen rows break maxDeletes, and every window after it; a window's own ids are seen, and the refusal counts what the last window passed", async () => {
  const guard = await guardOf(false);
  // 10 of 100 may go: rows 1..21 pass 10 unseen (1, 3, 5, 9, ..., 21).
  equal(heldBack(guard, { ids: [], last: key(21), ended: false }), false);
  equal(guard.refused, undefined);
  // Row 23 seen by this window: still 10.
  equal(heldBack(guard, { ids: ["r23"], last: key(24), ended: false }), false);
  equal(heldBack(guard, { ids: [], last: key(25), ended: false }), true);
  equal(guard.refused, 11);
  // Held back from now on, whatever the window sees; the count grows.
  const all = [...guard.unseen.keys()];
  equal(
    heldBack(guard, { ids: all.slice(0, 5), last: key(40), ended: false }),
    true,
  );
  equal(heldBack(guard, { ids: [], last: key(100), ended: true }), true);
  deepStrictEqual(guard.refused, all.length - 5);
});

Deno.test("the refusal never counts more rows than the copy holds, windows read twice alike weighed twice (it quoted 'would remove 1104 of 607 rows')", async () => {
  const guard = await guardOf(false);
  const doubts = doubter(guard);
  // Two windows of another list, each read twice alike, both passing all 49 unseen rows: 98 doubled.
  for (const other of ["x1", "x2"]) {
    const window = { ids: [other], state: { edge: key(100) } };
    equal(doubts(window), true);
    equal(doubts(window), false);
  }
  equal(guard.doubled, 98);
  equal(heldBack(guard, { ids: [], last: key(100), ended: true }), true);
  equal(guard.refused, 49); // the rows unseen when the sweep started, of 100
});

Deno.test("a window weighs the cycle's share alone: the last 24 hours' deletes are its end's (a record may leave the 24 hours before it)", async () => {
  const guard = {
    ...(await guardOf(false)),
    recent: { deleted: 5, largest: 100 },
  };
  equal(heldBack(guard, { ids: [], last: key(21), ended: false }), false); // 10 of 100
  equal(heldBack(guard, { ids: [], last: key(23), ended: false }), true);
  equal(guard.refused, 11);
});

Deno.test("the passed-and-unseen count, kept as the pass moves on, equals a count over every unseen row, whatever windows see and whichever way they move", () => {
  fc.assert(
    fc.property(
      fc.boolean(),
      fc.array(
        fc.record({
          last: fc.integer({ min: 0, max: 60 }),
          ids: fc.array(fc.integer({ min: 1, max: 50 }), { maxLength: 6 }),
        }),
        { maxLength: 30 },
      ),
      (descending, windows) => {
        const unseen = new Map(
          [...Array(50).keys()].map((i) => [`r${i + 1}`, key(i + 1)]),
        );
        const sign = descending ? -1 : 1;
        const order = [...unseen.keys()].sort((a, b) =>
          sign * (unseen.get(a)!.value - unseen.get(b)!.value)
        );
        const guard: WindowGuard = {
          unseen,
          held: 50,
          maxDeletes: 1,
          recent: { deleted: 0, largest: 0 },
          descending,
          passed: { order, at: 0, last: null, behind: 0 },
          doubled: 0,
        };
        for (const window of windows) {
          const ids = window.ids.map((n) => `r${n}`);
          heldBack(guard, { ids, last: key(window.last), ended: false });
          const naive = [...unseen.values()].filter((k) =>
            sign * (k.value - window.last) <= 0
          ).length;
          equal(passedUnseen(guard, key(window.last), false), naive);
        }
      },
    ),
  );
});

Deno.test("a SQL sink lists no rows of a copy larger than asked (one count, not a read), and the guard is then left to the cycle's end", async () => {
  using sink = createSqliteSink<{ n: number }>(":memory:", {
    table: "numbers",
  });
  const checkpoint = {
    version: 1 as const,
    path: "numbers",
    sortBy: "n",
    id: "n",
    query: {},
    edge: { value: 3, id: "3" },
    offset: 3,
    full: false,
    complete: true,
  };
  await sink.write([{ n: 1 }, { n: 2 }, { n: 3 }], checkpoint, ["1", "2", "3"]);
  const listed = (most?: number) =>
    Array.fromAsync(sink.liveRows!(1, keyOf, most));
  equal((await listed()).length, 3);
  equal((await listed(3)).length, 3);
  equal((await listed(2)).length, 0);
  const recent = { deleted: 0, largest: 0 };
  const figures = { maxDeletes: 0.1, recent, descending: false };
  equal(
    await windowGuard(sink.liveRows!(1, keyOf, 2), keyOf, figures),
    undefined,
  );
});

Deno.test("rows whose ids are not their keys' are ordered by their keys all the same, by the ids the rows have", async () => {
  const rows = [3, 1, 2].map((n) => ({ id: `row ${n}`, item: n, seen: false }));
  const keyOf = (item: unknown) => ({ value: -Number(item), id: `${item}` });
  const figures = { maxDeletes: 0.1, recent: { deleted: 0, largest: 0 } };
  for (const descending of [false, true]) {
    const all = async function* () {
      yield* rows;
    };
    const guard = await windowGuard(all(), keyOf, { ...figures, descending });
    const order = ["row 3", "row 2", "row 1"];
    deepStrictEqual(guard!.passed.order, descending ? order.reverse() : order);
    deepStrictEqual(await plainGuard(rows, keyOf, descending), [
      3,
      [...guard!.unseen],
      guard!.passed.order,
    ]);
  }
});

Deno.test("the SQL sink's pages key every row as its own item would (any JSON type, none, numeric ids), seen rows apart; a text that is no item fails as before", async () => {
  const database = new DatabaseSync(":memory:");
  using sink = createSqliteSink(database, { table: "odd" });
  const items = oddItems(2_600); // pages of 1,000
  const ids = items.map((item) => String(item.n));
  await sink.write(
    [...items, ["not", "an", "object"]],
    checkpointAt("odd", 0),
    [
      ...ids,
      "array",
    ],
  );
  database.exec(`INSERT INTO partner_api_sync_seen (target, cycle, id)
    SELECT 'odd', 1, id FROM "odd" WHERE rowid % 7 = 0`);
  const read = database.prepare(`SELECT id, item, id IN
    (SELECT id FROM partner_api_sync_seen WHERE cycle = 1) AS seen FROM "odd"`);
  const rows = (read.all() as { id: string; item: string; seen: number }[])
    .map(({ id, item, seen }) => ({
      id,
      item: seen ? undefined : JSON.parse(item),
      seen: seen === 1,
    }));
  await sameGuards(sink, rows);
  // A text that is no item: one the cycle saw is not read (as before); an unseen one fails the read as it did.
  const [seenRow, unseenRow] = [rows.find((row) => row.seen), rows[1500]]
    .map((row) => row!.id);
  const list = () => Array.fromAsync(sink.liveRows!(1, () => key(0)));
  for (const corrupt of ["1,2", "1\u001e2"]) {
    const set = database.prepare(`UPDATE "odd" SET item = ? WHERE id = ?`);
    set.run(corrupt, seenRow!);
    equal((await list()).length, rows.length);
    set.run(corrupt, unseenRow!);
    await rejects(list(), SyntaxError);
    set.run(JSON.stringify(items[Number(unseenRow)]), unseenRow!);
  }
});

Deno.test("the JSONL sink's lines key every row as its own item would; a line that is no item (two values, which the fast parse of the whole read would take for two items) fails the read, SyncError 'sink-mismatch' naming the copy", async () => {
  const path = await freshTarget("sync-window-guard", "odd.jsonl");
  const sink = createJsonlSink(path);
  const items = oddItems(2_600);
  await sink.write(items, checkpointAt("odd", 0), []);
  const lines = (await Deno.readTextFile(path)).split("\n").slice(0, -1);
  const { keyOf } = syncConfig("odd", { id: "n", sink });
  const rows = lines.map((line) => {
    const item = JSON.parse(line);
    try {
      return { id: keyOf(item).id, item, seen: false };
    } catch {
      return { id: line, item, seen: false };
    }
  });
  await sameGuards(sink, rows);
  const text = await Deno.readTextFile(path);
  await Deno.writeTextFile(
    path,
    text.replace(lines[1500]!, "1,2".padEnd(lines[1500]!.length)),
  );
  await rejects(
    Array.fromAsync(sink.liveRows!(1, keyOf as (item: unknown) => SyncKey)),
    (error: unknown) => {
      ok(error instanceof SyncError, String(error));
      equal(error.reason, "sink-mismatch");
      equal(error.path, path);
      return true;
    },
  );
});
