// A sync sink on PostgreSQL through a query function the user passes, so
// the module needs no driver and works with any (node-postgres,
// postgres.js). Each batch is ONE statement: a pool may send statements on
// different connections, and one statement is one transaction. For the
// same reason the lock is a lease row, not a session or advisory lock.

import { optionError } from "../core/_check.ts";
import type {
  SinkLockOptions,
  SyncCheckpoint,
  SyncSink,
  SyncWriteContext,
  SyncWriteReport,
} from "./sink.ts";
import { quotedTable } from "./_identifier.ts";
import {
  checkLockWait,
  DEFAULT_LOCK_WAIT,
  keepRefreshed,
  lockLost,
  runToken,
  waitForLock,
} from "./_lease.ts";
import {
  createSql,
  type Query,
  REFRESH_SQL,
  RELEASE_SQL,
  type Row,
  rowsOf,
  TAKE_SQL,
} from "./_postgres_copy.ts";
import { writeParams, type WriteShape, writeSql } from "./_postgres_write.ts";
import { postgresBatch } from "./_postgres_batch.ts";
import { makeChangeTable, readCopy } from "./_postgres_state.ts";
import { tooManyDeletes } from "./_deletes.ts";

const CONTEXT = "Cannot create PostgreSQL sink";

/**
 * Options of {@linkcode createPostgresSink}.
 *
 * @example With node-postgres (`pg`) or postgres.js (`postgres`)
 * ```ts
 * import { createPostgresSink, type PostgresSinkOptions } from "@partner-api/client/sync";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const sent: string[] = [];
 * // Stand in for a node-postgres pool (`new pg.Pool(...)`), which answers
 * // `pool.query(text, params)` with `{ rows }`, and for postgres.js
 * // (`postgres(...)`), whose `sql.unsafe(text, params)` answers the rows.
 * const pool = {
 *   query: (text: string, _params: string[]) => (sent.push(text), Promise.resolve({ rows: [] as unknown[] })),
 * };
 * const sql = {
 *   unsafe: (text: string, _params: string[]) => (sent.push(text), Promise.resolve([] as unknown[])),
 * };
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
   * Sends one statement with `$1`-style parameters, all strings (each is
   * cast in the SQL); resolves with its rows, or with an object holding
   * them as `rows`. node-postgres: `(text, params) => pool.query(text,
   * params)`; postgres.js: `(text, params) => sql.unsafe(text, params)`.
   */
  query: (
    sql: string,
    params: string[],
  ) => Promise<{ readonly rows: readonly unknown[] } | readonly unknown[]>;
  /**
   * The table of items (`id text PRIMARY KEY, item jsonb, deleted_at
   * timestamptz, seen bigint`), created if missing. The name is quoted, so
   * case matters: `Transactions` and `transactions` are two tables, each
   * with its own checkpoint row (keyed by the name exactly as given). With
   * `changes: true`, `<table>_changes` too (so at most 55 characters then).
   */
  table: string;
}

