// Internal: the PostgreSQL dialect's SQL but the batch statement (_postgres_write.ts). Every parameter is text cast in
// the SQL ($1::text, $2::text::json): a driver that asks for parameter types (postgres.js) would turn JSON text sent as
// `$1::jsonb` into a JSON string. Arrays travel as one JSON text, so no driver's array encoding matters.

import { Buffer } from "node:buffer";
import { tried } from "../core/_check.ts";
import { STALE_AFTER } from "./_lease.ts";
import * as kit from "./_sql_sink.ts";

/** `left(sha256(item as jsonb prints it), 32 hex digits)`, the fingerprint of a stored item. */
export function fingerprintOf(item: string): string {
  return `left(encode(sha256(convert_to((${item})::text, 'UTF8')), 'hex'), 32)`;
}

/** The column of each row's key text (`keyText`): ordered byte by byte, NULL until known. */
export const KEY = "partner_api_key";

const quoted = (value: string) => `'${value.replaceAll("'", "''")}'`;
/** `column` of the table the SQL text `table` names, as the catalog holds it: `what` selected. */
const attribute = (table: string, column: string, what: string) =>
  `(SELECT ${what} FROM pg_attribute WHERE attrelid = to_regclass(${table}) AND attname = '${column}' AND attnum > 0 AND NOT attisdropped)`;
const column = (table: string, name: string) =>
  attribute(table, name, "format_type(atttypid, atttypmod)");
const absent = (table: string) => `to_regclass(${quoted(table)}) IS NULL`;
/** Whether the table (SQL text) has an index whose first column is `column` (and `also` holds). */
const indexed = (table: string, column: string, also = "") =>
  `EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
    WHERE i.indrelid = to_regclass(${table})${also} AND a.attname = '${column}')`;
/** An index that makes `id` a primary key's equal. */
const UNIQUE =
  " AND i.indisunique AND i.indimmediate AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL";
const lacks = (table: string, column: string) =>
  `NOT EXISTS ${attribute(quoted(table), column, "1")}`;

/** What the catalog says of the tables (`$1` the table, quoted), read without changing anything. */
export const CATALOG_SQL =
  `SELECT (to_regclass($1::text) IS NOT NULL)::text AS items,
  ${column("$1::text", "id")} AS id_type,
  ${column("$1::text", "item")} AS item_type,
  ${column("$1::text", "deleted_at")} AS deleted_at_type,
  ${column("$1::text", "seen")} AS seen_type,
  ${column("$1::text", KEY)} AS key_type,
  (${indexed("$1::text", "id", UNIQUE)})::text AS id_unique,
  (to_regclass('${kit.CHECKPOINT_TABLE}') IS NOT NULL)::text AS checkpoints,
  ${column(quoted(kit.CHECKPOINT_TABLE), "rows")} AS rows_type`;

/** The copy's state, read only: its row count, checkpoint row, and the fingerprint of the row it names last. */
export function copySql(
  table: string,
  has: { items: boolean; checkpoints: boolean; recorded: boolean },
): string {
  const count = has.items ? `(SELECT count(*) FROM ${table})::text` : "'0'";
  const fingerprint = fingerprintOf("i.item");
  const found = has.items && has.recorded
    ? `(SELECT ${fingerprint} FROM ${table} i WHERE i.id = substr(c.last, strpos(c.last, ':') + 1))`
    : "NULL::text";
  const join = has.checkpoints
    ? ` LEFT JOIN ${kit.CHECKPOINT_TABLE} c ON c.target = one.target`
    : "";
  return `SELECT ${count} AS rows,
  ${has.checkpoints ? "c.checkpoint::text" : "NULL::text"} AS checkpoint,
  ${has.recorded ? "c.rows::text" : "NULL::text"} AS recorded,
  ${has.recorded ? "c.last" : "NULL::text"} AS last,
  ${found} AS found
  FROM (VALUES ($1::text)) AS one (target)${join}`;
}

/**
 * Creates the tables (`T`, quoted) and the columns earlier versions lacked: the checkpoint becomes text (jsonb cannot
 * hold an edge id with a NUL); the key column (NULL until `unseenBetween` keys it) is indexed over live rows, the index
 * named by PostgreSQL within 63 bytes; an early 0.4 build's `seen` column becomes rows of the seen log, then goes.
 */
