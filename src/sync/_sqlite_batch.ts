// Internal: what the SQLite sink does inside its transaction, and what it
// checks before: a batch applied (seen, changed, removed at a cycle's end),
// a copy judged against what was recorded, and a batch made storable.

import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { SyncCheckpoint, SyncWriteContext } from "./sink.ts";
import { isCheckpoint, parsedJson } from "./_checkpoint.ts";
import { tooMany, tooManyDeletes } from "./_deletes.ts";
import { fingerprint } from "./_files.ts";
import { type CopyState, type statements, upsertAll } from "./_sqlite_copy.ts";
import { SyncError } from "./sync_error.ts";

/** The prepared statements of a sink. */
export type Statements = ReturnType<typeof statements>;

/** A batch as the SQLite sink applies it. */
export interface SqliteBatch {
  /** The items written to the table now. */
  readonly batch: Stored;
  /** A sweep's items the table lacks: held until the cycle completes. */
  readonly staged: Stored;
  readonly checkpoint: SyncCheckpoint;
  readonly context: SyncWriteContext | undefined;
  /** The change table (quoted), when kept. */
  readonly changes: string | undefined;
}

/**
 * Upserts a batch (a sweep's new items staged), seen in its cycle, and
 * records its changes with the items as written; when it ends a cycle,
 * judges the guard (a refusal rolls the batch back), inserts what the
 * cycle staged, removes (or marks) the rows it did not see; saves the
 * checkpoint. Inside the caller's transaction.
 *
 * @throws {SyncError} (`"too-many-deletes"`)
 */
export function applyBatch(
  db: DatabaseSync,
  st: Statements,
  written: SqliteBatch,
  where: { state: Checked; what: string; target: string; at: string },
) {
  const { batch, staged, checkpoint, context, changes } = written;
  const { state, what, target, at } = where;
  const cycle = context?.cycle ?? 0;
  const kinds = upsertAll(st, batch.texts, batch.ids, changes !== undefined);
  if (staged.ids.length > 0) {
    const pairs = staged.ids.map((id, i) => [id, staged.texts[i]]);
    st.stage.run(target, cycle, JSON.stringify(pairs));
  }
  const seen = [...batch.ids, ...staged.ids];
  if (seen.length > 0 && logsSeen(checkpoint, context)) {
    st.seen.run(target, cycle, JSON.stringify(seen));
  }
  const record = changes === undefined ? undefined : db.prepare(
    `INSERT INTO ${changes} (id, change, at, item) VALUES (?, ?, ?, ?)`,
  );
  if (record !== undefined) {
    const text = new Map(batch.ids.map((id, i) => [id, batch.texts[i]!]));
    const { inserted = [], updated = [] } = kinds.ids ?? {};
    for (const id of inserted) record.run(id, "insert", at, text.get(id)!);
    for (const id of updated) record.run(id, "update", at, text.get(id)!);
  }
  const rows = state.rows + kinds.added;
  const last = batch.last ?? state.last;
  const ends = context?.endsCycle;
  const end = ends === undefined
    ? { deleted: 0, inserted: 0, held: undefined, rows, last }
    : endCycle(
      st,
      ends,
      { cycle, target, what, at, record, changes },
      rows,
      last,
    );
  st.dropOthers.run(target, target);
  st.save.run(target, JSON.stringify(checkpoint), end.rows, end.last);
  return {
    ...end,
    inserted: kinds.inserted + end.inserted,
    updated: kinds.updated,
  };
}

/**
 * A cycle's end: the live rows its log lacks are removed (or marked), and
 * recorded as deletes, unless that is more than `maxDeletes` of the copy;
 * its log is dropped. The rows left, and the last committed row (null if
 * it went).
 *
 * @throws {SyncError} (`"too-many-deletes"`)
 */
function endCycle(
  st: Statements,
  ends: NonNullable<SyncWriteContext["endsCycle"]>,
  at: {
    cycle: number;
    target: string;
    what: string;
    at: string;
    record: StatementSync | undefined;
    changes: string | undefined;
  },
  rows: number,
  last: string | null,
) {
  const { cycle, target, record } = at;
  const deleted = (st.unseen.get(target, cycle) as { n: number }).n;
  const held = (st.live.get() as { n: number }).n;
  if (tooMany(deleted, held, ends.maxDeletes, ends.recent)) {
    throw tooManyDeletes(deleted, held, ends.maxDeletes, at.what, ends.recent);
  }
  if (at.changes !== undefined) {
    st.stagedChanges(at.changes).run(target, cycle, at.at);
  }
  const inserted = Number(st.applyStaged.run(target, cycle).changes);
  st.clearStage.run(target, cycle);
  const unseen = record === undefined ? [] : st.unseenIds.all(target, cycle);
  for (const row of unseen) {
    record?.run((row as { id: string }).id, "delete", at.at, null);
  }
  if (ends.deletes === "remove") st.remove.run(target, cycle);
  else st.mark.run(target, cycle, at.at);
  st.forget.run(target, cycle);
  const lastId = last?.slice(last.indexOf(":") + 1);
  const gone = lastId !== undefined && st.isLive.get(lastId) === undefined;
  return {
    deleted,
    held,
    inserted,
    rows: (ends.deletes === "remove" ? rows - deleted : rows) + inserted,
    last: gone ? null : last,
  };
}

