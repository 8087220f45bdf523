// A sync sink on PostgreSQL through the user's query function (any driver): the SQL kit's (_sql_sink.ts) PostgreSQL
// dialect. Each batch is ONE statement and the lock a lease row: a pool may send statements on different connections.

import { optionNames, typeError } from "../core/_check.ts";
import type { SinkLockOptions, SyncSink } from "./sink.ts";
import { holderOf, lockLost } from "./_lease.ts";
import { tooManyDeletes } from "./_deletes.ts";
import * as kit from "./_sql_sink.ts";
import {
  bindTo,
  CATALOG_SQL,
  CHANGES_CATALOG_SQL,
  CHANGES_COLUMNS,
  copySql,
  createChangesSql,
  createSql,
  KEY,
  keySql,
  LEASE_SQL,
  OTHER_SAVED,
  postgresText,
  unkeyedSql,
  unseenIn,
} from "./_postgres_sql.ts";
import { type KeyRange, storedKey } from "./_key_text.ts";
import { writeStatement } from "./_postgres_write.ts";
import { sinkMismatch } from "./sync_error.ts";

const CONTEXT = "Cannot create PostgreSQL sink";
const POSTGRES_OPTIONS = optionNames<PostgresSinkOptions>()(
  "query table now lockWait onLockWait",
);
/** Rows a query of the key's back-fill reads. */
const KEY_PAGE = 1_000;

/**
 * Options of {@linkcode createPostgresSink}.
 *
 * @example With node-postgres (`pg`) or postgres.js (`postgres`)
 * ```ts
 * import { createPostgresSink, type PostgresSinkOptions } from "@partner-api/client/sync";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const sent: string[] = [];
 * // Stand-ins for `new pg.Pool(...)` (answers `{ rows }`) and postgres.js's `postgres(...)` (answers the rows).
 * const pool = { query: (text: string, _params: string[]) => (sent.push(text), Promise.resolve({ rows: [] as unknown[] })) };
 * const sql = { unsafe: (text: string, _params: string[]) => (sent.push(text), Promise.resolve([] as unknown[])) };
 * const withPg: PostgresSinkOptions = { query: (text, params) => pool.query(text, params), table: "transactions" };
 * const withPostgresJs: PostgresSinkOptions = { query: (text, params) => sql.unsafe(text, params), table: "transactions" };
 * deepStrictEqual(await createPostgresSink(withPg).load(), undefined); // no copy yet
 * deepStrictEqual(await createPostgresSink(withPostgresJs).load(), undefined);
 * deepStrictEqual(sent.filter((text) => !text.startsWith("SELECT")), []); // load() only reads
 * ```
 */
export interface PostgresSinkOptions
  extends Pick<SinkLockOptions, "lockWait" | "onLockWait"> {
  /**
   * Sends one statement with `$1`-style string parameters; resolves with its rows, or an object holding them as `rows`.
   * node-postgres: `(text, params) => pool.query(text, params)`; postgres.js: `(text, params) => sql.unsafe(text, params)`.
   */
  query: (
    sql: string,
    params: string[],
  ) => Promise<{ readonly rows: readonly unknown[] } | readonly unknown[]>;
  /**
   * The table of items, created if missing. Quoted, so case matters: `Transactions` and `transactions` are two copies.
   * With `changes: true`, `<table>_changes` too (so at most 55 characters then).
   */
  table: string;
  /**
   * The time (epoch ms) of the change table's `at` and of `deleted_at`, for a test to drive; the lease is judged on
   * the server's clock, which every run of a fleet shares.
   * @default {the server's now()}
   */
  now?: () => number;
}

