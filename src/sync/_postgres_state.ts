// Internal: what the PostgreSQL sink checks before it changes anything: the
// copy's columns, checkpoint, row count and last row, and a change table's
// shape.

import type { SyncCheckpoint } from "./sink.ts";
import { optionError } from "../core/_check.ts";
import { isCheckpoint, parsedJson } from "./_checkpoint.ts";
import {
  catalogSql,
  CHANGES_CATALOG_SQL,
  CHANGES_COLUMNS,
  CHANGES_COLUMNS_0_3,
  changeTableOf,
  copySql,
  createChangesSql,
  type Row,
} from "./_postgres_copy.ts";
import { SyncError } from "./sync_error.ts";

/**
 * Checks `<table>_changes` (one of the user's own, or of another shape,
 * is refused) and creates it if missing; its quoted name.
 *
 * @throws {SyncError} (`"sink-mismatch"`)
 * @throws {TypeError} (`option: "table"`) For a name too long to take
 * `_changes` within PostgreSQL's 63 bytes.
 */
export async function makeChangeTable(
  read: (sql: string, params: string[]) => Promise<readonly Row[]>,
  table: string,
  what: string,
): Promise<string> {
  if (table.length - 2 + "_changes".length > 63) {
    throw optionError(
      TypeError,
      `Cannot sync into ${what}`,
      "table",
      "must be at most 55 characters with changes: true (PostgreSQL cuts the change table's name at 63)",
    );
  }
  const changes = changeTableOf(table);
  const found = (await read(CHANGES_CATALOG_SQL, [changes]))[0] ?? {};
  const known = [CHANGES_COLUMNS, CHANGES_COLUMNS_0_3];
  if (found.found === "true" && !known.includes(String(found.columns))) {
    throw new SyncError(
      `Cannot sync into ${what}: ${changes} is not a change table this sink made (${found.columns}). Nothing was changed: give another table, or drop it`,
      "sink-mismatch",
      what,
    );
  }
  if (found.columns !== CHANGES_COLUMNS) {
    await read(createChangesSql(changes), []);
  }
  return changes;
}

/**
 * Reads the copy's state and judges it against what was recorded, changing
 * nothing: the checkpoint, or undefined for a copy not begun.
 *
 * @throws {SyncError} (`"sink-mismatch"`)
 */
export async function readCopy(
  read: (sql: string, params: string[]) => Promise<readonly Row[]>,
  table: string,
  what: string,
): Promise<SyncCheckpoint | undefined> {
  const refuse = (why: string) =>
    new SyncError(
      `Cannot sync into ${what}: ${why}. Nothing was changed: give another table`,
      "sink-mismatch",
      what,
    );
  const target = table.slice(1, -1);
  const has = judgeCatalog(
    (await read(catalogSql(), [table]))[0] ?? {},
    refuse,
  );
  if (!has.items && !has.checkpoints) return undefined;
  const state = (await read(copySql(table, has), [target]))[0] ?? {};
  const count = Number(state.count ?? 0);
  if (state.checkpoint === null || state.checkpoint === undefined) {
    if (count > 0) {
      throw refuse(
        `it holds ${count} rows that no checkpoint covers: it was not made by this sink`,
      );
    }
    return undefined;
  }
  const checkpoint = parsedJson(state.checkpoint);
  if (!isCheckpoint(checkpoint)) {
    throw refuse(
      typeof checkpoint === "string"
        ? "its checkpoint is a JSON string, as 0.3 stored it (and every item) through postgres.js: convert both (docs/sync.md, PostgreSQL)"
        : "its checkpoint is damaged or from another version",
    );
  }
  // 0.3 recorded neither count nor last row: nothing more to compare.
  if (state.recorded === null || state.recorded === undefined) {
    return checkpoint;
  }
  const recorded = Number(state.recorded);
  if (recorded !== count) {
    throw refuse(`it holds ${count} rows, not the ${recorded} committed`);
  }
  const last = state.last;
  if (
    last !== null && last !== undefined &&
    state.found !== last.slice(0, last.indexOf(":"))
  ) {
    throw refuse(
      "its last committed row is not the one recorded: the copy was changed",
    );
  }
  return checkpoint;
}

/**
 * What the catalog says the copy has, when its columns are the sink's.
 *
 * @throws {SyncError} (`"sink-mismatch"`, through `refuse`)
 */
function judgeCatalog(catalog: Row, refuse: (why: string) => SyncError) {
  const items = catalog.items === "true";
  if (
    items &&
    (catalog.id_type !== "text" || catalog.item_type !== "jsonb" ||
      catalog.id_unique !== "true")
  ) {
    throw refuse(
      "it lacks the columns id (text, unique) and item (jsonb): it was not made by this sink",
    );
  }
  const deletedAt = catalog.deleted_at_type ?? null;
  const seen = catalog.seen_type ?? null;
  if (
    items &&
    ((deletedAt !== null && deletedAt !== "timestamp with time zone") ||
      (seen !== null && seen !== "bigint"))
  ) {
    throw refuse(
      `its columns deleted_at (${deletedAt ?? "none"}) and seen (${
        seen ?? "none"
      }) are not the sink's (timestamptz, bigint): it was not made by this sink`,
    );
  }
  return {
    items,
    checkpoints: catalog.checkpoints === "true",
    recorded: catalog.rows_type !== null && catalog.rows_type !== undefined,
  };
}
