// Internal: the SQL kit, one flow for every SQL sink: check the copy (reading only), take the lease, make each batch
// storable, let the dialect (SQLite, PostgreSQL: what its database says differently) apply it atomically, report.

import type { SyncCheckpoint, SyncSink, SyncWriteContext } from "./sink.ts";
import { requireKnownOptions, typeError } from "../core/_check.ts";
import { keepRefreshed } from "../core/_deadlines.ts";
import { isCheckpoint, parsedJson } from "./_checkpoint.ts";
import {
  checkLockWait,
  REFRESH_EVERY,
  runToken,
  waitForLock,
} from "./_lease.ts";
import { sinkMismatch } from "./sync_error.ts";
import {
  type KeyedCopy,
  type KeyRange,
  storedKey,
  type UnseenRow,
} from "./_key_text.ts";

/** The checkpoints of every synced table, next to them. */
export const CHECKPOINT_TABLE = "partner_api_sync";
/** Which run holds each synced table (one writer per copy). */
export const LEASE_TABLE = "partner_api_sync_lease";
/** A sweep cycle's items the copy lacks, per table, held until the cycle completes and its guard passes. */
export const STAGE_TABLE = "partner_api_sync_stage";
/** The ids each sweep cycle saw, per table: its unseen rows are the live rows it lacks (marking rows rewrote them all). */
export const SEEN_TABLE = "partner_api_sync_seen";
export const CHANGE_KINDS = "change IN ('insert', 'update', 'delete')";

/** A row as a dialect reads it. */
type Row = Readonly<Record<string, unknown>>;
/** A dialect's answer: at once (node:sqlite is synchronous) or later. */
type Answer<R> = R | Promise<R>;
/** What `unseenBetween` is asked: cycle, range, most, keyOf, signal. */
export type Ask = Parameters<KeyedCopy["unseenBetween"]>;

/** What a dialect supplies: its database's side of each step of the flow (what a step throws, the flow rejects with). */
export interface SqlDialect {
  /** `the table X`, in messages. */
  readonly what: string;
  /** What a user whose copy is refused does instead. */
  readonly instead: string;
  /** False when the copy can keep no change table (`changes: true` is then refused before any request). */
  readonly keepsChanges: boolean;
  /** The copy's state, read without changing anything (a wait for a lock stops at `signal`). */
  read(signal?: AbortSignal): Answer<CopyState>;
  /** Before a run's lease: the tables, created once the copy passed (its answer awaited, then dropped). */
  prepare(signal?: AbortSignal): Answer<unknown>;
  /** Takes the lease for `token` if free, its own or stale; else who holds it. */
  take(token: string): Answer<{ taken: string } | { holder: string }>;
  /** Once the lease is taken (and kept fresh): what must change before the run's first batch; a failure lets it go. */
  ready?(signal: AbortSignal | undefined): Answer<void>;
  /** Refreshes the lease while it is `token`'s. */
  refresh(token: string): Answer<unknown>;
  /** Drops the lease if it is still `token`'s. */
  release(token: string): Answer<void>;
  /** The item's text as the database holds it, or undefined when it cannot. */
  text(item: unknown, id: string): string | undefined;
  /** Whether a row of `id` may exist (its item skipped, the row stays as seen). */
  holds(id: string): boolean;
  /** Applies a batch atomically while `owner` holds the lease. @throws {SyncError} (`"lock-lost"`, `"too-many-deletes"`) */
  apply(batch: SqlBatch): Answer<Applied>;
  /** The unseen rows of a key range, from the key column's index (`KeyedCopy`); rows written before it keyed first. */
  unseenBetween(...ask: Ask): Answer<UnseenRow[]>;
  /** How many live rows the copy holds (with a key in `range`, if given: `KeyedCopy`'s). Reads only. */
  liveCount(range?: KeyRange): Answer<number>;
  /** The ids of `ids` the copy holds as live rows (or, with `cycle`, that cycle staged). Reads only. */
  liveOf(ids: readonly string[], cycle?: number): Answer<string[]>;
  /** What a step's failure becomes (SQLite: one of its file, a SyncError naming it); as it is without. */
  failure?(error: unknown): unknown;
}

/**
 * Throws the run's abort that came while a dialect awaited before sending `write`, unless the write holds only a
 * checkpoint (what an aborted run did): PostgreSQL sent a first batch after Ctrl-C, past its change table's round trip.
 */
