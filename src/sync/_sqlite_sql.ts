// Internal: the SQLite dialect's statements: what a copy holds, its tables, and batches (each a savepoint, `Commits`).

import type { DatabaseSync, StatementSync } from "node:sqlite";
import { guardCycleEnd } from "./_deletes.ts";
import { fileError, fingerprint } from "./_files.ts";
import { sinkMismatch, SyncError } from "./sync_error.ts";
import { tried } from "../core/_check.ts";
import * as kit from "./_sql_sink.ts";

/** Rows per INSERT: 300 parameters, far below SQLite's limit. */
const ROWS = 100;

/** The columns of `table` (or a quoted name), none if it does not exist: each `name TYPE`, then ` KEY` for the key's. */
export function columnsOf(db: DatabaseSync, table: string): string[] {
  const sql =
    "SELECT lower(name) || ' ' || upper(type) || iif(pk, ' KEY', '') AS c FROM pragma_table_info(?) ORDER BY cid";
  const found = db.prepare(sql).all(table.replaceAll('"', ""));
  return found.map((row) => `${row.c}`);
}

/** Whether `table` and its change table exist, and why either is not this sink's (`foreign`), if one is not. Reads only. */
function tablesOf(db: DatabaseSync, table: string) {
  // Keyed by id TEXT alone, item TEXT, deleted_at TEXT if any (0.3 lacked it); other columns may be yours.
  const items = columnsOf(db, table);
  const fixed = items.filter((c) => / KEY$|^(deleted_at|item) /.test(c));
  const ours = /^(deleted_at TEXT, )?id TEXT KEY, item TEXT$/;
  // None, or a change table the sink made, with any columns a consumer added after `item`.
  const made =
    /^(seq INTEGER KEY, id TEXT, change TEXT, at TEXT, item TEXT(, .*)?)?$/;
  const changes = kit.changeTableOf(table);
  const found = columnsOf(db, changes).join(", ");
  const foreign = items.length > 0 && !ours.test(fixed.sort().join(", "))
    ? "its columns are not id (TEXT PRIMARY KEY), item and deleted_at (TEXT): it was not made by this sink"
    : made.test(found)
    ? undefined
    : `${changes} is not a change table this sink made (${found})`;
  return { items: items.length > 0, foreign };
}

/** Reads what `table` and its checkpoint hold, creating nothing: a table of items or changes it did not make is foreign. */
export function readCopy(db: DatabaseSync, table: string, target: string) {
  const { foreign, items } = tablesOf(db, table);
  if (foreign !== undefined) return { checkpoint: undefined, rows: 0, foreign };
  const count = `SELECT count(*) AS n FROM ${table}`;
  const rows = items ? Number(db.prepare(count).get()!.n) : 0;
  const checkpoints = columnsOf(db, kit.CHECKPOINT_TABLE);
  if (checkpoints.length === 0) return { checkpoint: undefined, rows };
  const meta = checkpoints.includes("rows INTEGER")
    ? ", rows AS recorded, last"
    : "";
  const found = db.prepare(
    `SELECT target, checkpoint${meta} FROM ${kit.CHECKPOINT_TABLE} WHERE lower(target) = ?`,
  ).all(target) as (Omit<kit.CopyState, "rows"> & { target: string })[];
  const own = found.find((row) => row.target === target) ?? found[0];
  const last = own?.last ?? null;
  const item = last === null ? undefined : db.prepare(
    `SELECT item FROM ${table} WHERE id = ?`,
  ).get(last.slice(last.indexOf(":") + 1)) as { item: string } | undefined;
  return {
    checkpoint: own?.checkpoint,
    rows,
    recorded: own?.recorded,
    last,
    found: item === undefined ? undefined : fingerprint(item.item),
    foreign: found.length > 1
      ? "checkpoints for several spellings of its name share it (SQLite folds case)"
      : undefined,
  };
}

