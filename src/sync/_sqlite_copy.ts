// Internal: the SQL of the SQLite sink, kept apart from its flow: reading a
// copy's state without changing it, the lease, and the batch's upsert.

import type { DatabaseSync, StatementSync } from "node:sqlite";
import {
  CHECKPOINT_TABLE,
  LEASE_TABLE,
  SEEN_TABLE,
  STAGE_TABLE,
} from "./_identifier.ts";

/** Rows per INSERT statement (200 parameters, far below SQLite's limit). */
const ROWS = 100;

/** What a copy holds, as read without changing anything. */
export interface CopyState {
  /** The checkpoint row's text, if there is one. */
  readonly checkpoint: string | undefined;
  /** Rows committed, and the last committed row's id and fingerprint, as recorded. */
  readonly recorded: { rows: number; last: string | null } | undefined;
  /** Rows now in the table (0 without one). */
  readonly rows: number;
  /** Checkpoint rows of other case spellings of the table (0.3 kept them apart). */
  readonly others: number;
}

/** Reads what `table` and its checkpoint hold, creating nothing. */
export function readCopy(
  db: DatabaseSync,
  table: string,
  target: string,
): CopyState {
  const exists = (name: string) =>
    db.prepare(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
    ).get(name) !== undefined;
  const rows = exists(unquoted(table))
    ? (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number })
      .n
    : 0;
  if (!exists(CHECKPOINT_TABLE)) {
    return { checkpoint: undefined, recorded: undefined, rows, others: 0 };
  }
  const hasMeta = db.prepare(
    `SELECT 1 FROM pragma_table_info('${CHECKPOINT_TABLE}') WHERE name = 'rows'`,
  ).get() !== undefined;
  const found = db.prepare(
    `SELECT target, checkpoint${
      hasMeta ? ", rows, last" : ""
    } FROM ${CHECKPOINT_TABLE} WHERE lower(target) = ?`,
  ).all(target) as {
    target: string;
    checkpoint: string;
    rows?: number | null;
    last?: string | null;
  }[];
  const own = found.find((row) => row.target === target) ?? found[0];
  return {
    checkpoint: own?.checkpoint,
    recorded: own?.rows === undefined || own.rows === null
      ? undefined
      : { rows: own.rows, last: own.last ?? null },
    rows,
    others: Math.max(0, found.length - 1),
  };
}

/** The item JSON stored under `id`, if any. */
export function itemText(
  db: DatabaseSync,
  table: string,
  id: string,
): string | undefined {
  const row = db.prepare(`SELECT item FROM ${table} WHERE id = ?`).get(id) as
    | { item: string }
    | undefined;
  return row?.item;
}

/** Creates the tables the sink needs (and the columns 0.3 lacked). */
export function createTables(db: DatabaseSync, table: string): void {
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, item TEXT NOT NULL, deleted_at TEXT);
    CREATE TABLE IF NOT EXISTS ${CHECKPOINT_TABLE} (target TEXT PRIMARY KEY, checkpoint TEXT NOT NULL, rows INTEGER, last TEXT);
    CREATE TABLE IF NOT EXISTS ${SEEN_TABLE} (target TEXT NOT NULL, cycle INTEGER NOT NULL, id TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS ${LEASE_TABLE} (target TEXT PRIMARY KEY, owner TEXT NOT NULL, refreshed_at INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS ${STAGE_TABLE} (target TEXT NOT NULL, cycle INTEGER NOT NULL, id TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY (target, id))`,
  );
  const hasMeta = db.prepare(
    `SELECT 1 FROM pragma_table_info('${CHECKPOINT_TABLE}') WHERE name = 'rows'`,
  ).get() !== undefined;
  if (!hasMeta) {
    db.exec(
      `ALTER TABLE ${CHECKPOINT_TABLE} ADD COLUMN rows INTEGER; ALTER TABLE ${CHECKPOINT_TABLE} ADD COLUMN last TEXT`,
    );
  }
  // 0.3's tables had no deleted_at.
  const hasDeletedAt = db.prepare(
    `SELECT 1 FROM pragma_table_info('${
      unquoted(table)
    }') WHERE name = 'deleted_at'`,
  ).get() !== undefined;
  if (!hasDeletedAt) {
    db.exec(`ALTER TABLE ${table} ADD COLUMN deleted_at TEXT`);
  }
}

/** The change table of `table`, created if missing. */
export function changeTable(db: DatabaseSync, table: string): string {
  const changes = `"${unquoted(table)}_changes"`;
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${changes} (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, change TEXT NOT NULL CHECK (change IN ('insert', 'update', 'delete')), at TEXT NOT NULL, item TEXT)`,
  );
  // Change tables before 0.4 had no item.
  const hasItem = db.prepare(
    `SELECT 1 FROM pragma_table_info('${
      changes.slice(1, -1)
    }') WHERE name = 'item'`,
  ).get() !== undefined;
  if (!hasItem) db.exec(`ALTER TABLE ${changes} ADD COLUMN item TEXT`);
  return changes;
}