export function stopIfAborted({ rows, context, signal }: SqlBatch): void {
  if (rows.ids.length > 0 || context?.endsCycle) signal?.throwIfAborted();
}

/** Whether a batch is written in a sweep cycle (under its cursor, or the sweep's own): its ids are logged seen. */
export const inCycle = ({ checkpoint, context }: SqlBatch): boolean =>
  checkpoint.sweep !== undefined || context?.phase === "sweep";

/** The sink the kit makes of a dialect, with `lockWait` as `sinkOptions` checked it. */
export function sqlSink<T>(
  dialect: SqlDialect,
  options: { lockWait: number; onLockWait?: (holder: string) => void },
): SyncSink<T> & KeyedCopy {
  let checked: Checked | undefined, owner: string | undefined;
  let signal: AbortSignal | undefined; // the run's, from lock()
  const check = async (signal?: AbortSignal) =>
    checked = judgeCopy(await dialect.read(signal), dialect);
  const failing =
    <A extends unknown[], R>(step: (...a: A) => Promise<R>) => (...a: A) =>
      step(...a).catch((error: unknown): never => {
        throw dialect.failure?.(error) ?? error;
      });
  return {
    keepsChanges: dialect.keepsChanges,
    load: failing(async () => (await check()).checkpoint),
    lock: failing(async (run: { signal?: AbortSignal } = {}) => {
      await check(run.signal);
      await dialect.prepare(run.signal);
      const token = runToken();
      owner = await waitForLock(dialect.what, {
        signal: run.signal,
        wait: options.lockWait,
        onWait: options.onLockWait,
      }, async () => await dialect.take(token));
      signal = run.signal;
      let refreshing: Promise<unknown> = Promise.resolve();
      const refresh = () =>
        refreshing = Promise.resolve().then(() => dialect.refresh(token));
      const stop = keepRefreshed(REFRESH_EVERY, refresh);
      const release = failing(async () => {
        stop();
        owner = signal = undefined;
        await refreshing.catch(() => {});
        await dialect.release(token);
      });
      await Promise.resolve(dialect.ready?.(run.signal)).catch(async (e) => {
        await release().catch(() => {});
        throw e;
      });
      return { [Symbol.asyncDispose]: release };
    }),
    write: failing(async (items, checkpoint, ids, context) => {
      const copy = checked ?? await check();
      const { rows, skipped, kept } = storable(items, ids, dialect, context);
      const batch = { rows, kept, checkpoint, context, owner, copy, signal };
      const done = await dialect.apply(batch);
      const { rows: count = 0, last = null, ...report } = done;
      checked = { checkpoint, rows: count, last };
      return { skippedIds: skipped, ...report };
    }),
    holds: failing(async (ids, _, cycle) =>
      new Set(await dialect.liveOf(ids, cycle))
    ),
    unseenBetween: failing(async (...ask) =>
      await dialect.unseenBetween(...ask)
    ),
    liveCount: failing(async (range) => await dialect.liveCount(range)),
  };
}

/** A sink's options, checked when it is made: the table name as SQL quotes it, and `lockWait` (its default applied). */
export function sinkOptions(
  options: { table?: unknown; lockWait?: unknown; now?: unknown } | undefined,
  names: readonly string[],
  context: string,
): { table: string; lockWait: number } {
  // First: a misspelt `tabel` is named as such, not taken for a missing table.
  requireKnownOptions(options, names, context);
  const table = options.table;
  if (
    typeof table !== "string" || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(table) ||
    /^partner_api_sync(_lease|_stage|_seen)?(_changes)?$/i.test(table) // the sink's own
  ) {
    throw typeError(
      context,
      "table",
      "must be a plain identifier (letters, digits, _; at most 63), not one of the sink's own (partner_api_sync, _lease, _stage, _seen)",
      typeof table === "string"
        ? JSON.stringify(table.slice(0, 80))
        : typeof table,
    );
  }
  return { table: `"${table}"`, lockWait: checkLockWait(options, context) };
}

