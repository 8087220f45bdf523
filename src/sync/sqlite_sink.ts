// A sync sink on SQLite through node:sqlite: the SQL kit's (_sql_sink.ts) SQLite dialect; statements in _sqlite_sql.ts.

import process from "node:process";
import { resolve } from "node:path";
import { stat } from "node:fs/promises";
import { setImmediate } from "node:timers";
import type { DatabaseSync } from "node:sqlite";
import type { SinkLockOptions, SyncSink } from "./sink.ts";
import { optionNames, tried, typeError } from "../core/_check.ts";
import { delay } from "../core/_deadlines.ts";
import {
  assertOpenedAt,
  createPrivate,
  fileError,
  identityOf,
  statOf,
} from "./_files.ts";
import { holderOf, isStale, lockLost, STALE_AFTER } from "./_lease.ts";
import { sinkMismatch, SyncError } from "./sync_error.ts";
import { type LockSighting, staleJudge } from "../core/_clock.ts";
import * as kit from "./_sql_sink.ts";
import {
  applyBatch,
  type ChangeStatements,
  changeTable,
  columnsOf,
  failureOf,
  notSqlite,
  readCopy,
  split,
  type Statements,
  statements,
} from "./_sqlite_sql.ts";
import { keyedCopy } from "./_sqlite_keys.ts";
import type { KeyRange } from "./_key_text.ts";
import {
  BUSY_STEP,
  Commits,
  withinBusyWait,
  WRITER,
} from "./_sqlite_commits.ts";

const CONTEXT = "Cannot create SQLite sink";
const JOURNALS = ["-wal", "-shm", "-journal"]; // files SQLite keeps beside a database
const SQLITE_OPTIONS = optionNames<SqliteSinkOptions>()(
  "table lockWait onLockWait now",
);

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
  /** The table of items, created if missing. SQLite folds case: `Transactions` is `transactions`. */
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
 * A sink that keeps the copy in a SQLite table (`id TEXT PRIMARY KEY, item TEXT`, the item's JSON, and its place in
 * the order, `partner_api_key`, indexed), each batch and its checkpoint (table `partner_api_sync`) in one transaction,
 * committed only while the run holds the lease taken by `lock()` (else `SyncError` `"lock-lost"`). Commit cadence and
 * tables: docs/sync.md, "Sinks".
 *
 * `load()` changes nothing: a table with rows but no checkpoint, or whose row count or last row differs from the record,
 * is refused (`SyncError` `"sink-mismatch"`). Ids compare as strings; an id that is not well-formed Unicode or holds a
 * NUL, or an item JSON cannot hold (a `BigInt`, a cycle), is skipped and reported. A database file or its journal is
 * never opened through a symbolic or hard link (`"link"`); a new one is 0600.
 *
 * @param database A file path (opened in WAL mode, closed by `close()`) or an open `DatabaseSync` (yours to close).
 * @param options The table, and how long to wait for another run.
 * @throws {TypeError} (`option: "table"`) For a table name that is not a plain identifier; (`option: "database"`)
 * where the runtime has no `node:sqlite` (Node 20).
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
  const { table, lockWait } = kit.sinkOptions(options, SQLITE_OPTIONS, CONTEXT);
  const owned = typeof database === "string";
  const rule = "must be a file path or a DatabaseSync";
  if (!owned && typeof database?.prepare !== "function") {
    throw typeError(CONTEXT, "database", rule);
  }
  const file = owned && database !== ":memory:" ? database : undefined;
  const db = owned ? openDatabase(database) : database;
  const dialect = new SqliteDialect(db, table, { ...options, lockWait }, file);
  const close = () => {
    dialect.close();
    if (owned && db.isOpen) db.close();
  };
  // A plain object: a user may spread it to wrap a method.
  const sink = kit.sqlSink<T>(dialect, { ...options, lockWait });
  return { ...sink, close, [Symbol.dispose]: close };
}

