// Internal: the PostgreSQL sink's SQL, kept apart from its flow (what
// PostgreSQL can hold of a batch is _postgres_batch.ts).
//
// Every parameter is text and cast in the SQL ($1::text, $2::text::json):
// a driver that asks the server for parameter types (postgres.js) then
// sends the string as it is, where `$1::jsonb` made it serialize the JSON
// text again into a JSON string. Arrays travel as one JSON text, so no
// driver's array encoding matters.

import { optionError } from "../core/_check.ts";
import { CHECKPOINT_TABLE, LEASE_TABLE } from "./_identifier.ts";
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
function fingerprintOf(item: string): string {
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
  "seq bigint, id text, change text, at timestamp with time zone";

/** Creates the change table (quoted) if missing, under the tables' advisory lock. */
export function createChangesSql(changes: string): string {
  const text = (value: string) => `'${value.replaceAll("'", "''")}'`;
  return `DO $partner_api$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(${text(CHECKPOINT_TABLE)}));
  IF to_regclass(${text(changes)}) IS NULL THEN
    CREATE TABLE ${changes} (seq bigserial PRIMARY KEY, id text NOT NULL, change text NOT NULL CHECK (change IN ('insert', 'update', 'delete')), at timestamptz NOT NULL);
  END IF;
END
$partner_api$`;
}

/** What a batch statement does besides its upsert. */
export interface WriteShape {
  /** Commit only while the lease row is the run's (`owner` is sent). */
  readonly leased: boolean;
  /** The batch ends a cycle: what becomes of the rows it did not see. */
  readonly ends?: "remove" | "mark";
  /** The change table (quoted) to append to, if kept. */
  readonly changes?: string;
}

/** The parameters of a batch statement, in the order writeSql numbers them. */
export interface WriteParams {
  readonly target: string;
  /** The batch's JSON (postgresBatch). */
  readonly batch: string;
  readonly checkpoint: string;
  readonly cycle: number;
  readonly owner?: string;
  readonly maxDeletes?: number;
}

/** The statement's parameters, every one a string (see the file's head). */
export function writeParams(shape: WriteShape, values: WriteParams): string[] {
  const params = [
    values.target,
    values.batch,
    values.checkpoint,
    String(values.cycle),
  ];
  if (shape.ends !== undefined) params.push(String(values.maxDeletes));
  if (shape.leased) params.push(values.owner ?? "");
  return params;
}

/**
 * One batch in one statement, so that it commits whole on any connection
 * of a pool ($1 target, $2 the batch `[[id, item], ...]` (see
 * postgresBatch), $3 the checkpoint's JSON, $4 the cycle; then, as
 * writeParams orders them, maxDeletes and the owner). Every part reads
 * the table as it was before the statement, and each writes only when:
 *
 * - leased, the lease row is still this run's (the UPDATE holds that row
 *   until the commit, so no take-over slips between the look and the
 *   commit);
 * - ending a cycle, the rows it did not see (live, seen before this
 *   cycle, not in the batch) are at most maxDeletes of the live rows
 *   after the batch: else nothing is written and `refused` says so.
 *
 * The batch's rows are upserted seen in the cycle and live; `insert` is a
 * row absent or marked, `update` one whose jsonb differs. Ending a cycle,
 * the unseen rows are removed or given `deleted_at`. With a change table,
 * each of those is a row of it, in the same statement. The row count and
 * the last row's fingerprint are recorded beside the checkpoint (no last
 * row when the one recorded was removed or marked).
 *
 * The answer is one row: `leased` (0 when the lease was lost), `refused`,
 * `unseen` and `live` (ending a cycle), `written`, `inserted`, `updated`,
 * `deleted`; every column text.
 */
export function writeSql(table: string, shape: WriteShape): string {
  // $1 to $4 always; the others numbered in writeParams's order.
  let numbered = 4;
  const maxDeletes = shape.ends === undefined
    ? undefined
    : `$${++numbered}::text::float8`;
  const owner = shape.leased ? `$${++numbered}::text` : undefined;
  const gates = [
    ...(shape.leased ? ["EXISTS (SELECT 1 FROM lease)"] : []),
    ...(shape.ends === undefined ? [] : ["(SELECT NOT refused FROM guard)"]),
  ];
  const when = (word: "WHERE" | "AND") =>
    gates.length === 0 ? "" : `${word} ${gates.join(" AND ")}`;
  const cycle = "$4::text::bigint";
  const before = (column: string) =>
    `(SELECT ${column} FROM ${CHECKPOINT_TABLE} WHERE target = $1::text)`;
  const parts: string[] = [];
  if (owner !== undefined) {
    parts.push(`lease AS (
  UPDATE ${LEASE_TABLE} SET refreshed_at = clock_timestamp()
  WHERE target = $1::text AND owner = ${owner} RETURNING 1
)`);
  }
  parts.push(
    `batch AS (
  SELECT e.ord, e.value ->> 0 AS id, (e.value -> 1)::jsonb AS item
  FROM json_array_elements($2::text::json) WITH ORDINALITY AS e (value, ord)
)`,
    `kinds AS (
  SELECT b.ord, b.id, t.id IS NULL AS added,
    CASE WHEN t.id IS NULL OR t.deleted_at IS NOT NULL THEN 'insert'
      WHEN t.item IS DISTINCT FROM b.item THEN 'update' END AS change
  FROM batch b LEFT JOIN ${table} t ON t.id = b.id
)`,
  );
  if (shape.ends !== undefined) {
    parts.push(
      `gone AS (
  SELECT t.id FROM ${table} t
  WHERE t.seen < ${cycle} AND t.deleted_at IS NULL
    AND NOT EXISTS (SELECT 1 FROM batch b WHERE b.id = t.id)
)`,
      // Each count in FROM, so that each is taken once (in the select
      // list, one the guard uses twice would be taken twice).
      `guard AS (
  SELECT u.n AS unseen, l.n + i.n AS live, u.n > ${maxDeletes} * (l.n + i.n) AS refused
  FROM (SELECT count(*) AS n FROM gone) AS u,
    (SELECT count(*) AS n FROM ${table} WHERE deleted_at IS NULL) AS l,
    (SELECT count(*) AS n FROM kinds WHERE change = 'insert') AS i
)`,
    );
  }
  parts.push(`written AS (
  INSERT INTO ${table} AS t (id, item, seen, deleted_at)
  SELECT id, item, ${cycle}, NULL FROM batch ${when("WHERE")}
  ON CONFLICT (id) DO UPDATE SET item = excluded.item, seen = excluded.seen, deleted_at = NULL
  RETURNING 1
)`);
  if (shape.ends === "remove") {
    parts.push(`removed AS (
  DELETE FROM ${table} t USING gone g WHERE t.id = g.id ${when("AND")}
  RETURNING 1
)`);
  } else if (shape.ends === "mark") {
    parts.push(`removed AS (
  UPDATE ${table} t SET deleted_at = now() FROM gone g WHERE t.id = g.id ${
      when("AND")
    }
  RETURNING 1
)`);
  }
  if (shape.changes !== undefined) {
    const deletes = shape.ends === undefined
      ? ""
      : " UNION ALL SELECT 1, 0, id, 'delete' FROM gone";
    parts.push(`recorded AS (
  INSERT INTO ${shape.changes} (id, change, at)
  SELECT id, change, now() FROM (
    SELECT 0 AS part, ord, id, change FROM kinds WHERE change IS NOT NULL${deletes}
  ) AS c ${when("WHERE")}
  ORDER BY part, ord, id
  RETURNING 1
)`);
  }
  const lastBefore = before("last");
  const keptLast = shape.ends === undefined ? lastBefore : `(SELECT l.last
    FROM (SELECT ${lastBefore} AS last) AS l
    WHERE NOT EXISTS (SELECT 1 FROM gone g WHERE g.id = substr(l.last, strpos(l.last, ':') + 1)))`;
  parts.push(`saved AS (
  INSERT INTO ${CHECKPOINT_TABLE} AS c (target, checkpoint, rows, last)
  SELECT $1::text, $3::text,
    coalesce(${before("rows")}, (SELECT count(*) FROM ${table}))
      + (SELECT count(*) FROM kinds WHERE added)${
    shape.ends === "remove" ? " - (SELECT count(*) FROM gone)" : ""
  },
    coalesce(
      (SELECT ${
    fingerprintOf("b.item")
  } || ':' || b.id FROM batch b ORDER BY b.ord DESC LIMIT 1),
      ${keptLast})
  ${when("WHERE")}
  ON CONFLICT (target) DO UPDATE SET checkpoint = excluded.checkpoint, rows = excluded.rows, last = excluded.last
  RETURNING 1
)`);
  const ends = shape.ends !== undefined;
  return `WITH ${parts.join(", ")}
SELECT ${shape.leased ? "(SELECT count(*) FROM lease)::text" : "'1'"} AS leased,
  ${ends ? "(SELECT refused FROM guard)::text" : "'false'"} AS refused,
  ${ends ? "(SELECT unseen FROM guard)::text" : "'0'"} AS unseen,
  ${ends ? "(SELECT live FROM guard)::text" : "'0'"} AS live,
  (SELECT count(*) FROM saved)::text AS saved,
  (SELECT count(*) FROM written)::text AS written,
  (SELECT count(*) FROM kinds WHERE change = 'insert')::text AS inserted,
  (SELECT count(*) FROM kinds WHERE change = 'update')::text AS updated,
  ${ends ? "(SELECT count(*) FROM removed)::text" : "'0'"} AS deleted`;
}
