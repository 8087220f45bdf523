// Internal: the PostgreSQL sink's SQL, kept apart from its flow (what
// PostgreSQL can hold of a batch is _postgres_batch.ts, a batch's one
// statement _postgres_write.ts).
//
// Every parameter is text and cast in the SQL ($1::text, $2::text::json):
// a driver that asks the server for parameter types (postgres.js) then
// sends the string as it is, where `$1::jsonb` made it serialize the JSON
// text again into a JSON string. Arrays travel as one JSON text, so no
// driver's array encoding matters.

import { optionError } from "../core/_check.ts";
import { CHECKPOINT_TABLE, LEASE_TABLE, STAGE_TABLE } from "./_identifier.ts";
import { STALE_AFTER } from "./_lease.ts";

/** Sends one statement with text parameters; resolves with its rows. */
export type Query = (
  sql: string,
  params: string[],
) => Promise<{ readonly rows: readonly unknown[] } | readonly unknown[]>;

/** A row as the sink's statements return it: every column text. */
export type Row = Readonly<Record<string, string | null | undefined>>;

/** The rows of one statement, whether the driver gives `{ rows }` or an array. */
export async function rowsOf(
  query: Query,
  sql: string,
  params: string[],
): Promise<readonly Row[]> {
  const result = await query(sql, params);
  const rows = Array.isArray(result)
    ? result
    : (result as { rows?: unknown }).rows;
  if (!Array.isArray(rows)) {
    throw optionError(
      TypeError,
      "Cannot sync into PostgreSQL",
      "query",
      "must resolve with the rows, or with an object holding them as `rows`",
    );
  }
  return rows as readonly Row[];
}

/** `left(sha256(item as jsonb prints it), 32 hex digits)`, the fingerprint of a stored item. */
export function fingerprintOf(item: string): string {
  return `left(encode(sha256(convert_to((${item})::text, 'UTF8')), 'hex'), 32)`;
}

/** What the catalog says of the tables, read without changing anything. */
export function catalogSql(): string {
  const column = (table: string, name: string) =>
    `(SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = to_regclass(${table}) AND attname = '${name}' AND attnum > 0 AND NOT attisdropped)`;
  return `SELECT (to_regclass($1::text) IS NOT NULL)::text AS items,
  ${column("$1::text", "id")} AS id_type,
  ${column("$1::text", "item")} AS item_type,
  ${column("$1::text", "deleted_at")} AS deleted_at_type,
  ${column("$1::text", "seen")} AS seen_type,
  (EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
    WHERE i.indrelid = to_regclass($1::text) AND i.indisunique AND i.indimmediate AND i.indnkeyatts = 1
    AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = 'id'))::text AS id_unique,
  (to_regclass('${CHECKPOINT_TABLE}') IS NOT NULL)::text AS checkpoints,
  ${column(`'${CHECKPOINT_TABLE}'`, "rows")} AS rows_type`;
}

/**
 * The copy's state: its row count, its checkpoint row, and the
 * fingerprint of the row its checkpoint names last; read only.
 */
export function copySql(
  table: string,
  has: { items: boolean; checkpoints: boolean; recorded: boolean },
): string {
  const recorded = has.checkpoints && has.recorded;
  return `SELECT ${
    has.items ? `(SELECT count(*) FROM ${table})::text` : "'0'"
  } AS count,
  ${has.checkpoints ? "c.checkpoint::text" : "NULL::text"} AS checkpoint,
  ${recorded ? "c.rows::text" : "NULL::text"} AS recorded,
  ${recorded ? "c.last" : "NULL::text"} AS last,
  ${
    has.items && recorded
      ? `(SELECT ${
        fingerprintOf("i.item")
      } FROM ${table} i WHERE i.id = substr(c.last, strpos(c.last, ':') + 1))`
      : "NULL::text"
  } AS found
  FROM (VALUES ($1::text)) AS one (target)${
    has.checkpoints
      ? ` LEFT JOIN ${CHECKPOINT_TABLE} c ON c.target = one.target`
      : ""
  }`;
}

/**
 * Creates the tables the sink needs, and the columns earlier versions
 * lacked (the checkpoint becomes text: jsonb cannot hold an edge id with a
 * NUL; a table of items gets `deleted_at` and `seen`, 0 for rows no cycle
 * saw yet). One statement under a transaction's advisory lock: two first
 * runs at once would otherwise race in CREATE TABLE. No notices
 * (postgres.js prints them).
 */