/**
 * A sink that keeps the copy in a PostgreSQL table, `id text PRIMARY KEY,
 * item jsonb, deleted_at timestamptz, seen bigint` (each item a JSON
 * object, as the service sent it), upserting each batch and saving the
 * checkpoint (in the table `partner_api_sync`, keyed by the table name
 * exactly as given, with the row count and a fingerprint of the last row
 * committed) in ONE statement, so that it commits whole whatever
 * connection of a pool runs it. Works with any driver: every parameter is
 * a string cast in the SQL.
 *
 * It follows the sweep: each row keeps the cycle it was last `seen` in
 * (and is live again, `deleted_at` NULL, when seen). The batch that
 * completes a cycle also removes the live rows the cycle did not see, or
 * sets their `deleted_at` (`deletes: "mark"`); when they are more than
 * `maxDeletes` of the live rows, that statement writes nothing at all and
 * the run ends with `SyncError` (`"too-many-deletes"`). With `changes:
 * true`, each row inserted (or live again), changed (its jsonb differs) or
 * removed (or marked) is also a row of `<table>_changes(seq bigserial,
 * id, change, at)`, written by the same statement: read by `seq`, it
 * replays to the live rows.
 *
 * One writer per table: `lock()` takes a lease row (table
 * `partner_api_sync_lease`, by the server's clock; a lease not refreshed
 * for 5 s is taken over), and a batch commits only while the lease is
 * still the run's: a run whose lease was taken over stops with
 * `SyncError` (`"lock-lost"`), writing nothing.
 *
 * `load()` only reads: a table with rows but no checkpoint (not made by
 * this sink), one without the columns `id text` (unique) and `item
 * jsonb`, a checkpoint this version cannot read, or a row count or last
 * row that differs from what was recorded is refused with `SyncError`
 * (`"sink-mismatch"`), and nothing is changed; so is a `deleted_at` or
 * `seen` column of another type, or (at the first write that keeps
 * changes) a `<table>_changes` the sink did not make. The tables are
 * created (and earlier versions' tables given their new columns:
 * `deleted_at`, `seen`, and 0.3's checkpoint's row count) by `lock()` or
 * the first write, once the copy passed.
 *
 * Ids compare as strings: the last occurrence in a batch wins. What
 * PostgreSQL cannot hold is skipped and reported (`SyncResult.skippedIds`),
 * never sent: an id with a NUL, a lone surrogate or more than 2692 UTF-8
 * bytes; an item whose strings hold a NUL or a lone surrogate, nested
 * deeper than 1000 levels, or larger than a jsonb value (256 MiB). The
 * database's encoding must be UTF8; PostgreSQL 11 or later (`sha256`).
 *
 * @param options The query function, the table, and how long to wait for
 * another run.
 * @returns The sink.
 * @throws {TypeError} (`option`) For a missing `query` or a table name that
 * is not a plain identifier.
 *
 * @example What load() reads
 * ```ts
 * import { createPostgresSink } from "@partner-api/client/sync";
 * import { equal, ok } from "node:assert/strict";
 *
 * const sent: string[] = [];
 * // Stands in for a database that has none of the sink's tables yet.
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
  const read = readerOf(options?.query, options?.lockWait);
  const table = quotedTable(options.table, CONTEXT);
  const what = `the table ${table}`;
  let checked = false;
  let owner: string | undefined;
  /** Checks the copy, reading only: what load() and lock() do first. */
  const check = async () => {
    const checkpoint = await readCopy(read, table, what);
    checked = true;
    return checkpoint;
  };
  /** The first change, once the copy passed: the tables. */
  const tables = once(() => read(createSql(table), []));
  /** The change table, checked and created when first kept. */
  const changeTable = once(() => makeChangeTable(read, table, what));
  return {
    load: check,
    async lock(run = {}) {
      await check();
      // Once per run: the tables may have changed since the last (a
      // long-lived sink outlives a migration or a dropped table).
      tables.reset();
      changeTable.reset();
      await tables.get();
      const lease = await holdLease(read, options.table, what, {
        signal: run.signal,
        wait: options.lockWait ?? DEFAULT_LOCK_WAIT,
        onWait: options.onLockWait,
      });
      owner = lease.owner;
      return {
        async [Symbol.asyncDispose]() {
          owner = undefined;
          await lease.release();
        },
      };
    },
    async write(items, checkpoint, ids, context) {
      if (!checked) await check();
      // The change table's checks first: a refusal leaves nothing created.
      const changes = context?.changes === true
        ? await changeTable.get()
        : undefined;
      await tables.get();
      const batch = postgresBatch(items, ids);
      const { sql, params } = batchStatement(table, batch.json, {
        target: options.table,
        checkpoint,
        context,
        owner,
        changes,
      });
      const row = (await read(sql, params))[0] ?? {};
      return judgeWrite(row, batch, context?.endsCycle, what);
    },
  };
}