/**
 * Whether a batch's ids go to its cycle's log: only while a cycle is under
 * way (the checkpoint has a sweep cursor) or when the batch ends one. A
 * first read, or a head between cycles, is followed by a cycle that reads
 * the whole copy again, and judges rows by its own log alone.
 */
export function logsSeen(
  checkpoint: SyncCheckpoint,
  context: SyncWriteContext | undefined,
): boolean {
  return checkpoint.sweep !== undefined || context?.endsCycle !== undefined;
}

/** A copy that passed its checks: its checkpoint, rows and last row, as recorded. */
export interface Checked {
  readonly checkpoint: SyncCheckpoint | undefined;
  readonly rows: number;
  readonly last: string | null;
}

/**
 * Judges what the copy holds against what was recorded.
 *
 * @throws {SyncError} (`"sink-mismatch"`)
 */
export async function judgeCopy(
  state: CopyState,
  what: string,
  itemOf: (id: string) => string | undefined,
): Promise<Checked> {
  const refuse = (why: string) =>
    new SyncError(
      `Cannot sync into ${what}: ${why}. Nothing was changed: sync into another table or database file`,
      "sink-mismatch",
      what,
    );
  if (state.checkpoint === undefined) {
    if (state.rows > 0) {
      throw refuse(
        `it holds ${state.rows} rows that no checkpoint covers: it was not written by a sync`,
      );
    }
    return { checkpoint: undefined, rows: 0, last: null };
  }
  if (state.others > 0) {
    throw refuse(
      "checkpoints for several spellings of its name share it (SQLite folds case)",
    );
  }
  const checkpoint = parsedJson(state.checkpoint);
  if (!isCheckpoint(checkpoint)) {
    throw refuse("its checkpoint is damaged or from another version");
  }
  const recorded = state.recorded;
  // 0.3 recorded neither count nor last row: nothing more to compare.
  if (recorded === undefined) {
    return { checkpoint, rows: state.rows, last: null };
  }
  if (recorded.rows !== state.rows) {
    throw refuse(
      `it holds ${state.rows} rows, not the ${recorded.rows} committed`,
    );
  }
  if (recorded.last !== null) {
    const at = recorded.last.indexOf(":");
    const text = itemOf(recorded.last.slice(at + 1));
    const hash = text === undefined
      ? undefined
      : await fingerprint(new TextEncoder().encode(text));
    if (hash !== recorded.last.slice(0, at)) {
      throw refuse(
        "its last committed row is not the one recorded: the copy was changed",
      );
    }
  }
  return { checkpoint, rows: recorded.rows, last: recorded.last };
}

/** A batch as the table can hold it. */
export interface Stored {
  readonly texts: readonly string[];
  readonly ids: readonly string[];
  /** Ids left out: the table cannot key them. */
  readonly skipped: readonly string[];
  /** The last row's fingerprint and id. */
  readonly last: string | undefined;
}

/**
 * The batch as the table can hold it: each id once (its last occurrence),
 * ids that are not well-formed Unicode left out (SQLite would store them
 * as U+FFFD, and two would collide); the last row's fingerprint.
 */
export async function storable<T>(
  items: readonly T[],
  ids: readonly string[],
): Promise<Stored> {
  const at = new Map<string, number>();
  const skipped: string[] = [];
  ids.forEach((id, i) => {
    if (id.isWellFormed()) at.set(id, i);
    else skipped.push(id);
  });
  const order = [...at.values()].sort((a, b) => a - b);
  const texts = order.map((i) => JSON.stringify(items[i]));
  const keys = order.map((i) => ids[i]!);
  return { texts, ids: keys, skipped, last: await lastRow(texts, keys) };
}

/** The fingerprint and id of the last of `texts`, what the checkpoint records. */
export async function lastRow(
  texts: readonly string[],
  ids: readonly string[],
): Promise<string | undefined> {
  const text = texts.at(-1);
  if (text === undefined) return undefined;
  return `${await fingerprint(new TextEncoder().encode(text))}:${ids.at(-1)}`;
}
