// A sync sink on PostgreSQL through a query function the user passes
// (node-postgres: `(sql, params) => pool.query(sql, params)`), so the module
// needs no driver. Each batch is ONE statement: a pool may send statements
// on different connections, and one statement is one transaction.

import { optionError } from "../core/_check.ts";
import type { SyncCheckpoint, SyncSink } from "./_types.ts";
import { CHECKPOINT_TABLE, quotedTable } from "./_identifier.ts";

const CONTEXT = "Cannot create PostgreSQL sink";

/**
 * Options of {@linkcode createPostgresSink}.
 *
 * @example With node-postgres
 * ```ts
 * import { createPostgresSink, type PostgresSinkOptions } from "@partner-api/client/sync";
 * import { ok } from "node:assert/strict";
 *
 * const sent: string[] = [];
 * // Stands in for a node-postgres pool, which answers `pool.query(sql, params)`.
 * const pool = {
 *   query: (sql: string, _params: unknown[]) => (sent.push(sql), Promise.resolve({ rows: [] as unknown[] })),
 * };
 * const options: PostgresSinkOptions = { query: (sql, params) => pool.query(sql, params), table: "transactions" };
 * await createPostgresSink(options).load();
 * ok(sent.some((sql) => sql.includes('"transactions"')));
 * ```
 */
export interface PostgresSinkOptions {
  /** Sends one statement with `$1`-style parameters; resolves with its rows. */
  query: (sql: string, params: unknown[]) => Promise<{ rows: unknown[] }>;
  /** The table of items (`id TEXT PRIMARY KEY, item JSONB`), created if missing. */
  table: string;
}

/**
 * A sink that keeps the copy in a PostgreSQL table, `id TEXT PRIMARY KEY,
 * item JSONB`, upserting each batch and saving the checkpoint (in the table
 * `partner_api_sync`, by table name) in one statement, so that it commits
 * whole whatever connection of a pool runs it.
 *
 * @param options The query function and the table.
 * @returns The sink.
 * @throws {TypeError} (`option`) For a missing `query` or a table name that
 * is not a plain identifier.
 *
 * @example The statements it sends
 * ```ts
 * import { createPostgresSink } from "@partner-api/client/sync";
 * import { equal, ok } from "node:assert/strict";
 *
 * const sent: string[] = [];
 * const sink = createPostgresSink({
 *   query: (sql) => (sent.push(sql), Promise.resolve({ rows: [] })),
 *   table: "transactions",
 * });
 * equal(await sink.load(), undefined); // no checkpoint yet
 * ok(sent.some((sql) => sql.startsWith("CREATE TABLE")));
 * ```
 */
export function createPostgresSink<T>(
  options: PostgresSinkOptions,
): SyncSink<T> {
  const query = options?.query;
  if (typeof query !== "function") {
    throw optionError(TypeError, CONTEXT, "query", "must be a function");
  }
  const table = quotedTable(options.table, CONTEXT);
  const target = options.table;
  let created: Promise<unknown> | undefined;
  const create = () =>
    created ??= (async () => {
      await query(
        `CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, item JSONB NOT NULL)`,
        [],
      );
      await query(
        `CREATE TABLE IF NOT EXISTS ${CHECKPOINT_TABLE} (target TEXT PRIMARY KEY, checkpoint JSONB NOT NULL)`,
        [],
      );
    })().catch((error) => {
      created = undefined;
      throw error;
    });
  return {
    async load() {
      await create();
      const { rows } = await query(
        `SELECT checkpoint::text AS checkpoint FROM ${CHECKPOINT_TABLE} WHERE target = $1`,
        [target],
      );
      const row = rows[0] as { checkpoint: string } | undefined;
      return row === undefined
        ? undefined
        : JSON.parse(row.checkpoint) as SyncCheckpoint;
    },
    async write(items, checkpoint, ids) {
      await create();
      await query(
        `WITH written AS (
          INSERT INTO ${table} (id, item)
          SELECT * FROM unnest($1::text[], $2::jsonb[])
          ON CONFLICT (id) DO UPDATE SET item = excluded.item
          RETURNING 1
        )
        INSERT INTO ${CHECKPOINT_TABLE} (target, checkpoint) VALUES ($3, $4::jsonb)
        ON CONFLICT (target) DO UPDATE SET checkpoint = excluded.checkpoint`,
        [
          [...ids],
          items.map((item) => JSON.stringify(item)),
          target,
          JSON.stringify(checkpoint),
        ],
      );
    },
  };
}