/** The user's `query`, checked (and `lockWait`), as the sink reads rows through it. */
function readerOf(
  query: unknown,
  lockWait: unknown,
): (sql: string, params: string[]) => Promise<readonly Row[]> {
  checkLockWait(lockWait, CONTEXT);
  if (typeof query !== "function") {
    throw optionError(TypeError, CONTEXT, "query", "must be a function");
  }
  return (sql, params) => rowsOf(query as Query, sql, params);
}

/** `make`'s promise, made once, and again after it failed or a reset. */
function once<R>(make: () => Promise<R>) {
  let made: Promise<R> | undefined;
  return {
    get: () =>
      made ??= make().catch((error) => {
        made = undefined;
        throw error;
      }),
    reset: () => made = undefined,
  };
}

/** A batch's one statement and its parameters. */
function batchStatement(
  table: string,
  batch: string,
  run: {
    target: string;
    checkpoint: SyncCheckpoint;
    context: SyncWriteContext | undefined;
    owner: string | undefined;
    changes: string | undefined;
  },
): { sql: string; params: string[] } {
  const { owner, changes } = run;
  const ends = run.context?.endsCycle;
  const shape: WriteShape = {
    leased: owner !== undefined,
    ...(ends === undefined ? {} : { ends: ends.deletes }),
    ...(changes === undefined ? {} : { changes }),
    ...(run.context?.phase === "sweep" && ends === undefined
      ? { stages: true }
      : {}),
  };
  const params = writeParams(shape, {
    target: run.target,
    batch,
    checkpoint: JSON.stringify(run.checkpoint),
    cycle: run.context?.cycle ?? 0,
    ...(owner === undefined ? {} : { owner }),
    ...(ends === undefined ? {} : { maxDeletes: ends.maxDeletes }),
    ...(ends?.recent === undefined ? {} : { recent: ends.recent }),
  });
  return { sql: writeSql(table, shape), params };
}

/**
 * Takes the lease row of `target` for a run, kept fresh until released. A
 * lease left behind (the server gone) is stale in 5 s: the run's outcome
 * stands either way.
 */
async function holdLease(
  read: (sql: string, params: string[]) => Promise<readonly Row[]>,
  target: string,
  what: string,
  wait: Parameters<typeof waitForLock>[1],
): Promise<{ owner: string; release(): Promise<void> }> {
  const token = runToken();
  await waitForLock(what, wait, async () => {
    const row = (await read(TAKE_SQL, [target, token]))[0];
    if (row?.taken === token) return { taken: token };
    return {
      holder: row?.stale === "true" ? "a run that stopped" : "another run",
    };
  });
  let refreshing: Promise<unknown> = Promise.resolve();
  const stop = keepRefreshed(() =>
    refreshing = read(REFRESH_SQL, [target, token])
  );
  return {
    owner: token,
    async release() {
      stop();
      await refreshing.catch(() => {});
      await read(RELEASE_SQL, [target, token]).catch(() => {});
    },
  };
}

/**
 * What the batch statement answered, as the sink reports it.
 *
 * @throws {SyncError} (`"lock-lost"`, `"too-many-deletes"`) When it wrote
 * nothing because the lease was lost or the cycle would remove too much.
 */
function judgeWrite(
  row: Row,
  batch: {
    readonly ids: readonly string[];
    readonly skipped: readonly string[];
  },
  ends: SyncWriteContext["endsCycle"],
  what: string,
): SyncWriteReport {
  if (row.leased !== "1") throw lockLost(what);
  if (row.refused === "true") {
    throw tooManyDeletes(
      Number(row.unseen),
      Number(row.live),
      ends?.maxDeletes ?? 0,
      what,
      ends?.recent,
    );
  }
  const stored = Number(row.written) + Number(row.staged);
  if (row.saved !== "1" || stored !== batch.ids.length) {
    throw new Error(
      `Cannot sync into ${what}: the statement wrote ${stored} of ${batch.ids.length} rows`,
    );
  }
  return {
    skippedIds: batch.skipped,
    inserted: Number(row.inserted),
    updated: Number(row.updated),
    deleted: Number(row.deleted),
    ...(ends === undefined ? {} : { held: Number(row.live) }),
  };
}