export function createSql(T: string): string {
  const { CHECKPOINT_TABLE: C, STAGE_TABLE: S, LEASE_TABLE: L } = kit;
  const [V, target] = [kit.SEEN_TABLE, T.slice(1, -1)]; // a plain identifier: no quote in it
  const no = {
    items: absent(T),
    deletedAt: lacks(T, "deleted_at"),
    key: lacks(T, KEY),
    keyIndex: `NOT ${indexed(quoted(T), KEY)}`,
    stagedKey: lacks(S, KEY),
    checkpoints: absent(C),
    rows: lacks(C, "rows"),
    keyed: lacks(C, "keyed"),
    stage: absent(S),
    lease: absent(L),
    seen: absent(V),
  };
  const jsonbCheckpoint = attribute(quoted(C), "checkpoint", "atttypid") +
    " <> 'text'::regtype";
  return migration(`
  IF ${no.items} THEN CREATE TABLE ${T} (id text PRIMARY KEY, item jsonb NOT NULL, deleted_at timestamptz); END IF;
  IF ${no.deletedAt} THEN ALTER TABLE ${T} ADD COLUMN deleted_at timestamptz; END IF;
  IF ${no.key} THEN ALTER TABLE ${T} ADD COLUMN ${KEY} text COLLATE "C"; END IF;
  IF ${no.keyIndex} THEN CREATE INDEX ON ${T} (${KEY}) WHERE deleted_at IS NULL; END IF;
  IF ${no.checkpoints} THEN CREATE TABLE ${C} (target text PRIMARY KEY, checkpoint text NOT NULL, rows bigint, last text); END IF;
  IF ${no.rows} THEN ALTER TABLE ${C} ADD COLUMN rows bigint, ADD COLUMN last text; END IF;
  IF ${no.keyed} THEN ALTER TABLE ${C} ADD COLUMN keyed text; END IF;
  IF ${jsonbCheckpoint} THEN ALTER TABLE ${C} ALTER COLUMN checkpoint TYPE text USING checkpoint::text; END IF;
  IF ${no.stage} THEN CREATE TABLE ${S} (target text NOT NULL, cycle bigint NOT NULL, id text NOT NULL, item jsonb NOT NULL, PRIMARY KEY (target, id)); END IF;
  IF ${no.stagedKey} THEN ALTER TABLE ${S} ADD COLUMN ${KEY} text; END IF;
  IF ${no.lease} THEN CREATE TABLE ${L} (target text PRIMARY KEY, owner text NOT NULL, refreshed_at timestamptz NOT NULL); END IF;
  IF ${no.seen} THEN CREATE TABLE ${V} (target text NOT NULL, cycle bigint NOT NULL, id text NOT NULL, PRIMARY KEY (target, cycle, id)); END IF;
  IF NOT ${lacks(T, "seen")} THEN
    INSERT INTO ${V} SELECT '${target}', seen, id FROM ${T} WHERE seen > 0 ON CONFLICT DO NOTHING;
    ALTER TABLE ${T} DROP COLUMN seen;
  END IF;`);
}

/** Creates the change table (quoted) of `table` if missing, first an insert of each live row (dated `at`). */
export function createChangesSql(changes: string, table: string, at: string) {
  const [T, noTable, noItems] = [changes, absent(changes), absent(table)];
  const seed =
    `INSERT INTO ${T} (id, change, at, item) SELECT id, 'insert', ${at}, item FROM ${table} WHERE deleted_at IS NULL ORDER BY id`;
  return migration(`
  IF ${noTable} THEN CREATE TABLE ${T} (seq bigserial PRIMARY KEY, id text NOT NULL, change text NOT NULL CHECK (${kit.CHANGE_KINDS}), at timestamptz NOT NULL, item jsonb);
    IF NOT ${noItems} THEN ${seed}; END IF;
  END IF;`);
}

/** `IF ... THEN ...` steps under an advisory lock (two first runs would race in CREATE TABLE), no notices emitted. */
function migration(steps: string): string {
  return `DO $partner_api$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('${kit.CHECKPOINT_TABLE}'));${steps}
END
$partner_api$`;
}

const STALE = `clock_timestamp() - interval '${STALE_AFTER} milliseconds'`;
const LEASE = kit.leaseSql((n) => `$${n}::text`, "clock_timestamp()", STALE);

/** A page of live rows without a key ($1 the id after, or '' for the first page; $2 how many): id, item. */
export const unkeyedSql = (table: string, after: boolean) =>
  `SELECT id, item::text AS item FROM ${table} WHERE deleted_at IS NULL AND ${KEY} IS NULL
  AND id ${after ? ">" : ">="} $1::text ORDER BY id LIMIT $2::text::bigint`;

/** `kit.unkeySql`'s `when` ($1 the target): another writer saved the checkpoint since a keying version did. */
export const OTHER_SAVED = ` AND EXISTS (SELECT 1 FROM ${kit.CHECKPOINT_TABLE}
  WHERE target = $1::text AND keyed IS DISTINCT FROM checkpoint)`;

/** Keys rows still without one: $1 `[[id, key], ...]`. */
export const keySql = (table: string) =>
  `UPDATE ${table} t SET ${KEY} = k.value ->> 1 FROM json_array_elements($1::text::json) AS k (value)
  WHERE t.id = k.value ->> 0 AND t.${KEY} IS NULL`;

