// A sync sink on SQLite through node:sqlite (built into Deno, and Node 22.5
// and later): the SQLite dialect of the SQL kit (_sql_sink.ts holds the
// flow, _sqlite_sql.ts the statements). Items upserted by id and the
// checkpoint commit in one transaction, only while the run holds the copy's
// lease; the copy is checked before anything is changed.

import process from "node:process";
import type { DatabaseSync } from "node:sqlite";
import type { SinkLockOptions, SyncSink } from "./sink.ts";
import { optionError } from "../core/_check.ts";
import { createPrivate, fingerprint, refuseLink } from "./_files.ts";
import { isStale, lockLost, STALE_AFTER } from "./_lease.ts";
import {
  changeTableOf,
  CHECKPOINT_TABLE,
  type CopyState,
  jsonText,
  type Rows,
  sinkOptions,
  type SqlBatch,
  type SqlDialect,
  sqlSink,
} from "./_sql_sink.ts";
import {
  applyBatch,
  changeTable,
  Commits,
  hasColumn,
  type Statements,
  statements,
} from "./_sqlite_sql.ts";

const CONTEXT = "Cannot create SQLite sink";

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
 * await (await sink.lock!())[Symbol.asyncDispose](); // creates the tables
 * const tables = database.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
 * deepStrictEqual(tables.map((row) => row.name), ["partner_api_sync", "partner_api_sync_lease", "partner_api_sync_seen", "partner_api_sync_stage", "transactions"]);
 * database.close();
 * ```
 */
export interface SqliteSinkOptions extends SinkLockOptions {
  /**
   * The table of items (`id TEXT PRIMARY KEY, item TEXT`), created if
   * missing. SQLite folds case: `Transactions` is `transactions`.
   */
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
 * (in the table `partner_api_sync`, by table name as SQLite folds it) in
 * one transaction. The transaction commits only while the run holds the
 * table's lease (`partner_api_sync_lease`, taken by `lock()`); a run whose
 * lease was taken over stops with `SyncError` (`"lock-lost"`).
 *
 * `load()` changes nothing: a table with rows but no checkpoint (not made
 * by this sink), or one whose row count or last committed row differs
 * from what was recorded, is refused with `SyncError` (`"sink-mismatch"`).
 * Ids compare as strings; an id that is not well-formed Unicode (a lone
 * surrogate) cannot be a key and is skipped and reported. A database file
 * is never opened through a symbolic link (`SyncError` `"link"`) and is
 * created 0600.
 *
 * @param database A file path (opened in WAL mode, closed by `close()`) or
 * an open `DatabaseSync` (yours to close).
 * @param options The table, and how long to wait for another run.
 * @returns The sink.
 * @throws {TypeError} (`option: "table"`) For a table name that is not a
 * plain identifier; (`option: "database"`) where the runtime has no
 * `node:sqlite` (Node 20).
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
  const table = sinkOptions(options, CONTEXT);
  const owned = typeof database === "string";
  const file = owned && database !== ":memory:" ? database : undefined;
  const db = owned ? openDatabase(database) : database;
  const commits = new Commits(db);
  const close = () => {
    commits.commit();
    if (owned && db.isOpen) db.close();
  };
  const dialect = sqliteDialect(db, table, options, { file, commits });
  // A plain object, as before: a user may spread it to wrap a method.
  return { ...sqlSink<T>(dialect, options), close, [Symbol.dispose]: close };
}

/** The SQLite dialect of the kit, over one connection and table. */
function sqliteDialect(
  db: DatabaseSync,
  table: string,
  options: SqliteSinkOptions,
  { file, commits }: { file: string | undefined; commits: Commits },
): SqlDialect {
  const target = options.table.toLowerCase();
  const what = `the table ${options.table}`;
  const now = options.now ?? Date.now;
  let prepared: Statements | undefined;
  /** The first change, once the copy passed: journal mode and tables. */
  const touch = () => {
    if (prepared !== undefined) return prepared;
    if (file !== undefined) setJournal(db);
    return prepared = statements(db, table);
  };
  let owner: string | undefined;
  return {
    what,
    instead: "sync into another table or database file",
    async read() {
      if (file !== undefined) await refuseLinks(file);
      return await readCopy(db, table, target);
    },
    prepare: () => Promise.resolve(void touch()),
    take(token) {
      const st = touch();
      const at = now();
      const taken = withoutBusyWait(
        db,
        () => st.take.get(target, token, at, at - STALE_AFTER) !== undefined,
      );
      if (taken === true) {
        owner = token;
        commits.grouping = true;
        return Promise.resolve({ taken: token });
      }
      const holder = st.holder.get(target) as
        | { refreshed_at: number }
        | undefined;
      return Promise.resolve({
        holder: holder !== undefined && isStale(holder.refreshed_at, at)
          ? "a run that stopped"
          : "another run",
      });
    },
    // node:sqlite is synchronous: a throw becomes the promise's rejection.
    refresh: (token) =>
      new Promise((done) => {
        if (db.isOpen) touch().refresh.run(now(), target, token);
        done(undefined);
      }),
    release: (token) =>
      new Promise((done) => {
        owner = undefined;
        commits.grouping = false;
        commits.commit();
        if (db.isOpen) touch().release.run(target, token);
        done();
      }),
    text: jsonText,
    async apply(write) {
      const st = touch();
      const { rows, staged } = split(st, write);
      const last = await lastRow(rows);
      // node:sqlite blocks the thread: first let the requests in flight
      // (the next window) go out, so that the service works meanwhile.
      await nextTurn();
      const changes = write.context?.changes
        ? changeTable(db, changeTableOf(table))
        : undefined;
      const record = changes === undefined ? undefined : db.prepare(
        `INSERT INTO ${changes} (id, change, at, item) VALUES (?, ?, ?, ?)`,
      );
      const at = new Date(now()).toISOString();
      const done = commits.batch(() => {
        const holder = st.holder.get(target) as { owner: string } | undefined;
        if (owner !== undefined && holder?.owner !== owner) {
          throw lockLost(what);
        }
        return applyBatch(
          { st, target, what, at, record, changes },
          { ...write, rows, staged, last },
        );
      });
      commits.rows = done.rows;
      const { held, ...report } = done;
      return held === undefined ? report : { ...report, held };
    },
  };
}

/**
 * A sweep's batch before its cycle ends: the items the table holds are
 * written now, the others staged until the cycle passes its guard.
 */
function split(st: Statements, write: SqlBatch): { rows: Rows; staged: Rows } {
  const { rows, context } = write;
  const none = { ids: [], texts: [] };
  if (
    context?.phase !== "sweep" || context.endsCycle !== undefined ||
    rows.ids.length === 0
  ) return { rows, staged: none };
  const held = new Set(
    st.held.all(JSON.stringify(rows.ids)).map((row) => row.id as string),
  );
  if (held.size === rows.ids.length) return { rows, staged: none };
  const part = (keep: boolean) => {
    const at = rows.ids.flatMap((id, i) => held.has(id) === keep ? [i] : []);
    return {
      ids: at.map((i) => rows.ids[i]!),
      texts: at.map((i) => rows.texts[i]!),
    };
  };
  return { rows: part(true), staged: part(false) };
}

/** The fingerprint and id of the batch's last row, what the checkpoint records. */
async function lastRow(rows: Rows): Promise<string | undefined> {
  const text = rows.texts.at(-1);
  if (text === undefined) return undefined;
  return `${await fingerprint(new TextEncoder().encode(text))}:${
    rows.ids.at(-1)
  }`;
}

/** Reads what `table` and its checkpoint hold, creating nothing. */
async function readCopy(
  db: DatabaseSync,
  table: string,
  target: string,
): Promise<CopyState> {
  const exists = (name: string) =>
    db.prepare(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
    ).get(name) !== undefined;
  const rows = exists(table.slice(1, -1))
    ? (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number })
      .n
    : 0;
  if (!exists(CHECKPOINT_TABLE)) return { checkpoint: undefined, rows };
  const meta = hasColumn(db, CHECKPOINT_TABLE, "rows");
  const found = db.prepare(
    `SELECT target, checkpoint${
      meta ? ", rows, last" : ""
    } FROM ${CHECKPOINT_TABLE} WHERE lower(target) = ?`,
  ).all(target) as {
    target: string;
    checkpoint: string;
    rows?: number | null;
    last?: string | null;
  }[];
  const own = found.find((row) => row.target === target) ?? found[0];
  const last = own?.last ?? null;
  const item = last === null ? undefined : db.prepare(
    `SELECT item FROM ${table} WHERE id = ?`,
  ).get(last.slice(last.indexOf(":") + 1)) as { item: string } | undefined;
  return {
    checkpoint: own?.checkpoint,
    rows,
    ...(own?.rows === undefined || own.rows === null
      ? {}
      : { recorded: { rows: own.rows, last } }),
    found: item === undefined
      ? undefined
      : await fingerprint(new TextEncoder().encode(item.item)),
    ...(found.length > 1
      ? {
        foreign:
          "checkpoints for several spellings of its name share it (SQLite folds case)",
      }
      : {}),
  };
}

/**
 * One turn of the event loop, in which requests started go out. A chain of
 * `setTimeout(0)` is clamped (about 2 ms a turn in Deno: 2 s of a million
 * items' sync); `setImmediate` is not, where the runtime has it.
 */
function nextTurn(): Promise<void> {
  const immediate = (globalThis as {
    setImmediate?: (callback: () => void) => unknown;
  }).setImmediate;
  return new Promise((resolve) => {
    if (typeof immediate === "function") immediate(resolve);
    else globalThis.setTimeout(resolve, 0);
  });
}

/** Opens a database file (never through a link; a new one 0600). */
function openDatabase(path: string): DatabaseSync {
  let sqlite: typeof import("node:sqlite") | undefined;
  try {
    sqlite = process.getBuiltinModule?.("node:sqlite") as
      | typeof import("node:sqlite")
      | undefined;
  } catch {
    sqlite = undefined;
  }
  if (sqlite?.DatabaseSync === undefined) {
    throw optionError(
      TypeError,
      CONTEXT,
      "database",
      "needs node:sqlite, which Deno 2.2+ and Node 22.13+ (22.5+ with --experimental-sqlite) have; on this runtime use createJsonlSink or createPostgresSink",
    );
  }
  if (path !== ":memory:") createPrivate(path);
  const db = new sqlite.DatabaseSync(path);
  // A second run waits for the first's transaction instead of failing.
  db.exec("PRAGMA busy_timeout = 10000");
  return db;
}

/**
 * WAL, synced at checkpoints only, and checkpoints every 64 MB rather than
 * every 4 MB: a batch of random ids dirties a page per item, and each
 * checkpoint syncs them all. Committed batches survive a killed process
 * either way.
 */
function setJournal(db: DatabaseSync): void {
  db.exec(
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 16384; PRAGMA cache_size = -65536",
  );
}

/** Refuses a database whose file or journal files are symbolic links. */
async function refuseLinks(path: string): Promise<void> {
  for (const suffix of ["", "-wal", "-shm", "-journal"]) {
    await refuseLink(`${path}${suffix}`);
  }
}

/**
 * Runs `write` without waiting for the database's write lock: undefined
 * when another connection holds it. A connection of this process that
 * holds it (a run whose batches share a transaction) commits from a timer,
 * which a busy wait on this thread would keep from running.
 */
function withoutBusyWait<R>(db: DatabaseSync, write: () => R): R | undefined {
  const { timeout } = db.prepare("PRAGMA busy_timeout").get() as {
    timeout: number;
  };
  db.exec("PRAGMA busy_timeout = 0");
  try {
    return write();
  } catch (error) {
    if (db.isTransaction || !/database is locked/.test(String(error))) {
      throw error;
    }
    return undefined;
  } finally {
    db.exec(`PRAGMA busy_timeout = ${timeout}`);
  }
}
