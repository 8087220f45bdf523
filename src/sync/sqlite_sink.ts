// A sync sink on SQLite through node:sqlite (built into Deno): items upserted
// by id and the checkpoint in the same transaction.

import { DatabaseSync } from "node:sqlite";
import type { SyncCheckpoint, SyncSink } from "./_types.ts";
import { CHECKPOINT_TABLE, quotedTable } from "./_identifier.ts";

const CONTEXT = "Cannot create SQLite sink";
/** Rows per INSERT statement (200 parameters, far below SQLite's limit). */
const ROWS = 100;

/**
 * Options of {@linkcode createSqliteSink}.
 *
 * @example A table per list
 * ```ts
 * import { createSqliteSink, type SqliteSinkOptions } from "@partner-api/client/sync";
 * import { DatabaseSync } from "node:sqlite";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const database = new DatabaseSync(":memory:");
 * const options: SqliteSinkOptions = { table: "transactions" };
 * const sink = createSqliteSink(database, options);
 * await sink.load(); // creates the tables
 * const tables = database.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
 * deepStrictEqual(tables.map((row) => row.name), ["partner_api_sync", "transactions"]);
 * database.close();
 * ```
 */
export interface SqliteSinkOptions {
  /** The table of items (`id TEXT PRIMARY KEY, item TEXT`), created if missing. */
  table: string;
}

/**
 * A SQLite sink; closing it closes the database when the sink opened it.
 *
 * @example Closing with `using`
 * ```ts
 * import { createSqliteSink, type SqliteSink } from "@partner-api/client/sync";
 * import { equal } from "node:assert/strict";
 *
 * using sink: SqliteSink<unknown> = createSqliteSink(":memory:", { table: "items" });
 * equal(await sink.load(), undefined); // the database closes when `sink` goes out of scope
 * ```
 */
export interface SqliteSink<T> extends SyncSink<T>, Disposable {
  /** Closes the database if the sink opened it (a path was given). */
  close(): void;
}

/**
 * A sink that keeps the copy in a SQLite table, `id TEXT PRIMARY KEY, item
 * TEXT` (the item's JSON), upserting each batch and saving the checkpoint
 * (in the table `partner_api_sync`, by table name) in one transaction.
 *
 * @param database A file path (opened in WAL mode, closed by `close()`) or
 * an open `DatabaseSync` (yours to close).
 * @param options The table.
 * @returns The sink.
 * @throws {TypeError} (`option: "table"`) For a table name that is not a
 * plain identifier.
 *
 * @example Items and checkpoint, together
 * ```ts
 * import { DatabaseSync } from "node:sqlite";
 * import { createSqliteSink } from "@partner-api/client/sync";
 * import { equal } from "node:assert/strict";
 *
 * const database = new DatabaseSync(":memory:");
 * const sink = createSqliteSink<{ n: number }>(database, { table: "numbers" });
 * const checkpoint = { version: 1 as const, path: "numbers", sortBy: "n", id: "n", query: {}, edge: { value: 2, id: "2" }, offset: 2, full: false, complete: true };
 * await sink.write([{ n: 1 }, { n: 2 }], checkpoint, ["1", "2"]);
 * const rows = database.prepare('SELECT count(*) AS n FROM "numbers"').get() as { n: number };
 * equal(rows.n, 2);
 * equal((await sink.load())?.offset, 2);
 * database.close();
 * ```
 */
export function createSqliteSink<T>(
  database: string | DatabaseSync,
  options: SqliteSinkOptions,
): SqliteSink<T> {
  const table = quotedTable(options?.table, CONTEXT);
  const owned = typeof database === "string";
  const db = owned ? new DatabaseSync(database) : database;
  if (owned) {
    // WAL, synced at checkpoints only, and checkpoints every 64 MB rather
    // than every 4 MB: a batch of random ids dirties a page per item, and
    // each checkpoint syncs them all. Committed batches survive a killed
    // process either way.
    db.exec(
      "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 16384",
    );
  }
  const statements = prepare(db, table);
  const target = options.table;
  const close = () => {
    if (owned && db.isOpen) db.close();
  };
  return {
    load: () => {
      try {
        const row = statements.read.get(target) as
          | { checkpoint: string }
          | undefined;
        return Promise.resolve(
          row === undefined
            ? undefined
            : JSON.parse(row.checkpoint) as SyncCheckpoint,
        );
      } catch (error) {
        return Promise.reject(error);
      }
    },
    write: async (items, checkpoint, ids) => {
      // node:sqlite blocks the thread: first let the requests in flight
      // (the next window) go out, so that the service works meanwhile.
      await new Promise((resolve) => globalThis.setTimeout(resolve, 0));
      db.exec("BEGIN IMMEDIATE");
      try {
        upsertAll(statements, items, ids);
        statements.save.run(target, JSON.stringify(checkpoint));
        db.exec("COMMIT");
      } catch (error) {
        db.exec("ROLLBACK");
        throw error;
      }
    },
    close,
    [Symbol.dispose]: close,
  };
}

/** The tables, created if missing, and the statements the sink runs. */
function prepare(db: DatabaseSync, table: string) {
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, item TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS ${CHECKPOINT_TABLE} (target TEXT PRIMARY KEY, checkpoint TEXT NOT NULL)`,
  );
  const upsert = (rows: number) =>
    db.prepare(
      `INSERT INTO ${table} (id, item) VALUES ${
        Array(rows).fill("(?, ?)").join(", ")
      } ON CONFLICT (id) DO UPDATE SET item = excluded.item`,
    );
  return {
    many: upsert(ROWS),
    one: upsert(1),
    save: db.prepare(
      `INSERT INTO ${CHECKPOINT_TABLE} (target, checkpoint) VALUES (?, ?) ON CONFLICT (target) DO UPDATE SET checkpoint = excluded.checkpoint`,
    ),
    read: db.prepare(
      `SELECT checkpoint FROM ${CHECKPOINT_TABLE} WHERE target = ?`,
    ),
  };
}

/** Upserts the items ROWS at a time: one statement per row costs twice as much. */
function upsertAll<T>(
  statements: ReturnType<typeof prepare>,
  items: readonly T[],
  ids: readonly string[],
): void {
  let i = 0;
  for (; i + ROWS <= items.length; i += ROWS) {
    const values: string[] = [];
    for (let j = i; j < i + ROWS; j++) {
      values.push(ids[j]!, JSON.stringify(items[j]));
    }
    statements.many.run(...values);
  }
  for (; i < items.length; i++) {
    statements.one.run(ids[i]!, JSON.stringify(items[i]));
  }
}