/** Creates the tables (and the columns earlier versions lacked). */
function createTables(db: DatabaseSync, table: string): void {
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, item TEXT NOT NULL, deleted_at TEXT);
    CREATE TABLE IF NOT EXISTS ${kit.CHECKPOINT_TABLE} (target TEXT PRIMARY KEY, checkpoint TEXT NOT NULL, rows INTEGER, last TEXT);
    CREATE TABLE IF NOT EXISTS ${kit.SEEN_TABLE} (target TEXT NOT NULL, cycle INTEGER NOT NULL, id TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS ${kit.LEASE_TABLE} (target TEXT PRIMARY KEY, owner TEXT NOT NULL, refreshed_at INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS ${kit.STAGE_TABLE} (target TEXT NOT NULL, cycle INTEGER NOT NULL, id TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY (target, id))`,
  );
  // 0.3's tables had none of these, 0.4's no key (_sqlite_keys.ts keys their rows); the guard reads ranges by the indexes.
  addColumn(db, kit.CHECKPOINT_TABLE, "rows INTEGER");
  addColumn(db, kit.CHECKPOINT_TABLE, "last TEXT");
  addColumn(db, kit.CHECKPOINT_TABLE, "keyed TEXT"); // the checkpoint a keying version saved last (`keyedCopy`)
  addColumn(db, table, "deleted_at TEXT");
  addColumn(db, table, "partner_api_key TEXT");
  const index = `${table.slice(0, -1)}_partner_api_key"`; // quoted as the table
  db.exec(
    `CREATE INDEX IF NOT EXISTS ${index} ON ${table} (partner_api_key) WHERE deleted_at IS NULL;
    CREATE INDEX IF NOT EXISTS ${kit.SEEN_TABLE}_ids ON ${kit.SEEN_TABLE} (target, cycle, id)`,
  );
}

/** Adds `column` (`name TYPE`) to `table` unless it has it. */
function addColumn(db: DatabaseSync, table: string, column: string): void {
  const has = () => columnsOf(db, table).includes(column);
  if (has()) return;
  try {
    db.exec(`ALTER TABLE ${table} ADD COLUMN ${column}`);
  } catch (error) {
    // Another run looked too, before this lease, and added it first.
    if (!has()) throw error;
  }
}

/** The lease's ?5, ?6 (?3 the run's now, ?4 the stale bound): as a run last saw it, when its steady clock judged it stale. */
const LEASE_SEEN = { owner: "?5", refreshedAt: "?6" };

/** Creates the tables if need be; the statements. */
export function statements(db: DatabaseSync, table: string) {
  createTables(db, table);
  const q = (sql: string) => db.prepare(sql);
  const lease = kit.leaseSql((n) => `?${n}`, "?3", "?4", LEASE_SEEN);
  // What a cycle did not see: live rows whose id its log lacks.
  const log = `FROM ${kit.SEEN_TABLE} WHERE target = ?1 AND cycle = ?2`;
  const unseen =
    `FROM ${table} WHERE deleted_at IS NULL AND id NOT IN (SELECT id ${log})`;
  const staged = `FROM ${kit.STAGE_TABLE} WHERE target = ?1 AND cycle = ?2`;
  const upTo = "WHERE target = ? AND cycle <= ?"; // a cycle and those before
  return {
    upsert: upserts(q, table),
    lastRowid: q(`SELECT max(rowid) AS at FROM ${table}`),
    isLive: q(`SELECT 1 FROM ${table} WHERE id = ? AND deleted_at IS NULL`),
    live: q(`SELECT count(*) AS n FROM ${table} WHERE deleted_at IS NULL`),
    unseen: q(`SELECT count(*) AS n ${unseen}`),
    unseenIds: q(`SELECT id ${unseen} ORDER BY id`),
    remove: q(`DELETE ${unseen}`),
    mark: q(
      `UPDATE ${table} SET deleted_at = ?3 WHERE rowid IN (SELECT rowid ${unseen})`,
    ),
    // A batch's ids are appended to its cycle's log in written order (rewriting rows in random key order cost most of a sweep).
    seen: q(
      `INSERT INTO ${kit.SEEN_TABLE} (target, cycle, id) SELECT ?, ?, value FROM json_each(?)`,
    ),
    forget: q(`DELETE FROM ${kit.SEEN_TABLE} ${upTo}`),
    // The ids a batch holds that the table lacks: a sweep's are few or none (handing rows over costs most).
    lacking: q(
      `SELECT value AS id FROM json_each(?) WHERE NOT EXISTS (SELECT 1 FROM ${table} WHERE id = value)`,
    ),
    stage: q(
      `INSERT INTO ${kit.STAGE_TABLE} (target, cycle, id, item) SELECT ?1, ?2, value ->> 0, value ->> 1 FROM json_each(?3) WHERE true
      ON CONFLICT (target, id) DO UPDATE SET cycle = excluded.cycle, item = excluded.item`,
    ),
    // A staged id a later batch wrote (its date moved to the cycle's end, or past the copy's) holds a newer item.
    applyStaged: q(
      `INSERT INTO ${table} (id, item, deleted_at) SELECT id, item, NULL ${staged} ON CONFLICT (id) DO NOTHING`,
    ),
    // A cycle's stage, and what refused or given-up cycles left.
    clearStage: q(`DELETE FROM ${kit.STAGE_TABLE} ${upTo}`),
    // 0.3 kept a checkpoint per spelling of the table's name; one stays.
    dropOthers: q(
      `DELETE FROM ${kit.CHECKPOINT_TABLE} WHERE lower(target) = ?1 AND target <> ?1`,
    ),
    save: q(
      `INSERT INTO ${kit.CHECKPOINT_TABLE} (target, checkpoint, rows, last, keyed) VALUES (?1, ?2, ?3, ?4, ?2)
      ON CONFLICT (target) DO UPDATE SET checkpoint = excluded.checkpoint, rows = excluded.rows, last = excluded.last,
      keyed = excluded.keyed`,
    ),
    take: q(lease.take),
    refresh: q(lease.refresh),
    release: q(lease.release),
    holder: q(
      `SELECT owner, refreshed_at AS refreshedAt FROM ${kit.LEASE_TABLE} WHERE target = ?`,
    ),
  };
}

/**
 * The upserts of ROWS rows and of one, without and with written rows returned (a change table's: returning costs a
 * write). Only a new, changed or marked row is written (not one 0.4 wrote, for its key: `keyedCopy` keys those).
 */
function upserts(q: (sql: string) => StatementSync, table: string) {
  return [ROWS, 1].flatMap((rows) =>
    ["", " RETURNING id, rowid AS at"].map((back) =>
      q(`INSERT INTO ${table} (id, item, partner_api_key) VALUES ${
        Array(rows).fill("(?, ?, ?)").join(", ")
      } ON CONFLICT (id) DO UPDATE SET item = excluded.item, deleted_at = NULL, partner_api_key = excluded.partner_api_key
      WHERE item IS NOT excluded.item OR deleted_at IS NOT NULL${back}`)
    )
  );
}

/** The prepared statements of a copy whose tables exist. */
export type Statements = ReturnType<typeof statements>;

/** The change table of `table` and its inserts; made (in a batch) with an insert of each live row, dated `at`. */
export function changeTable(db: DatabaseSync, table: string, at: string) {
  const changes = kit.changeTableOf(table);
  const insert = `INSERT INTO ${changes} (id, change, at, item)`;
  if (columnsOf(db, changes).length === 0) { // `at`: an ISO time, no quote in it
    db.exec(
      `CREATE TABLE ${changes} (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, change TEXT NOT NULL CHECK (${kit.CHANGE_KINDS}), at TEXT NOT NULL, item TEXT);
      ${insert} SELECT id, 'insert', '${at}', item FROM ${table} WHERE deleted_at IS NULL ORDER BY id`,
    );
  }
  return {
    record: db.prepare(`${insert} VALUES (?, ?, ?, ?)`),
    staged: db.prepare(
      `${insert} SELECT id, 'insert', ?3, item FROM ${kit.STAGE_TABLE} s WHERE target = ?1 AND cycle = ?2
      AND NOT EXISTS (SELECT 1 FROM ${table} t WHERE t.id = s.id) ORDER BY id`,
    ),
  };
}

export type ChangeStatements = ReturnType<typeof changeTable>;

/** Where a batch goes: the statements, the copy, the time, the change table. */
interface Place {
  readonly st: Statements;
  readonly target: string;
  readonly what: string;
  readonly at: string;
  readonly changes: ChangeStatements | undefined;
}

/** A sweep's batch before its cycle ends: items the table holds are written now, the others staged until the guard passes. */
export function split(st: Statements, { rows, context }: kit.SqlBatch) {
  const { ids, texts, keys } = rows;
  const stages = context?.phase === "sweep" && !context.endsCycle &&
    ids.length > 0;
  const lacking = new Set(
    stages ? st.lacking.all(JSON.stringify(ids)).map((row) => row.id) : [],
  );
  const part = (keep: boolean) => {
    const at = ids.flatMap((id, i) => lacking.has(id) !== keep ? [i] : []);
    const pick = <V>(all: readonly V[]) => at.map((i) => all[i]!);
    return { ids: pick(ids), texts: pick(texts), keys: pick(keys) };
  };
  return { rows: part(true), staged: part(false) };
}

/**
 * Inside a transaction: upserts a batch (a sweep's new items `staged`), logs it seen, records its changes, ends a cycle
 * (`endCycle`), saves the checkpoint with the row count and last row. @throws {SyncError} (`"too-many-deletes"`)
 */
export function applyBatch(
  place: Place,
  write: kit.SqlBatch & { staged: kit.Rows },
) {
  const { st, target, changes } = place;
  const { rows: batch, staged, context, copy } = write;
  const record = changes?.record;
  const cycle = context?.cycle ?? 0;
  const kinds = upsertAll(st, batch, record !== undefined);
  if (staged.ids.length > 0) {
    const pairs = staged.ids.map((id, i) => [id, staged.texts[i]]);
    st.stage.run(target, cycle, JSON.stringify(pairs));
  }
  // Logged only in a cycle or at its end: a cycle after a first read or a head between cycles reads the whole copy.
  const seen = [...batch.ids, ...staged.ids, ...write.kept];
  const ends = context?.endsCycle;
  if (seen.length > 0 && (kit.inCycle(write) || ends !== undefined)) {
    st.seen.run(target, cycle, JSON.stringify(seen));
  }
  if (record !== undefined) {
    // Change rows carry the item: looked up only when the table is kept.
    const text = new Map(batch.ids.map((id, i) => [id, batch.texts[i]!]));
    const changes = { insert: kinds.inserted, update: kinds.updated };
    for (const [change, ids] of Object.entries(changes)) {
      for (const id of ids) record.run(id, change, place.at, text.get(id)!);
    }
  }
  const end = ends === undefined
    ? { deleted: 0, inserted: 0 }
    : endCycle(place, ends, cycle);
  const removed = ends?.deletes === "remove" ? end.deleted : 0;
  const inserted = kinds.added + end.inserted;
  const rows = copy.rows + inserted - removed;
  // The batch's last row, by fingerprint and id (none once the cycle's end removed or marked it).
  const lastText = batch.texts.at(-1);
  let last = lastText === undefined
    ? copy.last
    : `${fingerprint(lastText)}:${batch.ids.at(-1)}`;
  const lastId = last?.slice(last.indexOf(":") + 1);
  if (ends && lastId !== undefined && !st.isLive.get(lastId)) last = null;
  st.dropOthers.run(target);
  st.save.run(target, JSON.stringify(write.checkpoint), rows, last);
  return { ...end, rows, last, inserted, updated: kinds.changed };
}

/** A cycle's end, unless its unseen live rows break the guard: inserts what it staged, removes (or marks) the unseen. */
function endCycle(
  place: Place,
  ends: NonNullable<NonNullable<kit.SqlBatch["context"]>["endsCycle"]>,
  cycle: number,
) {
  const { st, target, at, changes } = place;
  const deleted = (st.unseen.get(target, cycle) as { n: number }).n;
  const held = (st.live.get() as { n: number }).n;
  guardCycleEnd(deleted, held, ends, place.what);
  changes?.staged.run(target, cycle, at);
  const inserted = Number(st.applyStaged.run(target, cycle).changes);
  st.clearStage.run(target, cycle);
  // Each statement over the unseen reads the whole table against the cycle's log: none runs when none is unseen.
  if (deleted > 0) {
    for (const { id } of changes ? st.unseenIds.all(target, cycle) : []) {
      changes?.record.run(id as string, "delete", at, null);
    }
    if (ends.deletes === "remove") st.remove.run(target, cycle);
    else st.mark.run(target, cycle, at);
  }
  st.forget.run(target, cycle);
  return { deleted, held, inserted };
}

/** Upserts ROWS rows a statement (one each cost twice), in key order; a written row above the rowid before is new. */
function upsertAll(st: Statements, rows: kit.Rows, named: boolean) {
  const { ids, texts, keys } = rows;
  const rowid = () => (st.lastRowid.get() as { at: number | null }).at ?? 0;
  const before = rowid();
  const kind = new Map<string, boolean>();
  let changed = 0;
  const order = ids.map((_, i) => i).sort((a, b) =>
    ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0
  );
  for (let i = 0; i < order.length;) {
    const n = i + ROWS <= order.length ? ROWS : 1;
    const part = order.slice(i, i += n);
    const values = part.flatMap((k) => [ids[k]!, texts[k]!, keys[k]!]);
    const statement = st.upsert[(n === ROWS ? 0 : 2) + (named ? 1 : 0)]!;
    if (!named) changed += Number(statement.run(...values).changes);
    for (const { id, at } of named ? statement.all(...values) : []) {
      kind.set(id as string, (at as number) > before);
      changed++;
    }
  }
  // Which rows were new or changed: named only with a change table.
  const inserted = ids.filter((id) => kind.get(id) === true);
  const updated = ids.filter((id) => kind.get(id) === false);
  const added = named ? inserted.length : rowid() - before;
  return { added, changed: changed - added, inserted, updated };
}

/** SQLite's messages for a file it cannot use (by message: what `exec` throws carries no result code). */
const FILE_FAILURE =
  /disk I\/O error|readonly database|unable to open database file|malformed|disk is full|not a database|permission denied/;

/** A failure of the database of `what` (a full disk, read-only, closed, locked; not a database: refused) as a SyncError. */
export function failureOf(
  db: DatabaseSync,
  what: string,
  file: string | undefined,
  error: unknown,
): unknown {
  const path = file ?? tried(() => db.location()) ?? undefined;
  const why = String((error as Error | null)?.message);
  const refused = (reason: "file" | "locked", message: string) =>
    new SyncError(`Cannot sync into ${what}: ${message}`, reason, path, {
      cause: error,
    });
  if (!db.isOpen) return refused("file", "its database is closed");
  if (/database is locked/.test(why)) {
    return refused(
      "locked",
      "another connection held the database's write lock past its busy timeout (a program of yours in a write transaction?); nothing more was written: run again once it ends",
    );
  }
  if (!FILE_FAILURE.test(why) || !path) return error;
  if (/not a database/.test(why)) return notSqlite(path);
  return fileError(path, "use", error);
}

/** Another file at `path`: a copy this sink did not make, as a JSONL file of other lines is. */
export const notSqlite = (path: string): SyncError =>
  sinkMismatch(path, "it is not a SQLite database", "sync into a new file");