/** The statements of a sink whose tables exist. */
export function statements(db: DatabaseSync, table: string) {
  return {
    ...writeStatements(db, table),
    ...cycleStatements(db, table),
    ...stageStatements(db, table),
    ...checkpointStatements(db),
    ...leaseStatements(db),
  };
}

/** A batch's upserts. */
function writeStatements(db: DatabaseSync, table: string) {
  // A row is written only when it is new, changed or marked (an unchanged
  // one dirties no page): one descent of the primary key per item, not a
  // look-up and then an upsert. A new row's rowid is above the largest
  // before the batch; a rewritten one keeps its own.
  const upsert = (rows: number, returning: string) =>
    db.prepare(
      `INSERT INTO ${table} (id, item, deleted_at) VALUES ${
        Array(rows).fill("(?, ?, NULL)").join(", ")
      } ON CONFLICT (id) DO UPDATE SET item = excluded.item, deleted_at = NULL
      WHERE item IS NOT excluded.item OR deleted_at IS NOT NULL${returning}`,
    );
  // Which rows were written, for a change table; without one, counts do
  // (returning the rows costs as much as writing them).
  const back = " RETURNING id, rowid AS at";
  return {
    many: upsert(ROWS, ""),
    one: upsert(1, ""),
    manyBack: upsert(ROWS, back),
    oneBack: upsert(1, back),
    lastRowid: db.prepare(`SELECT max(rowid) AS at FROM ${table}`),
    isLive: db.prepare(
      `SELECT 1 FROM ${table} WHERE id = ? AND deleted_at IS NULL`,
    ),
  };
}

/** A sweep cycle's log of seen ids, and what its end removes or marks. */
function cycleStatements(db: DatabaseSync, table: string) {
  const cycleLog =
    `(SELECT id FROM ${SEEN_TABLE} WHERE target = ?1 AND cycle = ?2)`;
  return {
    live: db.prepare(
      `SELECT count(*) AS n FROM ${table} WHERE deleted_at IS NULL`,
    ),
    // What a cycle did not see: live rows whose id its log lacks.
    unseen: db.prepare(
      `SELECT count(*) AS n FROM ${table} WHERE deleted_at IS NULL AND id NOT IN ${cycleLog}`,
    ),
    unseenIds: db.prepare(
      `SELECT id FROM ${table} WHERE deleted_at IS NULL AND id NOT IN ${cycleLog} ORDER BY id`,
    ),
    remove: db.prepare(
      `DELETE FROM ${table} WHERE deleted_at IS NULL AND id NOT IN ${cycleLog}`,
    ),
    mark: db.prepare(
      `UPDATE ${table} SET deleted_at = ?3 WHERE deleted_at IS NULL AND id NOT IN ${cycleLog}`,
    ),
    // Every id a batch holds is seen in its cycle: appended, in the order
    // written (rewriting rows in a random key order cost most of a sweep).
    seen: db.prepare(
      `INSERT INTO ${SEEN_TABLE} (target, cycle, id) SELECT ?, ?, value FROM json_each(?)`,
    ),
    forget: db.prepare(
      `DELETE FROM ${SEEN_TABLE} WHERE target = ? AND cycle <= ?`,
    ),
  };
}

/** The items a cycle found that the copy lacks, held until it completes. */
function stageStatements(db: DatabaseSync, table: string) {
  return {
    // Which of a batch's ids (a JSON array) the table holds.
    held: db.prepare(
      `SELECT id FROM ${table} WHERE id IN (SELECT value FROM json_each(?))`,
    ),
    stage: db.prepare(
      `INSERT INTO ${STAGE_TABLE} (target, cycle, id, item) SELECT ?1, ?2, value ->> 0, value ->> 1 FROM json_each(?3) WHERE true
      ON CONFLICT (target, id) DO UPDATE SET cycle = excluded.cycle, item = excluded.item`,
    ),
    stagedChanges: (changes: string) =>
      db.prepare(
        `INSERT INTO ${changes} (id, change, at, item) SELECT id, 'insert', ?3, item FROM ${STAGE_TABLE} WHERE target = ?1 AND cycle = ?2 ORDER BY id`,
      ),
    applyStaged: db.prepare(
      `INSERT INTO ${table} (id, item, deleted_at) SELECT id, item, NULL FROM ${STAGE_TABLE} WHERE target = ?1 AND cycle = ?2
      ON CONFLICT (id) DO UPDATE SET item = excluded.item, deleted_at = NULL`,
    ),
    // A cycle's stage, and what refused or given-up cycles left.
    clearStage: db.prepare(
      `DELETE FROM ${STAGE_TABLE} WHERE target = ? AND cycle <= ?`,
    ),
  };
}

