// Internal: the PostgreSQL dialect's one statement per batch (_postgres_sql.ts says why every parameter is text): the
// upsert, and the lease, cycle end, change table and checkpoint, each a step of one WITH: all commit or none.

import * as kit from "./_sql_sink.ts";
import { fingerprintOf, KEY, postgresJson, unseenIn } from "./_postgres_sql.ts";
import { LENIENT } from "./_deletes.ts";

/** A batch's one statement and its parameters, all strings (see _postgres_sql.ts), each numbered as it is added. */
export function writeStatement(
  table: string,
  write: kit.SqlBatch,
  target: string,
  changes: string | undefined,
  now: (() => number) | undefined,
): { sql: string; params: string[] } {
  const params = [target, postgresJson(write.rows)];
  params.push(JSON.stringify(write.checkpoint), JSON.stringify(write.kept));
  const param = (value: unknown, cast: string) =>
    `$${params.push(`${value}`)}::text${cast}`;
  return { sql: writeSql(table, shapeOf(write, changes, now, param)), params };
}

/**
 * A batch statement besides its upsert: the lease's `owner` parameter; a cycle's end (unseen rows' fate, and the
 * guard's parameters); whether a sweep's new rows are staged for the cycle's guard; the change table (quoted). A
 * parameter (`param`) only where a step reads it: PostgreSQL refuses one the statement does not use.
 */
function shapeOf(
  write: kit.SqlBatch,
  changes: string | undefined,
  now: (() => number) | undefined,
  param: (value: unknown, cast: string) => string,
) {
  const { owner, context } = write;
  const ends = context?.endsCycle;
  const stages = context?.phase === "sweep" && ends === undefined;
  // Whether the batch's ids are logged seen: in a cycle, before its end.
  const logs = kit.inCycle(write) && ends === undefined;
  return {
    owner: owner === undefined ? undefined : param(owner, ""),
    ends: ends && {
      deletes: ends.deletes,
      maxDeletes: param(ends.maxDeletes, "::float8"),
      deleted: param(ends.recent?.deleted ?? 0, "::bigint"),
      largest: param(ends.recent?.largest ?? 0, "::bigint"),
    },
    stages,
    logs,
    // The cycle's parameter (its number), for the steps of a cycle.
    cycle: stages || logs || ends ? param(context?.cycle ?? 0, "::bigint") : "",
    changes,
    // The time of change rows and `deleted_at`: the sink's `now`, else the server's.
    at: now && (changes !== undefined || ends?.deletes === "mark")
      ? param(new Date(now()).toISOString(), "::timestamptz")
      : "now()",
  };
}

type Shape = ReturnType<typeof shapeOf>;

/**
 * One batch in one statement, committed whole on any connection of a pool ($1 target, $2 `[[id, item, key?], ...]`, $3
 * the checkpoint, $4 the skipped ids whose rows stay; then as writeStatement adds them). Every step reads the table as
 * before the statement and writes only while the lease row is this run's (the UPDATE holds it until the commit) and,
 * ending a cycle, the unseen rows are at most maxDeletes of the live rows after it (else `refused`).
 */
function writeSql(table: string, shape: Shape): string {
  const { owner, ends } = shape;
  const and = (owner === undefined ? "" : " AND EXISTS (SELECT 1 FROM lease)") +
    (ends === undefined ? "" : " AND (SELECT NOT refused FROM guard)");
  const [where, holds] = [`WHERE true${and}`, held(table)];
  const writes = shape.stages ? `WHERE ${holds}` : "WHERE true";
  const parts = [
    // The lease refreshed, only while `owner` still holds it.
    ...(owner === undefined ? [] : [`lease AS (
  UPDATE ${kit.LEASE_TABLE} SET refreshed_at = clock_timestamp()
  WHERE target = $1::text AND owner = ${owner} RETURNING 1
)`]),
    ...batchSteps(table, shape.stages),
    ...(ends ? cycleEndSteps(table, shape, and) : []),
    // Only a new, changed, marked or unkeyed row is written: a sweep over an unchanged list rewrites none.
    `written AS (
  INSERT INTO ${table} AS t (id, item, deleted_at, ${KEY})
  SELECT id, item, NULL, key FROM batch b ${writes}${and}
  ON CONFLICT (id) DO UPDATE SET item = excluded.item, deleted_at = NULL, ${KEY} = excluded.${KEY}
  WHERE t.deleted_at IS NOT NULL OR t.item IS DISTINCT FROM excluded.item OR t.${KEY} IS DISTINCT FROM excluded.${KEY}
  RETURNING 1
)`,
    // A sweep's rows the table lacks, held until the cycle passes its guard.
    ...(!shape.stages ? [] : [`staged AS (
  INSERT INTO ${kit.STAGE_TABLE} AS s (target, cycle, id, item, ${KEY})
  SELECT $1::text, ${shape.cycle}, b.id, b.item, b.key FROM batch b WHERE NOT ${holds}${and}
  ON CONFLICT (target, id) DO UPDATE SET cycle = excluded.cycle, item = excluded.item, ${KEY} = excluded.${KEY}
  RETURNING 1
)`]),
    ...(!shape.logs ? [] : [`logged AS (
  INSERT INTO ${kit.SEEN_TABLE} (target, cycle, id)
  SELECT $1::text, ${shape.cycle}, id FROM (SELECT id FROM batch UNION SELECT id FROM kept) AS s ${where}
  ON CONFLICT DO NOTHING
  RETURNING 1
)`]),
    ...(shape.changes === undefined ? [] : [changesStep(shape, where)]),
    savedStep(table, shape, where),
  ];
  return `WITH ${parts.join(", ")}\n${answerSelect(shape)}`;
}

