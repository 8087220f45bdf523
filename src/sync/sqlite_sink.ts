// A sync sink on SQLite through node:sqlite (built into Deno, and Node 22.5
// and later): items upserted by id and the checkpoint in the same
// transaction, which commits only while the run still holds the copy's
// lease. The copy is checked before anything is changed.

import process from "node:process";
import type { DatabaseSync } from "node:sqlite";
import type {
  SinkLockOptions,
  SyncCheckpoint,
  SyncSink,
  SyncWriteContext,
  SyncWriteReport,
} from "./sink.ts";
import { optionError } from "../core/_check.ts";
import { quotedTable } from "./_identifier.ts";
import { createPrivate, refuseLink } from "./_files.ts";
import { checkLockWait, DEFAULT_LOCK_WAIT, lockLost } from "./_lease.ts";
import {
  changeTable,
  createTables,
  itemText,
  readCopy,
  statements,
} from "./_sqlite_copy.ts";
import { holdLease, SqliteCommits, takeLease } from "./_sqlite_commits.ts";
import {
  applyBatch,
  type Checked,
  judgeCopy,
  lastRow,
  type Statements,
  storable,
  type Stored,
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
  const table = quotedTable(options?.table, CONTEXT);
  checkLockWait(options.lockWait, CONTEXT);
  const copy = new SqliteCopy(database, table, options);
  const close = () => copy.close();
  // A plain object, as before: a user may spread it to wrap a method.
  return {
    load: async () => (await copy.check()).checkpoint,
    lock: (run = {}) => copy.lock(run.signal),
    write: (items, checkpoint, ids, context) =>
      copy.write(items, checkpoint, ids, context),
    close,
    [Symbol.dispose]: close,
  };
}

/** One table's copy in SQLite, its checkpoint and its lease, for one sink. */
class SqliteCopy {
  readonly #table: string;
  readonly #target: string;
  readonly #what: string;
  readonly #options: SqliteSinkOptions;
  readonly #owned: boolean;
  /** The database's file, when the sink opened one. */
  readonly #file: string | undefined;
  readonly #db: DatabaseSync;
  readonly #commits: SqliteCommits;
  #checked: Checked | undefined;
  #prepared: Statements | undefined;
  #owner: string | undefined;
  readonly #now: () => number;

  constructor(
    database: string | DatabaseSync,
    table: string,
    options: SqliteSinkOptions,
  ) {
    this.#table = table;
    this.#target = options.table.toLowerCase();
    this.#what = `the table ${options.table}`;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#owned = typeof database === "string";
    this.#file = typeof database === "string" && database !== ":memory:"
      ? database
      : undefined;
    this.#db = typeof database === "string" ? openDatabase(database) : database;
    this.#commits = new SqliteCommits(this.#db);
  }

  close(): void {
    this.#commits.commit();
    if (this.#owned && this.#db.isOpen) this.#db.close();
  }

  /** Checks the copy, reading only: what load() and lock() do first. */
  async check(): Promise<Checked> {
    if (this.#file !== undefined) await refuseLinks(this.#file);
    const state = readCopy(this.#db, this.#table, this.#target);
    return this.#checked = await judgeCopy(
      state,
      this.#what,
      (id) => itemText(this.#db, this.#table, id),
    );
  }

  async lock(signal: AbortSignal | undefined): Promise<AsyncDisposable> {
    await this.check();
    const st = this.#touch();
    const token = await takeLease(this.#db, st, this.#target, this.#what, {
      signal,
      wait: this.#options.lockWait ?? DEFAULT_LOCK_WAIT,
      onWait: this.#options.onLockWait,
    }, this.#now);
    this.#owner = token;
    const lease = holdLease(
      this.#db,
      st,
      this.#commits,
      { target: this.#target, token },
      this.#now,
    );
    return {
      [Symbol.asyncDispose]: async () => {
        await lease[Symbol.asyncDispose]();
        this.#owner = undefined;
      },
    };
  }

  async write(
    items: readonly unknown[],
    checkpoint: SyncCheckpoint,
    ids: readonly string[],
    context: SyncWriteContext | undefined,
  ): Promise<SyncWriteReport> {
    const state = this.#checked ?? await this.check();
    const whole = await storable(items, ids);
    const st = this.#touch();
    const { batch, staged } = await this.#split(whole, context);
    // node:sqlite blocks the thread: first let the requests in flight
    // (the next window) go out, so that the service works meanwhile.
    await nextTurn();
    const db = this.#db;
    const what = this.#what;
    const target = this.#target;
    const changes = context?.changes ? changeTable(db, this.#table) : undefined;
    const done = this.#commits.batch(() => {
      const holder = st.holder.get(target) as { owner: string } | undefined;
      if (this.#owner !== undefined && holder?.owner !== this.#owner) {
        throw lockLost(what);
      }
      return applyBatch(db, st, {
        batch,
        staged,
        checkpoint,
        context,
        changes,
      }, {
        state,
        what,
        target,
        at: new Date(this.#now()).toISOString(),
      });
    });
    this.#checked = { checkpoint, rows: done.rows, last: done.last };
    this.#commits.rows = done.rows;
    const { inserted, updated, deleted, held } = done;
    return {
      skippedIds: whole.skipped,
      inserted,
      updated,
      deleted,
      ...(held === undefined ? {} : { held }),
    };
  }

  /**
   * A sweep's batch before its cycle ends: the items the table holds are
   * written now, the others staged until the cycle passes its guard.
   */
  async #split(
    whole: Stored,
    context: SyncWriteContext | undefined,
  ): Promise<{ batch: Stored; staged: Stored }> {
    const none = { texts: [], ids: [], skipped: [], last: undefined };
    if (
      context?.phase !== "sweep" || context.endsCycle !== undefined ||
      whole.ids.length === 0
    ) return { batch: whole, staged: none };
    const held = new Set(
      this.#touch().held.all(JSON.stringify(whole.ids)).map((row) =>
        (row as { id: string }).id
      ),
    );
    if (held.size === whole.ids.length) return { batch: whole, staged: none };
    const part = (keep: boolean) => {
      const at = whole.ids.flatMap((id, i) => held.has(id) === keep ? [i] : []);
      return {
        ids: at.map((i) => whole.ids[i]!),
        texts: at.map((i) => whole.texts[i]!),
      };
    };
    const kept = part(true);
    return {
      batch: {
        ...kept,
        skipped: [],
        last: await lastRow(kept.texts, kept.ids),
      },
      staged: { ...part(false), skipped: [], last: undefined },
    };
  }

  /** The first change, once the copy passed: journal mode and tables. */
  #touch(): Statements {
    if (this.#prepared !== undefined) return this.#prepared;
    if (this.#file !== undefined) setJournal(this.#db);
    createTables(this.#db, this.#table);
    return this.#prepared = statements(this.#db, this.#table);
  }
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