/** The checkpoint beside the copy. */
function checkpointStatements(db: DatabaseSync) {
  return {
    save: db.prepare(
      `INSERT INTO ${CHECKPOINT_TABLE} (target, checkpoint, rows, last) VALUES (?, ?, ?, ?)
      ON CONFLICT (target) DO UPDATE SET checkpoint = excluded.checkpoint, rows = excluded.rows, last = excluded.last`,
    ),
    // 0.3 kept a checkpoint per spelling of the table's name; one stays.
    dropOthers: db.prepare(
      `DELETE FROM ${CHECKPOINT_TABLE} WHERE lower(target) = ? AND target <> ?`,
    ),
  };
}

/** The lease that keeps one writer per copy. */
function leaseStatements(db: DatabaseSync) {
  return {
    take: db.prepare(
      `INSERT INTO ${LEASE_TABLE} (target, owner, refreshed_at) VALUES (?1, ?2, ?3)
      ON CONFLICT (target) DO UPDATE SET owner = excluded.owner, refreshed_at = excluded.refreshed_at
      WHERE ${LEASE_TABLE}.owner = excluded.owner OR ${LEASE_TABLE}.refreshed_at < ?4
      RETURNING owner`,
    ),
    holder: db.prepare(
      `SELECT owner, refreshed_at FROM ${LEASE_TABLE} WHERE target = ?`,
    ),
    refresh: db.prepare(
      `UPDATE ${LEASE_TABLE} SET refreshed_at = ? WHERE target = ? AND owner = ?`,
    ),
    release: db.prepare(
      `DELETE FROM ${LEASE_TABLE} WHERE target = ? AND owner = ?`,
    ),
  };
}

/** What a batch did: rows new to the table, inserts, updates (marked rows back included). */
export interface Written {
  added: number;
  inserted: number;
  updated: number;
  /** The ids inserted and updated, in the batch's order, when asked for. */
  ids?: { inserted: string[]; updated: string[] };
}

/**
 * Upserts the items ROWS at a time (one statement per row costs twice as
 * much). A row above the rowid that was largest before is new (an
 * insert); any other written one, a marked row back from the dead
 * included, is an update (it was a row of the copy); rows not written were
 * unchanged.
 */
export function upsertAll(
  st: ReturnType<typeof statements>,
  texts: readonly string[],
  ids: readonly string[],
  named: boolean,
): Written {
  const before = lastRowid(st);
  const rows: { id: string; at: number }[] = [];
  let changed = 0;
  const send = (statement: StatementSync, values: string[]) => {
    if (!named) {
      return void (changed += Number(statement.run(...values).changes));
    }
    for (const row of statement.all(...values)) {
      rows.push(row as { id: string; at: number });
    }
  };
  // In key order: each descent of the index starts near the last one.
  const order = ids.map((_, i) => i).sort((a, b) =>
    ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0
  );
  let i = 0;
  for (; i + ROWS <= order.length; i += ROWS) {
    const values: string[] = [];
    for (let j = i; j < i + ROWS; j++) {
      values.push(ids[order[j]!]!, texts[order[j]!]!);
    }
    send(named ? st.manyBack : st.many, values);
  }
  for (; i < order.length; i++) {
    send(named ? st.oneBack : st.one, [ids[order[i]!]!, texts[order[i]!]!]);
  }
  if (named) return classify(rows, ids, before);
  const added = lastRowid(st) - before;
  return { added, inserted: added, updated: changed - added };
}

function lastRowid(st: ReturnType<typeof statements>): number {
  return (st.lastRowid.get() as { at: number | null }).at ?? 0;
}

/** The rows a batch wrote, told apart by rowid, with their ids. */
function classify(
  written: readonly { id: string; at: number }[],
  ids: readonly string[],
  before: number,
): Written {
  const kind = new Map<string, "new" | "update">();
  for (const row of written) {
    kind.set(row.id, row.at > before ? "new" : "update");
  }
  const inserted: string[] = [], updated: string[] = [];
  let added = 0;
  for (const id of ids) {
    const k = kind.get(id);
    if (k === "new") added++;
    if (k === "new") inserted.push(id);
    else if (k !== undefined) updated.push(id);
  }
  return {
    added,
    inserted: inserted.length,
    updated: updated.length,
    ids: { inserted, updated },
  };
}

function unquoted(table: string): string {
  return table.slice(1, -1);
}