/** Judges what the copy holds against what was recorded. @throws {SyncError} (`"sink-mismatch"`) */
function judgeCopy(
  state: CopyState,
  dialect: Pick<SqlDialect, "what" | "instead">,
): Checked {
  const refuse = (why: string) =>
    sinkMismatch(dialect.what, why, dialect.instead);
  if (state.foreign !== undefined) throw refuse(state.foreign);
  if (state.checkpoint == null) {
    const rows = state.rows === 1 ? "1 row" : `${state.rows} rows`;
    if (state.rows > 0) {
      throw refuse(
        `it holds ${rows} that no checkpoint covers: it was not made by a sync`,
      );
    }
    return { checkpoint: undefined, rows: 0, last: null };
  }
  const checkpoint = parsedJson(state.checkpoint);
  if (!isCheckpoint(checkpoint)) {
    throw refuse(
      typeof checkpoint === "string"
        ? "its checkpoint is a JSON string, as 0.3 stored it (and every item) through postgres.js: convert both (docs/sync.md, PostgreSQL)"
        : "its checkpoint is damaged or from another version",
    );
  }
  const { recorded, last = null } = state;
  // 0.3 recorded neither count nor last row: nothing more to compare.
  if (recorded == null) return { checkpoint, rows: state.rows, last: null };
  if (recorded !== state.rows) {
    throw refuse(`it holds ${state.rows} rows, not the ${recorded} committed`);
  }
  if (last !== null && state.found !== last.slice(0, last.indexOf(":"))) {
    throw refuse(
      "its last committed row is not the one recorded: the copy was changed",
    );
  }
  return { checkpoint, rows: recorded, last };
}

/**
 * The batch as the table holds it: each id once (its last); an id or text it cannot hold skipped, not stopping runs.
 * A skipped item is still in the list: its row (`kept`) stays as it was, seen, never removed or marked; so do `context.kept`'s.
 */
export function storable(
  items: readonly unknown[],
  ids: readonly string[],
  dialect: Pick<SqlDialect, "text" | "holds">,
  context?: Pick<SyncWriteContext, "keyOf" | "kept">,
): { rows: Rows; skipped: string[]; kept: string[] } {
  const at = new Map(ids.map((id, i) => [id, i])); // an id's last place
  const written: string[] = [], texts: string[] = [], skipped: string[] = [];
  const keys: (string | null)[] = [];
  for (const i of [...at.values()].sort((a, b) => a - b)) {
    const id = ids[i]!;
    const text = id.isWellFormed() ? dialect.text(items[i], id) : undefined;
    if (text === undefined) {
      skipped.push(id);
      continue;
    }
    written.push(id);
    texts.push(text);
    // Null without `keyOf` (a write outside a sync), for an item it cannot key, or a key too long to store.
    keys.push(context?.keyOf ? storedKey(context.keyOf, items[i]) : null);
  }
  const kept = skipped.filter((id) => id.isWellFormed() && dialect.holds(id));
  kept.push(...context?.kept ?? []);
  return { rows: { ids: written, texts, keys }, skipped, kept };
}

/** `make`'s promise, made once (from the first call's arguments), and again after it failed or a reset. */
export function once<A extends unknown[], R>(make: (...a: A) => Promise<R>) {
  let made: Promise<R> | undefined;
  return {
    get: (...a: A) =>
      made ??= make(...a).catch((error) => {
        made = undefined;
        throw error;
      }),
    reset: () => made = undefined,
  };
}

/**
 * The lease's statements in a dialect's placeholders (`p(1)` target, `p(2)` owner) and clock (`now`, `stale`): taken
 * if free, own or stale (answers the owner), or with `seen` still as the run saw it when it judged it stale.
 */
export function leaseSql(
  p: (n: number) => string,
  now: string,
  stale: string,
  seen?: { owner: string; refreshedAt: string },
): { take: string; refresh: string; release: string } {
  const [target, owner] = [p(1), p(2)];
  const where = `target = ${target} AND owner = ${owner}`;
  const unchanged = seen === undefined
    ? ""
    : ` OR (lease.owner = ${seen.owner} AND lease.refreshed_at = ${seen.refreshedAt})`;
  return {
    take:
      `INSERT INTO ${LEASE_TABLE} AS lease (target, owner, refreshed_at) VALUES (${target}, ${owner}, ${now})
  ON CONFLICT (target) DO UPDATE SET owner = excluded.owner, refreshed_at = excluded.refreshed_at
  WHERE lease.owner = excluded.owner OR lease.refreshed_at < ${stale}${unchanged} RETURNING owner`,
    refresh: `UPDATE ${LEASE_TABLE} SET refreshed_at = ${now} WHERE ${where}`,
    release: `DELETE FROM ${LEASE_TABLE} WHERE ${where}`,
  };
}