/**
 * A sink that keeps the copy in a PostgreSQL table (`id text PRIMARY KEY, item jsonb, deleted_at timestamptz`,
 * `partner_api_key text`: the item's place in the order, indexed), each batch and its checkpoint (table `partner_api_sync`)
 * in ONE statement, so it commits whole on any connection of a pool; any driver works (every parameter is a string cast
 * in the SQL). One writer per table: a batch commits only while the run holds `lock()`'s lease row (else `SyncError`
 * `"lock-lost"`). `load()` only reads, and refuses a copy other than recorded (`"sink-mismatch"`); a cycle over
 * `maxDeletes` writes nothing (`"too-many-deletes"`). Ids and items PostgreSQL cannot hold are skipped and reported.
 * Needs a UTF8 database, PostgreSQL 11 or later. Tables, lease, guard, what is skipped and migrations: docs/sync.md,
 * "PostgreSQL".
 *
 * @param options The query function, the table, and how long to wait for another run.
 * @throws {TypeError} (`option`) For a missing `query` or a table name that is not a plain identifier.
 *
 * @example What load() reads
 * ```ts
 * import { createPostgresSink } from "@partner-api/client/sync";
 * import { equal, ok } from "node:assert/strict";
 *
 * const sent: string[] = [];
 * // A database with none of the sink's tables yet.
 * const sink = createPostgresSink({
 *   query: (text) => (sent.push(text), Promise.resolve({ rows: [{ items: "false", checkpoints: "false" }] })),
 *   table: "Transactions",
 * });
 * equal(await sink.load(), undefined); // no checkpoint yet
 * ok(sent.every((text) => !text.includes("CREATE TABLE"))); // nothing created before lock() or write()
 * ```
 */
export function createPostgresSink<T>(
  options: PostgresSinkOptions,
): SyncSink<T> {
  const { table, lockWait } = kit.sinkOptions(
    options,
    POSTGRES_OPTIONS,
    CONTEXT,
  );
  if (typeof options.query !== "function") {
    throw typeError(CONTEXT, "query", "must be a function");
  }
  const dialect = new PostgresDialect(table, options);
  return kit.sqlSink<T>(dialect, { ...options, lockWait });
}

/** A row as the sink's statements return it: every column text. */
type Row = Readonly<Record<string, string | null | undefined>>;

/** The PostgreSQL dialect of the kit, over the user's query function. */
class PostgresDialect implements kit.SqlDialect {
  readonly what: string;
  readonly instead = "give another table";
  /** Whether `<table>_changes` fits PostgreSQL's 63 bytes (the table's name is ASCII): 65 with its quotes. */
  readonly keepsChanges: boolean;
  readonly #query: PostgresSinkOptions["query"];
  readonly #table: string;
  readonly #target: string;
  readonly #now: (() => number) | undefined;
  /** The first change, once the copy passed: the tables. */
  readonly #tables = kit.once(() => this.#read(createSql(this.#table), []));
  /** The change table, checked and created when first kept. */
  readonly #changeTable = kit.once(() => this.#makeChangeTable());
  /** The live rows written without their key (by earlier versions) keyed, once a run, by the first `keyOf` asked with. */
  readonly #keyed = kit.once(this.#keyAll.bind(this));
  /** The change table existed when the copy was last read: every batch records into it (a consumer drops it to stop). */
  #recording = false;

  constructor(
    table: string,
    { query, table: target, now }: PostgresSinkOptions,
  ) {
    this.#query = query;
    this.#table = table;
    this.#target = target;
    this.#now = now;
    this.what = `the table ${table}`;
    this.keepsChanges = kit.changeTableOf(table).length <= 65;
  }

  /** The copy's state, changing nothing: the catalog first (another shape is foreign), then count, checkpoint, last row. */
  async read(): Promise<kit.CopyState> {
    const table = this.#table;
    const catalog = await this.#row(CATALOG_SQL, [table]);
    const has = {
      items: catalog.items === "true",
      checkpoints: catalog.checkpoints === "true",
      recorded: catalog.rows_type != null,
    };
    this.#recording = await this.#hasChangeTable();
    const foreign = foreignColumns(catalog);
    if (foreign !== undefined || (!has.items && !has.checkpoints)) {
      return { rows: 0, foreign };
    }
    const state = await this.#row(copySql(table, has), [table.slice(1, -1)]);
    const recorded = state.recorded == null ? null : Number(state.recorded);
    return { ...state, rows: Number(state.rows ?? 0), recorded };
  }

  async prepare(): Promise<void> {
    // Once per run: a long-lived sink outlives a migration or a dropped table.
    this.#tables.reset();
    this.#changeTable.reset();
    this.#keyed.reset();
    await this.#tables.get();
  }