/** The SQLite dialect of the kit, over one connection and table. */
class SqliteDialect implements kit.SqlDialect {
  readonly what: string;
  readonly instead = "sync into another table or database file";
  readonly keepsChanges = true;
  readonly #db: DatabaseSync;
  readonly #table: string;
  readonly #target: string;
  readonly #now: () => number;
  readonly #stale: (name: string, lock: LockSighting) => boolean;
  readonly #file: string | undefined;
  /** Where the file is looked up (a changed working folder changes nothing), and its `identityOf` when checked. */
  readonly #absolute: string | undefined;
  #identity: string | undefined;
  readonly commits: Commits;
  #prepared: Statements | undefined;
  #changes: ChangeStatements | undefined;
  #keyed: ReturnType<typeof keyedCopy> | undefined;

  constructor(
    db: DatabaseSync,
    table: string,
    options: SqliteSinkOptions & { lockWait: number },
    file: string | undefined,
  ) {
    this.#db = db;
    this.#table = table;
    this.#target = options.table.toLowerCase();
    this.what = `the table ${options.table}`;
    this.#now = options.now ?? Date.now;
    this.#stale = staleJudge(this.#now, STALE_AFTER);
    this.#file = file;
    this.#absolute = file === undefined ? undefined : resolve(file);
    const wait = { wait: options.lockWait, onWait: options.onLockWait };
    this.commits = new Commits(db, this.what, wait);
  }