/** The first and last 16 keys with their items (`item` as text): `keysWrong` judges them. */
export const keyEndsSql = (table: string, item: string) =>
  ["", " DESC"].map((order, i) =>
    `SELECT * FROM (SELECT ${item} AS item, partner_api_key AS key FROM ${table} WHERE deleted_at IS NULL
    AND partner_api_key IS NOT NULL ORDER BY partner_api_key${order} LIMIT 16) AS e${i}`
  ).join(" UNION ALL ");

/**
 * Whether a key of `rows` (`keyEndsSql`'s) is not what `keyOf` makes of its item: an `id` function that changed, whose
 * keys all go (`unkeySql`) to be made again (a wrong key hides its row from a window's range).
 */
export const keysWrong = (rows: readonly Row[], keyOf: Ask[3]) =>
  rows.some((row) => storedKey(keyOf, JSON.parse(`${row.item}`)) !== row.key);

/**
 * Clears every key (only if SQL `when` holds): after `keysWrong`, or once another writer (0.4) saved the checkpoint
 * since a keying version did (`keyed`, the checkpoint it saved), as the rows it rewrote kept their old items' keys.
 */
export const unkeySql = (table: string, when = "") =>
  `UPDATE ${table} SET partner_api_key = NULL WHERE partner_api_key IS NOT NULL${when}`;

/** The conditions that keep a row keyed and its key in `range`, each bound a parameter (`bind`), for the index. */
export function inRange(
  { after, upTo, descending }: KeyRange,
  bind: (key: string) => string,
): string {
  const bound = (op: string, key: string | null) =>
    key === null ? "" : ` AND partner_api_key ${op} ${bind(key)}`;
  const [past, within] = descending ? ["<", ">="] : [">", "<="];
  const keyed = " AND partner_api_key IS NOT NULL";
  return `${keyed}${bound(past, after)}${bound(within, upTo)}`;
}

/** The live rows of `range` a cycle has not seen (`unseen`: the dialect's test of row `t`), in its order, at most `limit`. */
export const unseenSql = (
  table: string,
  range: KeyRange,
  bind: (key: string) => string,
  unseen: string,
  limit: string,
) =>
  `SELECT id, partner_api_key AS key FROM ${table} t WHERE deleted_at IS NULL AND ${unseen}${
    inRange(range, bind)
  } ORDER BY partner_api_key${range.descending ? " DESC" : ""} LIMIT ${limit}`;

/** `"<table>_changes"`, the change table of a quoted table. */
export const changeTableOf = (table: string) =>
  `"${table.slice(1, -1)}_changes"`;

/**
 * What a copy holds, as a dialect reads it: the checkpoint row's text, the table's rows now, the rows and last row
 * (`fingerprint:id`) recorded with it (0.3 kept none), the fingerprint `found` of that row now, and why it is foreign.
 */
export interface CopyState {
  readonly checkpoint?: string | null | undefined;
  readonly rows: number;
  readonly recorded?: number | null | undefined;
  readonly last?: string | null | undefined;
  readonly found?: string | null | undefined;
  readonly foreign?: string | undefined;
}

/** A copy that passed its checks: its checkpoint, rows and last row, as recorded. */
export interface Checked {
  readonly checkpoint: SyncCheckpoint | undefined;
  readonly rows: number;
  readonly last: string | null;
}

/** A batch as the database can hold it: each id once, at its last occurrence. */
export interface Rows {
  readonly ids: readonly string[];
  readonly texts: readonly string[];
  /** Each row's key text (`keyText`), null where none is known: the guard's range reads skip the row until keyed. */
  readonly keys: readonly (string | null)[];
}

export interface SqlBatch {
  readonly rows: Rows;
  /** Skipped ids whose rows may exist: seen, left as they are. */
  readonly kept: readonly string[];
  readonly checkpoint: SyncCheckpoint;
  readonly context: SyncWriteContext | undefined;
  /** The run's lease token (undefined: a write without lock()). */
  readonly owner: string | undefined;
  /** The run's signal (from lock()): a wait for the database stops at it. */
  readonly signal: AbortSignal | undefined;
  /** The copy as it was before the batch. */
  readonly copy: Checked;
}

/** What a batch did (its counts); `rows` and `last` when the dialect tracks them. */
export interface Applied {
  readonly inserted: number;
  readonly updated: number;
  readonly deleted: number;
  /** Ending a cycle: the live rows before its deletes. */
  readonly held?: number;
  readonly rows?: number;
  readonly last?: string | null;
}
