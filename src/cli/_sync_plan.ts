// Internal: the `sync` command line, checked into a request. Pure.

import {
  fieldName,
  oneOf,
  onePositional,
  pagingOf,
  sortDirection,
  sortField,
  UsageError,
  type Values,
} from "./_flag_values.ts";

/** What `sync` was asked for, and the command line as given (`args`), for the command a message shows. */
export type SyncRequest = Readonly<ReturnType<typeof syncRequest>> & {
  readonly args: readonly string[];
};

/** Checks `sync <list> --to FILE` and its flags (the help lists them), those it shares with `list` first: a UsageError. */
export function syncRequest(rest: readonly string[], values: Values) {
  const shared = pagingOf(values);
  const path = onePositional(rest, "sync needs a <list>, e.g. transactions");
  if (/[?#]/.test(path)) {
    throw new UsageError(
      `sync's <list> must hold no query or fragment: give filters as --query k=v: received ${path}`,
    );
  }
  const { target, kind } = copyOf(values.to);
  if (values.full === true) {
    throw new UsageError(
      "--full was replaced by --sweep all (a whole cycle now, deletes included)",
    );
  }
  const deletes = oneOf(values.deletes, "deletes", ["remove", "mark"]) ??
    "remove";
  const sqliteOnly = deletes === "mark"
    ? "--deletes mark needs a SQLite --to (a JSONL file keeps no deleted_at)"
    : values.changes === true
    ? "--changes needs a SQLite --to (.db, .sqlite, .sqlite3): a JSONL file keeps no change table"
    : undefined;
  if (kind === "jsonl" && sqliteOnly) throw new UsageError(sqliteOnly);
  return {
    /** The list, e.g. `transactions`. */
    path,
    /** The copy: a SQLite file (`.db`, `.sqlite`, `.sqlite3`) or JSONL (`.jsonl`, `.ndjson`). */
    target,
    kind,
    /** The id field: `--id`, else the list's singular + `ID` (`transactionID`). */
    id: fieldName("id", values.id) ?? idFieldOf(path),
    sortBy: sortField(values["sort-by"]),
    sortDirection: sortDirection(values["sort-direction"]) ?? "ASC",
    /** List requests each run spends on the sweep; Infinity for `all`. */
    sweep: sweepOf(values.sweep),
    deletes,
    maxDeletes: shareOf(values["max-deletes"]),
    changes: values.changes === true,
    /** The list requests' priority: `low` (the default) yields to live calls. */
    priority: oneOf(values.priority, "priority", ["high", "low", "auto"]),
    /** How long the sweep may read, in ms (`--max-duration 90s`, `10m`, `1h`). */
    maxDuration: durationOf(values["max-duration"]),
    ...shared,
  };
}

/** The copy `--to` names, and its kind by its extension. */
function copyOf(target = ""): { target: string; kind: "sqlite" | "jsonl" } {
  // A database's address, its password often in it, is not quoted (`scheme://`, `scheme:user:pass@host`, `password=`
  // pairs, a space before). A drive letter is no scheme.
  if (/:\/\/|^\s*[a-z][a-z0-9+.-]+:[^\\]*@|password\s*=/i.test(target)) {
    throw new UsageError(
      "--to takes a file, not an address: a PostgreSQL copy is made with the library's createPostgresSink (docs/sync.md)",
    );
  }
  if (/\.(db|sqlite3?)$/i.test(target)) return { target, kind: "sqlite" };
  if (/\.(jsonl|ndjson)$/i.test(target)) return { target, kind: "jsonl" };
  throw new UsageError(
    target === ""
      ? "sync needs one --to FILE, e.g. --to copy.db or --to copy.jsonl"
      : `--to must end in .db, .sqlite or .sqlite3 (SQLite) or .jsonl or .ndjson: received ${target}`,
  );
}

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000 };

/** A duration such as `90s`, `10m` or `1h`, in ms (at most 24 days). */
function durationOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const [, count, unit] = /^(\d{1,7})(s|m|h)$/.exec(value) ?? [];
  const ms = Number(count) * (UNITS[unit ?? ""] ?? NaN);
  if (ms > 0 && ms <= 2_147_483_647) return ms;
  throw new UsageError(
    `--max-duration must be a time such as 90s, 10m or 1h, up to 596h: received ${value}`,
  );
}

function sweepOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (value === "all") return Infinity;
  if (/^\d{1,9}$/.test(value)) return Number(value);
  throw new UsageError(
    `--sweep must be a number of requests or all: received ${value}`,
  );
}

function shareOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  // Decimal only: Number reads "0x1" and "1e0" as 1, which turns the guard off.
  const share = /^(0|1)?(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (value !== "" && share <= 1) return share;
  throw new UsageError(
    `--max-deletes must be a share from 0 to 1 (0.1 for 10 %): received ${value}`,
  );
}

/** The id field of a list by the service's naming: `transactions` → `transactionID`. */
export function idFieldOf(path: string): string {
  const last = path.replace(/\/+$/, "").split("/").at(-1) ?? path;
  return `${last.replace(/ies$/, "y").replace(/s$/, "")}ID`;
}

/** The SQLite table of a list: its last segment, as a plain identifier. */
export function tableOf(path: string): string {
  const last = path.replace(/\/+$/, "").split("/").at(-1) ?? path;
  const table = last.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 63);
  return /^[A-Za-z_]/.test(table) ? table : `t_${table}`.slice(0, 63);
}
