// Internal: the SQL of the SQLite sink, kept apart from its flow: reading a
// copy's state without changing it, the lease, and the batch's upsert.

import type { DatabaseSync, StatementSync } from "node:sqlite";
import { CHECKPOINT_TABLE, LEASE_TABLE, SEEN_TABLE } from "./_identifier.ts";

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
    CREATE TABLE IF NOT EXISTS ${LEASE_TABLE} (target TEXT PRIMARY KEY, owner TEXT NOT NULL, refreshed_at INTEGER NOT NULL)`,
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
    `CREATE TABLE IF NOT EXISTS ${changes} (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, change TEXT NOT NULL CHECK (change IN ('insert', 'update', 'delete')), at TEXT NOT NULL)`,
  );
  return changes;
}

/** The statements of a sink whose tables exist. */
export function statements(db: DatabaseSync, table: string) {
  const cycleLog =
    `(SELECT id FROM ${SEEN_TABLE} WHERE target = ?1 AND cycle = ?2)`;
  const upsert = (rows: number) =>
    db.prepare(
      `INSERT INTO ${table} (id, item, deleted_at) VALUES ${
        Array(rows).fill("(?, ?, NULL)").join(", ")
      } ON CONFLICT (id) DO UPDATE SET item = excluded.item, deleted_at = NULL`,
    );
  return {
    many: upsert(ROWS),
    one: upsert(1),
    // The rows a batch's ids (a JSON array) already have.
    existing: db.prepare(
      `SELECT id, item, deleted_at FROM ${table} WHERE id IN (SELECT value FROM json_each(?))`,
    ),
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
    isLive: db.prepare(
      `SELECT 1 FROM ${table} WHERE id = ? AND deleted_at IS NULL`,
    ),
    save: db.prepare(
      `INSERT INTO ${CHECKPOINT_TABLE} (target, checkpoint, rows, last) VALUES (?, ?, ?, ?)
      ON CONFLICT (target) DO UPDATE SET checkpoint = excluded.checkpoint, rows = excluded.rows, last = excluded.last`,
    ),
    // 0.3 kept a checkpoint per spelling of the table's name; one stays.
    dropOthers: db.prepare(
      `DELETE FROM ${CHECKPOINT_TABLE} WHERE lower(target) = ? AND target <> ?`,
    ),
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

/** Upserts the items ROWS at a time: one statement per row costs twice as much. */
export function upsertAll(
  prepared: { many: StatementSync; one: StatementSync },
  texts: readonly string[],
  ids: readonly string[],
): void {
  let i = 0;
  for (; i + ROWS <= texts.length; i += ROWS) {
    const values: string[] = [];
    for (let j = i; j < i + ROWS; j++) values.push(ids[j]!, texts[j]!);
    prepared.many.run(...values);
  }
  for (; i < texts.length; i++) prepared.one.run(ids[i]!, texts[i]!);
}

/** What a batch does to each row: a new one, a changed one, or only seen again. */
export function classify(
  existing: readonly { id: string; item: string; deleted_at: string | null }[],
  texts: readonly string[],
  ids: readonly string[],
): {
  inserted: string[];
  updated: string[];
  added: number;
  /** Indexes of the items to write; the others are only seen again. */
  changed: number[];
  unchanged: string[];
} {
  const held = new Map(existing.map((row) => [row.id, row]));
  const inserted: string[] = [], updated: string[] = [];
  const changed: number[] = [], unchanged: string[] = [];
  let added = 0;
  ids.forEach((id, i) => {
    const row = held.get(id);
    if (row === undefined) added++;
    if (row === undefined || row.deleted_at !== null) inserted.push(id);
    else if (row.item !== texts[i]) updated.push(id);
    else return void unchanged.push(id);
    changed.push(i);
  });
  return { inserted, updated, added, changed, unchanged };
}

function unquoted(table: string): string {
  return table.slice(1, -1);
}
