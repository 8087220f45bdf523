// A sync sink on SQLite through node:sqlite (built into Deno, and Node 22.5
// and later): items upserted by id and the checkpoint in the same
// transaction, which commits only while the run still holds the copy's
// lease. The copy is checked before anything is changed.

import process from "node:process";
import type { DatabaseSync } from "node:sqlite";
import type { SyncSink } from "./sink.ts";
import { optionError } from "../core/_check.ts";
import { quotedTable } from "./_identifier.ts";
import { createPrivate, refuseLink } from "./_files.ts";
import {
  DEFAULT_LOCK_WAIT,
  isStale,
  keepRefreshed,
  lockLost,
  runToken,
  STALE_AFTER,
  waitForLock,
} from "./_lease.ts";
import {
  changeTable,
  createTables,
  itemText,
  readCopy,
  statements,
} from "./_sqlite_copy.ts";
import { SqliteCommits } from "./_sqlite_commits.ts";
import {
  applyBatch,
  type Checked,
  judgeCopy,
  type Statements,
  storable,
} from "./_sqlite_batch.ts";

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
 * deepStrictEqual(tables.map((row) => row.name), ["partner_api_sync", "partner_api_sync_lease", "partner_api_sync_seen", "transactions"]);
 * database.close();
 * ```
 */
export interface SqliteSinkOptions {
  /**
   * The table of items (`id TEXT PRIMARY KEY, item TEXT`), created if
   * missing. SQLite folds case: `Transactions` is `transactions`.
   */
  table: string;
  /**
   * How long a run waits for another that holds the table, in ms, before
   * it gives up with `SyncError` (`"locked"`). `Infinity` waits until the
   * run's signal aborts.
   *
   * @default {30000}
   */
  lockWait?: number;
  /** Hears once that a run waits, with who holds the table. */
  onLockWait?: (holder: string) => void;
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
  const table = quotedTable(options?.table, CONTEXT);
  const target = options.table.toLowerCase();
  const what = `the table ${options.table}`;
  const owned = typeof database === "string";
  const file = owned && database !== ":memory:" ? database : undefined;
  const db = owned ? openDatabase(database) : database;
  const commits = new SqliteCommits(db);
  const close = () => {
    commits.commit();
    if (owned && db.isOpen) db.close();
  };
  let checked: Checked | undefined;
  let prepared: Statements | undefined;
  let owner: string | undefined;
  /** Checks the copy, reading only: what load() and lock() do first. */
  const check = async () => {
    if (file !== undefined) await refuseLinks(file);
    const state = readCopy(db, table, target);
    return checked = await judgeCopy(
      state,
      what,
      (id) => itemText(db, table, id),
    );
  };
  /** The first change, once the copy passed: journal mode and tables. */
  const touch = () => {
    if (prepared !== undefined) return prepared;
    if (file !== undefined) setJournal(db);
    createTables(db, table);
    return prepared = statements(db, table);
  };
  return {
    load: async () => (await check()).checkpoint,
    async lock(run = {}) {
      await check();
      const st = touch();
      const token = await takeLease(db, st, target, what, options, run.signal);
      owner = token;
      const lease = holdLease(db, st, commits, target, token);
      return {
        async [Symbol.asyncDispose]() {
          await lease[Symbol.asyncDispose]();
          owner = undefined;
        },
      };
    },
    async write(items, checkpoint, ids, context) {
      const state = checked ?? await check();
      const batch = await storable(items, ids);
      // node:sqlite blocks the thread: first let the requests in flight
      // (the next window) go out, so that the service works meanwhile.
      await nextTurn();
      const st = touch();
      const changes = context?.changes ? changeTable(db, table) : undefined;
      const done = commits.batch(() => {
        const holder = st.holder.get(target) as { owner: string } | undefined;
        if (owner !== undefined && holder?.owner !== owner) {
          throw lockLost(what);
        }
        return applyBatch(db, st, { batch, checkpoint, context, changes }, {
          state,
          what,
          target,
        });
      });
      checked = { checkpoint, rows: done.rows, last: done.last };
      commits.rows = done.rows;
      const { inserted, updated, deleted } = done;
      return { skippedIds: batch.skipped, inserted, updated, deleted };
    },
    close,
    [Symbol.dispose]: close,
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

/**
 * Keeps a lease taken: refreshed every second, batches sharing
 * transactions, and on release the open one committed, then the lease
 * dropped.
 */
function holdLease(
  db: DatabaseSync,
  st: Statements,
  commits: SqliteCommits,
  target: string,
  token: string,
): AsyncDisposable {
  const stop = keepRefreshed(() => {
    if (db.isOpen) st.refresh.run(Date.now(), target, token);
    return Promise.resolve();
  });
  commits.grouping = true;
  return {
    [Symbol.asyncDispose]() {
      stop();
      commits.grouping = false;
      commits.commit();
      if (db.isOpen) st.release.run(target, token);
      return Promise.resolve();
    },
  };
}

/** Takes the table's lease for a new run, waiting as `options` say. */
function takeLease(
  db: DatabaseSync,
  st: Statements,
  target: string,
  what: string,
  options: SqliteSinkOptions,
  signal: AbortSignal | undefined,
): Promise<string> {
  const token = runToken();
  return waitForLock(what, {
    signal,
    wait: options.lockWait ?? DEFAULT_LOCK_WAIT,
    onWait: options.onLockWait,
  }, () => {
    const now = Date.now();
    const taken = withoutBusyWait(
      db,
      () => st.take.get(target, token, now, now - STALE_AFTER) !== undefined,
    );
    if (taken === true) return Promise.resolve({ taken: token });
    const holder = st.holder.get(target) as
      | { refreshed_at: number }
      | undefined;
    return Promise.resolve({
      holder: holder !== undefined && isStale(holder.refreshed_at, now)
        ? "a run that stopped"
        : "another run",
    });
  });
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