  /** The first change, once the copy passed: journal mode, then the tables, each once another connection's lock lets it. */
  async prepare(signal?: AbortSignal): Promise<void> {
    if (this.#prepared !== undefined) return;
    // WAL, synced at checkpoints only, checkpoints every 64 MB rather than 4 MB: a batch of random ids dirties a page
    // per item, and each checkpoint syncs them all. Committed batches survive a killed process either way.
    const journal =
      "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 16384; PRAGMA cache_size = -65536";
    if (this.#file !== undefined) {
      await this.commits.whenFree(signal, () => this.#db.exec(journal) ?? true);
    }
    await this.commits.whenFree(signal, () => this.#statements());
  }

  /** The statements (the tables made in SQLite's busy wait, where `prepare` did not make them: a read without a run). */
  #statements(): Statements {
    return this.#prepared ??= statements(this.#db, this.#table);
  }

  async read(signal?: AbortSignal): Promise<kit.CopyState> {
    if (this.#file !== undefined) {
      // The database and its journal files plain files of one name, never through a link: SQLite writes them.
      for (const suffix of ["", ...JOURNALS]) {
        await statOf(`${this.#file}${suffix}`, true);
      }
      this.#identity = identityOf(this.#file, this.#absolute);
      assertOpenedAt(this.#file, tried(() => this.#db.location()));
    }
    // A file shorter than SQLite's least page (512 bytes), given by path or open, SQLite takes as empty and overwrites.
    const at = this.#file ?? tried(() => this.#db.location()) ?? undefined;
    const size = at ? (await stat(at).catch(() => undefined))?.size ?? 0 : 0;
    if (size > 0 && size < 512) throw notSqlite(at!);
    // Empty beside its -wal (SQLite writes the header first: something else emptied it): SQLite would drop the log's rows.
    const log = size === 0 && at ? await stat(`${at}-wal`).catch(() => {}) : 0;
    if (log && log.size > 0) {
      const why = "it is empty beside its -wal file, which holds its rows";
      throw sinkMismatch(at!, why, "restore it, or remove the -wal file too");
    }
    // One read transaction (a savepoint: nested in the user's own): another run's commit between the row count and the
    // checkpoint made a sound copy look foreign. Another connection's exclusive lock (outside WAL) is waited out.
    const db = this.#db;
    return await this.commits.whenFree(signal, () => {
      db.exec("SAVEPOINT partner_api_read");
      try {
        return readCopy(db, this.#table, this.#target);
      } finally {
        if (db.isTransaction) db.exec("RELEASE partner_api_read"); // read only: nothing to roll back
      }
    });
  }

  take(token: string): { taken: string } | { holder: string } {
    const st = this.#statements(), db = this.#db;
    // No busy wait (it would block the thread a run of this process needs to commit and let go): tried again on timers.
    const answer = withinBusyWait(db, 0, () => this.#take(st, token));
    if (answer !== undefined) return answer;
    // Kept out: a live lease names its run (one of this process holds the lock to commit), else the connection.
    const holder = withinBusyWait(db, 0, () => this.#holder(st) ?? null);
    return { holder: this.#nameOf(holder ?? undefined, this.#now()) };
  }

  #take(st: Statements, token: string): { taken: string } | { holder: string } {
    const at = this.#now();
    // A lease stamped ahead of this clock (it stepped back) is taken once seen unchanged for STALE_AFTER.
    const seen = this.#holder(st);
    const over = seen !== undefined && this.#stale(this.#target, seen);
    const unchanged = over ? [seen.owner, seen.refreshedAt] : [null, null];
    st.take.get(this.#target, token, at, at - STALE_AFTER, ...unchanged);
    // Read back: RETURNING answers before the commit, which may be refused (outside WAL, under a reader).
    const holder = this.#holder(st);
    if (holder?.owner === token) {
      this.commits.held = token;
      this.#keyed = undefined;
      return { taken: token };
    }
    return { holder: this.#nameOf(over ? undefined : holder, at) };
  }

  /** Who keeps the lease from this run: the run of a live lease, else another connection's transaction. */
  #nameOf(holder: LockSighting | undefined, at: number): string {
    const live = holder !== undefined && !isStale(holder.refreshedAt, at);
    return live ? holderOf(false, holder.owner) : WRITER;
  }

  /** Once the lease is taken: every key cleared if another writer saved the checkpoint since a keying version did. */
  async ready(signal: AbortSignal | undefined): Promise<void> {
    const other = this.#db.prepare(
      `SELECT 1 FROM ${kit.CHECKPOINT_TABLE} WHERE target = ? AND keyed IS NOT checkpoint`,
    ).get(this.#target);
    if (other === undefined) return;
    await this.commits.open(signal); // on timers while another connection holds the write lock
    this.commits.batch(() => this.#db.exec(kit.unkeySql(this.#table)));
  }

  #holder(st: Statements): LockSighting | undefined {
    return st.holder.get(this.#target) as LockSighting | undefined;
  }

  // Neither waits long for another connection's write lock (SQLite's wait blocks the thread): a refresh tries again on
  // timers for most of the second, lest the lease go stale; a release tried once leaves one that goes stale.
  async refresh(token: string): Promise<void> {
    for (let tries = 1; this.#db.isOpen; tries++) {
      const st = this.#statements(), at = this.#now();
      const run = () => st.refresh.run(this.#target, token, at);
      if (withinBusyWait(this.#db, BUSY_STEP, run) || tries >= 5) return;
      await delay(BUSY_STEP);
    }
  }

  release(token: string): void {
    this.commits.held = undefined;
    this.commits.commit();
    if (!this.#db.isOpen) return;
    const release = () => this.#statements().release.run(this.#target, token);
    withinBusyWait(this.#db, BUSY_STEP, release);
  }

  /** Before the sink closes: a lease it holds goes too (the next run takes the copy at once, not once stale). */
  close(): void {
    const held = this.commits.held;
    if (held !== undefined) this.release(held);
    this.commits.commit(); // none is left open: a run's release commits, a write without one at once
  }

  // node:sqlite stores an id with a NUL but reads it back cut there (RETURNING, json_each): skipped, as one not Unicode.
  readonly text = (item: unknown, id: string) =>
    id.includes("\0") ? undefined : tried(() => JSON.stringify(item));
  readonly holds = () => true; // a row an older version stored with a NUL: logged seen through json_each, which keeps it

  async apply(write: kit.SqlBatch): Promise<kit.Applied> {
    // SQLite writes on to a file removed or replaced: a success nobody can open.
    const file = this.#file, identity = this.#identity;
    if (file && identity && identityOf(file, this.#absolute) !== identity) {
      const why = "was replaced by another file while the run wrote it";
      const message = `Cannot sync: ${file} ${why}; nothing more was written`;
      throw new SyncError(message, "file", file);
    }
    await this.prepare(write.signal); // a write without a run's lock()
    const st = this.#statements();
    const batch = { ...write, ...split(st, write) };
    // node:sqlite blocks the thread: the next window's request goes out first (setImmediate: setTimeout(0) is clamped).
    await new Promise((resolve) => setImmediate(resolve));
    await this.commits.open(write.signal);
    const at = new Date(this.#now()).toISOString();
    const { what } = this, target = this.#target, owner = write.owner;
    const done = this.commits.batch(() => {
      kit.stopIfAborted(write); // the batches before it commit
      if (owner !== undefined && this.#holder(st)?.owner !== owner) {
        throw lockLost(what);
      }
      const changes = this.#changeTable(write, at);
      return applyBatch({ st, target, what, at, changes }, batch);
    });
    this.commits.rows = done.rows;
    if (write.context?.endsCycle) this.#keyed = undefined; // it inserted what the cycle staged, without keys
    return done;
  }

  /** The change table's statements while it exists (a consumer drops it to stop); made, with its first rows, when asked. */
  #changeTable(write: kit.SqlBatch, at: string): ChangeStatements | undefined {
    if (!columnsOf(this.#db, kit.changeTableOf(this.#table)).length) {
      this.#changes = undefined; // dropped since: made again only when asked
      if (write.context?.changes !== true) return undefined;
    }
    return this.#changes ??= changeTable(this.#db, this.#table, at);
  }

  readonly failure = (error: unknown) =>
    failureOf(this.#db, this.what, this.#file, error);

  liveCount(range?: KeyRange): number {
    this.#statements();
    const keys: string[] = [];
    const within = range && kit.inRange(range, (key) => `?${keys.push(key)}`);
    const sql =
      `SELECT count(*) AS n FROM ${this.#table} WHERE deleted_at IS NULL${
        within ?? ""
      }`;
    return Number(this.#db.prepare(sql).get(...keys)!.n);
  }

  liveOf(ids: readonly string[], cycle?: number): string[] {
    const asked = "id IN (SELECT value FROM json_each(?1))";
    const live =
      `SELECT id FROM ${this.#table} WHERE deleted_at IS NULL AND ${asked}`;
    const staged = cycle === undefined ? [] : [this.#target, cycle];
    if (cycle !== undefined) this.#statements(); // the stage table
    const sql = `SELECT json_group_array(id) AS ids FROM (${live}${
      cycle === undefined
        ? ""
        : ` UNION SELECT id FROM ${kit.STAGE_TABLE} WHERE target = ?2 AND cycle = ?3 AND ${asked}`
    })`;
    const row = this.#db.prepare(sql).get(JSON.stringify(ids), ...staged);
    return JSON.parse(`${row!.ids}`);
  }

  unseenBetween(...ask: kit.Ask) {
    this.#statements();
    this.#keyed ??= keyedCopy(this.#db, this.#table, this.#target);
    return this.#keyed(this.commits, ...ask);
  }
}

/** Opens a database file (never through a link; a new one 0600). */
function openDatabase(path: string): DatabaseSync {
  type Sqlite = typeof import("node:sqlite");
  const sqlite = tried(() =>
    process.getBuiltinModule?.("node:sqlite") as Sqlite | undefined
  );
  if (sqlite?.DatabaseSync === undefined) {
    const rule =
      "needs node:sqlite, which Deno 2.2+, Node 22.13+ (22.5+ with --experimental-sqlite) and Bun have; on this runtime use createJsonlSink or createPostgresSink";
    throw typeError(CONTEXT, "database", rule);
  }
  if (path !== ":memory:") createPrivate(path, JOURNALS);
  try {
    const db = new sqlite.DatabaseSync(path);
    db.exec("PRAGMA busy_timeout = 10000"); // a second run waits for the first's transaction
    return db;
  } catch (error) {
    throw fileError(path, "open", error); // a folder, a file it may not read
  }
}
