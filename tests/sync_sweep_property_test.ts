// The copy stays true (issues 41, 45), in memory, SQLite and JSONL, by the
// schedules and invariants of tests/_sweep_schedules.ts (PostgreSQL's:
// tests/process/sync_postgres_sweep_property_test.ts).

import { DatabaseSync } from "node:sqlite";
import { createJsonlSink, createSqliteSink } from "../src/sync/mod.ts";
import { checkSchedules, freshTarget, memorySink } from "./_sync_fake.ts";
import { runs } from "./_property_runs.ts";
import {
  checkReplay,
  type Copy,
  emptiedUnderReads,
  movedUnderCursor,
  movingUnderReads,
  reached,
  restored,
  type Row,
  runSchedule,
  schedules,
  STEPS,
} from "./_sweep_schedules.ts";

let copies = 0;

async function copyOf(kind: string): Promise<Copy> {
  if (kind === "memory") {
    const sink = memorySink<Row>();
    return {
      with: (run) => run(sink),
      rows: () =>
        Promise.resolve(
          [...sink.rows].map(([id, row]) => [id, JSON.stringify(row)]),
        ),
    };
  }
  const path = await freshTarget(
    "sync-sweep-property",
    `copy-${++copies}.${kind === "sqlite" ? "db" : "jsonl"}`,
  );
  return kind === "jsonl" ? jsonlCopy(path) : sqliteCopy(path);
}

function jsonlCopy(path: string): Copy {
  return {
    with: (run) => run(createJsonlSink<Row>(path)),
    async rows() {
      const side = JSON.parse(
        await Deno.readTextFile(`${path}.checkpoint.json`).catch(() => "null"),
      );
      const bytes = await Deno.readFile(path).catch(() => new Uint8Array());
      const text = new TextDecoder().decode(
        bytes.subarray(0, side?.end?.length ?? 0),
      );
      return text.split("\n").filter((line) => line !== "").map((
        line,
      ) => [String(JSON.parse(line).transactionID), line]);
    },
  };
}

function sqliteCopy(path: string): Copy {
  const read = <R>(fn: (db: DatabaseSync) => R): R => {
    const db = new DatabaseSync(path);
    try {
      return fn(db);
    } finally {
      db.close();
    }
  };
  const live = (db: DatabaseSync) =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'transactions'")
        .get() === undefined
      ? []
      : db.prepare(
        'SELECT id, item FROM "transactions" WHERE deleted_at IS NULL',
      ).all() as { id: string; item: string }[];
  let seq = 0;
  return {
    async with(run) {
      using sink = createSqliteSink<Row>(path, { table: "transactions" });
      return await run(sink);
    },
    rows: () =>
      Promise.resolve(
        read((db) => live(db).map((row) => [row.id, row.item])),
      ),
    checkChanges: () =>
      Promise.resolve(read((db) => {
        const changes = db.prepare(
          'SELECT id, change FROM "transactions_changes" ORDER BY seq',
        ).all() as { id: string; change: string }[];
        checkReplay(changes, live(db).map((row) => row.id));
      })),
    deletesSince: () =>
      Promise.resolve(read((db) => {
        const table = db.prepare(
          "SELECT 1 FROM sqlite_master WHERE name = 'transactions_changes'",
        ).get();
        if (table === undefined) return [];
        const rows = db.prepare(
          `SELECT seq, id FROM "transactions_changes" WHERE seq > ? AND change = 'delete' ORDER BY seq`,
        ).all(seq) as { seq: number; id: string }[];
        const last = db.prepare(
          'SELECT max(seq) AS seq FROM "transactions_changes"',
        ).get() as { seq: number | null };
        seq = last.seq ?? seq;
        return rows.map((row) => row.id);
      })),
  };
}

const KINDS = [
  ...["memory", "sqlite", "jsonl"].flatMap((kind) => [
    `${kind} ASC`,
    `${kind} DESC`,
  ]),
  ...STEPS,
];

Deno.test("the copy equals the list within 2 × ⌈pages / sweep⌉ + ⌈seek / sweep⌉ + 2 runs after changes stop, across appends, back-dated inserts, changes, deletes, crashes and sweep budgets, in both directions and every sink", async () => {
  const options = {
    numRuns: runs(60, 120),
    seed: 42,
    examples: ["memory", "sqlite", "jsonl"].flatMap((kind) => [
      restored(kind),
      movingUnderReads(kind),
      emptiedUnderReads(kind),
      movedUnderCursor(kind),
    ]),
  };
  await checkSchedules(
    schedules(["memory", "sqlite", "jsonl"]),
    (schedule) => runSchedule(schedule, copyOf),
    options,
    KINDS,
    reached,
  );
});