/** Binds a key as the next parameter of `params`. */
export const bindTo = (params: string[]) => (key: string) =>
  `$${params.push(key)}::text`;

/**
 * Whether cycle `cycle` of `target` has not logged the id of row `row` seen: one lookup of the log's key a row. Not
 * `NOT EXISTS`, which the planner made a join reading the cycle's whole log for each row while the log was new to its
 * statistics (260 ms a window of 1,000 rows; a sweep of 100,000 took 82 s).
 */
export const unseenIn = (row: string, target: string, cycle: string) =>
  `(SELECT true FROM ${kit.SEEN_TABLE} v WHERE v.target = ${target} AND v.cycle = ${cycle} AND v.id = ${row}.id) IS NULL`;

/** The lease's statements ($1 target, $2 owner), server clock; `take` answers `taken` (the owner), `stale`, `holder`. */
export const LEASE_SQL = {
  ...LEASE,
  take: `WITH taken AS (${LEASE.take})
SELECT (SELECT owner FROM taken) AS taken,
  (SELECT (refreshed_at < ${STALE})::text FROM ${kit.LEASE_TABLE} WHERE target = $1::text) AS stale,
  (SELECT owner FROM ${kit.LEASE_TABLE} WHERE target = $1::text) AS holder`,
};

/** What the catalog says of the change table `$1` (quoted), read only: whether it exists, its columns' types. */
export const CHANGES_CATALOG_SQL =
  `SELECT (to_regclass($1::text) IS NOT NULL)::text AS found,
  (SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
    FROM pg_attribute WHERE attrelid = to_regclass($1::text) AND attnum > 0 AND NOT attisdropped) AS columns`;

/** The columns of a change table the sink made, as CHANGES_CATALOG_SQL reads them; then any a consumer adds. */
export const CHANGES_COLUMNS =
  "seq bigint, id text, change text, at timestamp with time zone, item jsonb";

/** The batch's rows as `[[id, item, key?], ...]` (a key when known), one JSON text. */
export function postgresJson({ ids, texts, keys }: kit.Rows): string {
  const rows = ids.map((id, i) => {
    const key = keys[i] == null ? "" : `,${JSON.stringify(keys[i])}`;
    return `[${JSON.stringify(id)},${texts[i]}${key}]`;
  });
  return `[${rows.join(",")}]`;
}

/** What PostgreSQL can hold, as the sink checks it before sending. */
export type PostgresLimits = Readonly<typeof POSTGRES_LIMITS>;

/** PostgreSQL's limits (measured on 15 with its default max_stack_depth). */
const POSTGRES_LIMITS = {
  /** The longest id, in UTF-8 bytes: a primary key's btree entry holds 2704, 12 of them headers (compression cannot be foretold). */
  idBytes: 2692,
  /** The largest jsonb container: 2^28 - 1 bytes of elements. */
  itemBytes: 268_435_455,
  /** The deepest nesting sent: the server's parser is recursive (2 MB of stack holds about 10,000). */
  depth: 1000,
};

/**
 * A `\u0000` or a lone surrogate's escape (JSON.stringify escapes both, not a pair) after an even number of
 * backslashes: an escape, not an escaped backslash followed by "u0000".
 */
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/;

/** The item's JSON text, or undefined when PostgreSQL cannot hold it or its id. */
export function postgresText(
  item: unknown,
  id: string,
  limits: PostgresLimits = POSTGRES_LIMITS,
): string | undefined {
  if (id.includes("\0") || Buffer.byteLength(id) > limits.idBytes) {
    return undefined;
  }
  const text = tried(() => JSON.stringify(item)); // none for a BigInt, a cycle
  if (text === undefined || UNSTORABLE_ESCAPE.test(text)) return undefined;
  // Depth d takes at least 2d characters.
  if (text.length > 2 * limits.depth && deeperThan(text, limits.depth)) {
    return undefined;
  }
  // jsonb takes at most 12 bytes per byte of JSON text (a number in an array), so most items need no count.
  if (Buffer.byteLength(text) * 12 + 16 <= limits.itemBytes) return text;
  return jsonbBound(JSON.parse(text)) <= limits.itemBytes ? text : undefined;
}

function deeperThan(text: string, max: number): boolean {
  let depth = 0, inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** At least the bytes of `value`'s largest jsonb container: an entry per element (4 bytes, 8 with a key), up to 3 of alignment. */
function jsonbBound(value: unknown): number {
  if (typeof value === "string") return Buffer.byteLength(value);
  if (typeof value === "number") return 16 + String(value).length;
  if (value === null || typeof value !== "object") return 0;
  let total = 4;
  if (Array.isArray(value)) {
    for (const element of value) total += 7 + jsonbBound(element);
  } else {
    for (const [key, element] of Object.entries(value)) {
      total += 11 + Buffer.byteLength(key) + jsonbBound(element);
    }
  }
  return total;
}
