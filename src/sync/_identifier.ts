// Internal: a table name a sink may put into SQL.

import { optionError } from "../core/_check.ts";

/** The checkpoints of every synced table. */
export const CHECKPOINT_TABLE = "partner_api_sync";
/** Which run holds each synced table. */
export const LEASE_TABLE = "partner_api_sync_lease";
/** The ids each sweep cycle saw, per table (SQLite). */
export const SEEN_TABLE = "partner_api_sync_seen";
/** Items a cycle found the copy lacks, held until its guard passes. */
export const STAGE_TABLE = "partner_api_sync_stage";

/** `table`, quoted for SQL. @throws {TypeError} (`option: "table"`) */
export function quotedTable(table: unknown, context: string): string {
  if (
    typeof table !== "string" || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(table)
  ) {
    throw optionError(
      TypeError,
      context,
      "table",
      "must be a plain identifier (letters, digits, _; at most 63)",
      typeof table === "string"
        ? JSON.stringify(table.slice(0, 80))
        : typeof table,
    );
  }
  return `"${table}"`;
}