/** Whether the table holds the batch row `b`: a staged row is one it lacks; a written one, any other. */
const held = (table: string) =>
  `EXISTS (SELECT 1 FROM ${table} h WHERE h.id = b.id)`;

/** The batch's rows, and what each is to the table now: new (an insert, unless staged), changed (a marked row back too), or neither. */
function batchSteps(table: string, stages: boolean): string[] {
  return [
    `batch AS (
  SELECT e.ord, e.value ->> 0 AS id, (e.value -> 1)::jsonb AS item, e.value ->> 2 AS key
  FROM json_array_elements($2::text::json) WITH ORDINALITY AS e (value, ord)
)`,
    // The ids skipped whose rows stay.
    `kept AS (SELECT value AS id FROM json_array_elements_text($4::text::json))`,
    `kinds AS (
  SELECT b.ord, b.id, b.item, t.id IS NULL AS added,
    t.deleted_at IS NULL AND t.item = b.item AND t.${KEY} IS NOT DISTINCT FROM b.key AS same,
    CASE WHEN t.id IS NULL THEN ${stages ? "NULL" : "'insert'"}
      WHEN t.deleted_at IS NOT NULL OR t.item IS DISTINCT FROM b.item THEN 'update' END AS change
  FROM batch b LEFT JOIN ${table} t ON t.id = b.id
)`,
  ];
}

/**
 * Ending a cycle: the rows it did not see (neither in the batch nor kept), the guard on their count; once it passed
 * (`gated`), what it staged inserted (not what the batch writes: newer), the stage cleared, the unseen removed or marked.
 */
function cycleEndSteps(table: string, shape: Shape, gated: string): string[] {
  const [ends, { cycle, at }] = [shape.ends!, shape]; // asked only at a cycle's end
  const change = ends.deletes === "remove"
    ? `DELETE FROM ${table} t USING gone g`
    : `UPDATE ${table} t SET deleted_at = ${at} FROM gone g`;
  return [
    `gone AS (
  SELECT t.id FROM ${table} t
  WHERE t.deleted_at IS NULL AND ${unseenIn("t", "$1::text", cycle)}
    AND NOT EXISTS (SELECT 1 FROM batch b WHERE b.id = t.id)
    AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.id = t.id)
)`,
    // Each count in FROM, so each is taken once (in the select list, one the guard uses twice would be taken twice).
    `guard AS (
  SELECT u.n AS unseen, l.n + i.n AS live,
    ${ends.maxDeletes} < 1 AND u.n > 0 AND
      u.n > floor(${ends.maxDeletes} * greatest(l.n + i.n, ${ends.largest}) * ${LENIENT}::float8) - ${ends.deleted} AS refused
  FROM (SELECT count(*) AS n FROM gone) AS u,
    (SELECT count(*) AS n FROM ${table} WHERE deleted_at IS NULL) AS l,
    (SELECT count(*) AS n FROM kinds WHERE change = 'insert') AS i
)`,
    `applied AS (
  INSERT INTO ${table} AS t (id, item, deleted_at, ${KEY})
  SELECT s.id, s.item, NULL, s.${KEY} FROM ${kit.STAGE_TABLE} s
  WHERE s.target = $1::text AND s.cycle = ${cycle}
    AND NOT EXISTS (SELECT 1 FROM batch b WHERE b.id = s.id)${gated}
  ON CONFLICT (id) DO NOTHING
  RETURNING id, item
)`,
    `cleared AS (
  DELETE FROM ${kit.STAGE_TABLE} WHERE target = $1::text AND cycle <= ${cycle}${gated}
  RETURNING 1
)`,
    `forgot AS (
  DELETE FROM ${kit.SEEN_TABLE} WHERE target = $1::text AND cycle <= ${cycle}${gated}
  RETURNING 1
)`,
    `removed AS (
  ${change} WHERE t.id = g.id${gated}
  RETURNING 1
)`,
  ];
}