export function createSql(table: string): string {
  const text = (value: string) => `'${value.replaceAll("'", "''")}'`;
  return `DO $partner_api$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(${text(CHECKPOINT_TABLE)}));
  IF to_regclass(${text(table)}) IS NULL THEN
    CREATE TABLE ${table} (id text PRIMARY KEY, item jsonb NOT NULL, deleted_at timestamptz, seen bigint NOT NULL DEFAULT 0);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(${
    text(table)
  }) AND attname = 'deleted_at' AND NOT attisdropped) THEN
    ALTER TABLE ${table} ADD COLUMN deleted_at timestamptz;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(${
    text(table)
  }) AND attname = 'seen' AND NOT attisdropped) THEN
    ALTER TABLE ${table} ADD COLUMN seen bigint NOT NULL DEFAULT 0;
  END IF;
  IF to_regclass(${text(CHECKPOINT_TABLE)}) IS NULL THEN
    CREATE TABLE ${CHECKPOINT_TABLE} (target text PRIMARY KEY, checkpoint text NOT NULL, rows bigint, last text);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(${
    text(CHECKPOINT_TABLE)
  }) AND attname = 'rows' AND NOT attisdropped) THEN
    ALTER TABLE ${CHECKPOINT_TABLE} ADD COLUMN rows bigint, ADD COLUMN last text;
  END IF;
  IF (SELECT atttypid FROM pg_attribute WHERE attrelid = to_regclass(${
    text(CHECKPOINT_TABLE)
  }) AND attname = 'checkpoint' AND NOT attisdropped) <> 'text'::regtype THEN
    ALTER TABLE ${CHECKPOINT_TABLE} ALTER COLUMN checkpoint TYPE text USING checkpoint::text;
  END IF;
  IF to_regclass(${text(STAGE_TABLE)}) IS NULL THEN
    CREATE TABLE ${STAGE_TABLE} (target text NOT NULL, cycle bigint NOT NULL, id text NOT NULL, item jsonb NOT NULL, PRIMARY KEY (target, id));
  END IF;
  IF to_regclass(${text(LEASE_TABLE)}) IS NULL THEN
    CREATE TABLE ${LEASE_TABLE} (target text PRIMARY KEY, owner text NOT NULL, refreshed_at timestamptz NOT NULL);
  END IF;
END
$partner_api$`;
}

const STALE = `clock_timestamp() - interval '${STALE_AFTER} milliseconds'`;

/**
 * Takes the lease ($1 target, $2 owner) if it is free, this run's, or
 * stale, by the server's clock: `taken` is the owner when it was taken;
 * `stale` says whether the holder's lease had gone stale.
 */
export const TAKE_SQL = `WITH taken AS (
  INSERT INTO ${LEASE_TABLE} AS lease (target, owner, refreshed_at) VALUES ($1::text, $2::text, clock_timestamp())
  ON CONFLICT (target) DO UPDATE SET owner = excluded.owner, refreshed_at = excluded.refreshed_at
  WHERE lease.owner = excluded.owner OR lease.refreshed_at < ${STALE}
  RETURNING owner
)
SELECT (SELECT owner FROM taken) AS taken,
  (SELECT (refreshed_at < ${STALE})::text FROM ${LEASE_TABLE} WHERE target = $1::text) AS stale`;

/** Refreshes the lease ($1 target) while it is still this run's ($2). */
export const REFRESH_SQL =
  `UPDATE ${LEASE_TABLE} SET refreshed_at = clock_timestamp() WHERE target = $1::text AND owner = $2::text`;

/** Releases the lease ($1 target) if it is still this run's ($2). */
export const RELEASE_SQL =
  `DELETE FROM ${LEASE_TABLE} WHERE target = $1::text AND owner = $2::text`;

/** The change table of `table` (quoted): `"<table>_changes"`. */
export function changeTableOf(table: string): string {
  return `"${table.slice(1, -1)}_changes"`;
}

/**
 * What the catalog says of the change table `$1` (quoted), read without
 * changing anything: whether it exists, and its columns' types.
 */
export const CHANGES_CATALOG_SQL =
  `SELECT (to_regclass($1::text) IS NOT NULL)::text AS found,
  (SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
    FROM pg_attribute WHERE attrelid = to_regclass($1::text) AND attnum > 0 AND NOT attisdropped) AS columns`;

/** The columns of a change table the sink made, as CHANGES_CATALOG_SQL reads them. */
export const CHANGES_COLUMNS =
  "seq bigint, id text, change text, at timestamp with time zone, item jsonb";

/** The columns of a change table 0.3 made: `item` is added to it. */
export const CHANGES_COLUMNS_0_3 =
  "seq bigint, id text, change text, at timestamp with time zone";

/** Creates the change table (quoted) if missing, under the tables' advisory lock. */
export function createChangesSql(changes: string): string {
  const text = (value: string) => `'${value.replaceAll("'", "''")}'`;
  return `DO $partner_api$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(${text(CHECKPOINT_TABLE)}));
  IF to_regclass(${text(changes)}) IS NULL THEN
    CREATE TABLE ${changes} (seq bigserial PRIMARY KEY, id text NOT NULL, change text NOT NULL CHECK (change IN ('insert', 'update', 'delete')), at timestamptz NOT NULL, item jsonb);
  END IF;
  ALTER TABLE ${changes} ADD COLUMN IF NOT EXISTS item jsonb;
END
$partner_api$`;
}