  async take(token: string): Promise<{ taken: string } | { holder: string }> {
    // Under REPEATABLE READ or SERIALIZABLE, a lease row another run writes meanwhile fails the take (40001): held.
    const row = await this.#row(LEASE_SQL.take, [this.#target, token]).catch(
      (error: { code?: unknown } | null) =>
        error?.code === "40001" ? undefined : Promise.reject(error),
    );
    if (row === undefined) return { holder: holderOf(false) };
    if (row.taken === token) return { taken: token };
    return { holder: holderOf(row.stale === "true", row.holder) };
  }

  /** Once the lease is taken, the keys another writer (0.4) left stale cleared: a failure lets the lease go. */
  async ready(): Promise<void> {
    await this.#read(kit.unkeySql(this.#table, OTHER_SAVED), [this.#target]);
  }

  refresh(token: string): Promise<unknown> {
    return this.#read(LEASE_SQL.refresh, [this.#target, token]);
  }

  async release(token: string): Promise<void> {
    await this.#read(LEASE_SQL.release, [this.#target, token]).catch(() => {});
  }

  readonly text = postgresText;
  readonly holds = (id: string) => !id.includes("\0"); // jsonb cannot carry it

  async apply(write: kit.SqlBatch): Promise<kit.Applied> {
    // Asked to, or it exists (then every run records into); first: a name too long for it leaves nothing created.
    const changes = write.context?.changes === true || this.#recording
      ? await this.#changeTable.get()
      : undefined;
    await this.#tables.get();
    kit.stopIfAborted(write);
    const [table, target, now] = [this.#table, this.#target, this.#now];
    const { sql, params } = writeStatement(table, write, target, changes, now);
    const row = await this.#row(sql, params).catch(async (error) => {
      // Its change table dropped during the run (to stop it)? Then the batch again, recorded only if asked.
      const gone = changes && !await this.#hasChangeTable();
      if (!gone) throw error;
      this.#changeTable.reset();
      this.#recording = false;
    });
    if (row === undefined) return await this.apply(write);
    const ends = write.context?.endsCycle;
    if (row.leased !== "1") throw lockLost(this.what);
    if (row.refused === "true") {
      const [unseen, live] = [Number(row.unseen), Number(row.live)];
      const most = ends?.maxDeletes ?? 0;
      throw tooManyDeletes(unseen, live, most, this.what, ends?.recent);
    }
    const stored = Number(row.written) + Number(row.staged);
    const all = write.rows.ids.length;
    if (row.saved !== "1" || stored !== all) {
      throw new Error(
        `Cannot sync into ${this.what}: the statement wrote ${stored} of ${all} rows`,
      );
    }
    return {
      inserted: Number(row.inserted),
      updated: Number(row.updated),
      deleted: Number(row.deleted),
      ...(ends === undefined ? {} : { held: Number(row.live) }),
    };
  }

  async liveCount(range?: KeyRange): Promise<number> {
    const params: string[] = [];
    const within = range && kit.inRange(range, bindTo(params));
    const sql =
      `SELECT count(*)::text AS n FROM ${this.#table} WHERE deleted_at IS NULL${
        within ?? ""
      }`;
    return Number((await this.#read(sql, params))[0]?.n ?? 0);
  }

  async liveOf(ids: readonly string[], cycle?: number): Promise<string[]> {
    const asked = "id IN (SELECT json_array_elements_text($1::text::json))";
    const staged =
      ` UNION SELECT id FROM ${kit.STAGE_TABLE} WHERE target = $2::text AND cycle = $3::text::bigint AND ${asked}`;
    const sql =
      `SELECT id FROM ${this.#table} WHERE deleted_at IS NULL AND ${asked}${
        cycle === undefined ? "" : staged
      }`;
    const params = [JSON.stringify(ids)];
    if (cycle !== undefined) params.push(this.#target, `${cycle}`);
    return (await this.#read(sql, params)).map((r) => `${r.id}`);
  }

  async unseenBetween(...[cycle, range, most, keyOf, signal]: kit.Ask) {
    await this.#keyed.get(keyOf, signal);
    const top = `${Math.floor(Math.min(most, 2 ** 53))}`;
    const params = [this.#target, `${cycle}`, top], bind = bindTo(params);
    const unseen = unseenIn("t", "$1::text", "$2::text::bigint");
    const limit = "$3::text::bigint";
    const sql = kit.unseenSql(this.#table, range, bind, unseen, limit);
    const rows = await this.#read(sql, params);
    return rows.map(({ id, key }) => ({ id: `${id}`, key: `${key}` }));
  }

  /** Keys the live rows without a key, a page of KEY_PAGE a query by id; one `keyOf` cannot key stays without. */
  async #keyAll(keyOf: kit.Ask[3], signal?: AbortSignal): Promise<void> {
    const ends = kit.keyEndsSql(this.#table, "item::text");
    // An `id` function that changed leaves every key of the other's making.
    if (kit.keysWrong(await this.#read(ends, []), keyOf)) {
      await this.#read(kit.unkeySql(this.#table), []);
    }
    const keying = keySql(this.#table);
    for (let after: string | null = null;;) {
      signal?.throwIfAborted(); // the pages keyed so far stay
      const sql = unkeyedSql(this.#table, after !== null);
      const page = await this.#read(sql, [after ?? "", `${KEY_PAGE}`]);
      const keys = page.flatMap(({ id, item }) => {
        const key = storedKey(keyOf, JSON.parse(`${item}`));
        return key === null ? [] : [[id, key]];
      });
      if (keys.length > 0) await this.#read(keying, [JSON.stringify(keys)]);
      if (page.length < KEY_PAGE) return;
      after = `${page.at(-1)!.id}`;
    }
  }

  /** The rows of one statement, whether the driver gives `{ rows }` or an array. */
  async #read(sql: string, params: string[]): Promise<readonly Row[]> {
    const result = await this.#query(sql, params);
    const rows = Array.isArray(result)
      ? result
      : (result as { rows?: unknown }).rows;
    if (Array.isArray(rows)) return rows as readonly Row[];
    const rule =
      "must resolve with the rows, or with an object holding them as `rows`";
    throw typeError("Cannot sync into PostgreSQL", "query", rule);
  }

  async #row(sql: string, params: string[]): Promise<Row> {
    return (await this.#read(sql, params))[0] ?? {};
  }

  /** Whether `<table>_changes` exists, read only. @throws {SyncError} (`"sink-mismatch"`) For one the sink did not make. */
  async #hasChangeTable(): Promise<boolean> {
    if (!this.keepsChanges) return false; // none: PostgreSQL would cut the name to another's
    const changes = kit.changeTableOf(this.#table);
    const found = await this.#row(CHANGES_CATALOG_SQL, [changes]);
    const made = `${found.columns}, `.startsWith(`${CHANGES_COLUMNS}, `);
    if (found.found !== "true" || made) return found.found === "true";
    const why =
      `${changes} is not a change table this sink made (${found.columns})`;
    throw sinkMismatch(this.what, why, `${this.instead}, or drop it`);
  }

  /**
   * Creates `<table>_changes` if missing (`read` refused one the sink did not make); its name.
   * @throws {TypeError} (`option: "table"`) For a name too long to take `_changes` within PostgreSQL's 63 bytes.
   */
  async #makeChangeTable(): Promise<string> {
    if (!this.keepsChanges) { // syncList refuses it first; a direct write gets here
      const rule =
        "must be at most 55 characters with changes: true (PostgreSQL cuts the change table's name at 63)";
      throw typeError(`Cannot sync into ${this.what}`, "table", rule);
    }
    const changes = kit.changeTableOf(this.#table);
    const now = this.#now, at = now && new Date(now()).toISOString();
    const time = at === undefined ? "now()" : `'${at}'::timestamptz`;
    await this.#row(createChangesSql(changes, this.#table, time), []);
    return changes;
  }
}

/** Why the table's columns are not the sink's, if they are not. */
function foreignColumns(catalog: Row): string | undefined {
  if (catalog.items !== "true") return undefined;
  const made = `${catalog.id_type} ${catalog.item_type} ${catalog.id_unique}`;
  if (made !== "text jsonb true") {
    return "it lacks the columns id (text, unique) and item (jsonb): it was not made by this sink";
  }
  // `seen`: an earlier 0.4 build's, which the tables' migration makes log rows of.
  const types = [catalog.deleted_at_type, catalog.seen_type, catalog.key_type];
  const [deletedAt, seen, key] = types.map((type) => type ?? "none");
  const ours = /^(none|timestamp with time zone) (none|bigint) (none|text)$/;
  if (!ours.test(`${deletedAt} ${seen} ${key}`)) {
    return `its columns deleted_at (${deletedAt}), seen (${seen}) and ${KEY} (${key}) are not the sink's (timestamptz, bigint, text): it was not made by this sink`;
  }
  return undefined;
}