/** Each insert, update and (ending a cycle) delete as a row of the change table. */
function changesStep({ changes, ends, at }: Shape, gated: string): string {
  const cycle = ends
    ? ` UNION ALL SELECT 1, 0, id, 'insert', item FROM applied
    UNION ALL SELECT 2, 0, id, 'delete', NULL FROM gone`
    : "";
  return `recorded AS (
  INSERT INTO ${changes} (id, change, at, item)
  SELECT id, change, ${at}, item FROM (
    SELECT 0 AS part, ord, id, change, item FROM kinds WHERE change IS NOT NULL${cycle}
  ) AS c ${gated}
  ORDER BY part, ord, id
  RETURNING 1
)`;
}

/** The checkpoint saved with the row count and the last row's fingerprint. */
function savedStep(table: string, shape: Shape, gated: string): string {
  const ends = shape.ends?.deletes;
  const written = shape.stages ? ` WHERE ${held(table)}` : "";
  const before = (column: string) =>
    `(SELECT ${column} FROM ${kit.CHECKPOINT_TABLE} WHERE target = $1::text)`;
  const lastBefore = before("last");
  const applied = ends === undefined ? "" : " + (SELECT count(*) FROM applied)";
  const gone = ends === "remove" ? " - (SELECT count(*) FROM gone)" : "";
  const fingerprint = fingerprintOf("b.item");
  const keptLast = ends === undefined ? lastBefore : `(SELECT l.last
    FROM (SELECT ${lastBefore} AS last) AS l
    WHERE NOT EXISTS (SELECT 1 FROM gone g WHERE g.id = substr(l.last, strpos(l.last, ':') + 1)))`;
  return `saved AS (
  INSERT INTO ${kit.CHECKPOINT_TABLE} AS c (target, checkpoint, keyed, rows, last)
  SELECT $1::text, $3::text, $3::text,
    coalesce(${before("rows")}, (SELECT count(*) FROM ${table}))
      + (SELECT count(*) FROM kinds WHERE change = 'insert')${applied}${gone},
    coalesce(
      (SELECT ${fingerprint} || ':' || b.id FROM batch b${written} ORDER BY b.ord DESC LIMIT 1),
      ${keptLast})
  ${gated}
  ON CONFLICT (target) DO UPDATE SET checkpoint = excluded.checkpoint, keyed = excluded.keyed, rows = excluded.rows,
    last = excluded.last
  RETURNING 1
)`;
}

/** The statement's one answer row, every column text. */
function answerSelect(shape: Shape): string {
  const ends = shape.ends !== undefined;
  const leased = shape.owner === undefined
    ? "'1'"
    : "(SELECT count(*) FROM lease)::text";
  const applied = ends ? " + (SELECT count(*) FROM applied)" : "";
  return `SELECT ${leased} AS leased,
  ${ends ? "(SELECT refused FROM guard)::text" : "'false'"} AS refused,
  ${ends ? "(SELECT unseen FROM guard)::text" : "'0'"} AS unseen,
  ${ends ? "(SELECT live FROM guard)::text" : "'0'"} AS live,
  (SELECT count(*) FROM saved)::text AS saved,
  ((SELECT count(*) FROM written) + (SELECT count(*) FROM kinds WHERE same))::text AS written,
  ${shape.stages ? "(SELECT count(*) FROM staged)" : "0"}::text AS staged,
  ((SELECT count(*) FROM kinds WHERE change = 'insert')${applied})::text AS inserted,
  (SELECT count(*) FROM kinds WHERE change = 'update')::text AS updated,
  ${ends ? "(SELECT count(*) FROM removed)::text" : "'0'"} AS deleted`;
}
