// Internal: the `sync` command line, checked into a request. Pure.

import type { Values } from "./_flag_values.ts";

/** What `sync` was asked for. */
export interface SyncRequest {
  /** The list, e.g. `transactions`. */
  readonly path: string;
  /** The copy: a SQLite file (`.db`, `.sqlite`, `.sqlite3`) or JSONL (`.jsonl`, `.ndjson`). */
  readonly target: string;
  readonly kind: "sqlite" | "jsonl";
  /** The id field: `--id`, else the list's singular + `ID` (`transactionID`). */
  readonly id: string;
  readonly sortBy: string | undefined;
  readonly sortDirection: "ASC" | "DESC";
  /** List requests each run spends on the sweep; Infinity for `all`. */
  readonly sweep: number | undefined;
  readonly deletes: "remove" | "mark";
  readonly maxDeletes: number | undefined;
  readonly changes: boolean;
  /** The list requests' priority: `low` (the default) yields to live calls. */
  readonly priority: "high" | "low" | "auto" | undefined;
  /** How long the sweep may read, in ms (`--max-duration 90s`, `10m`, `1h`). */
  readonly maxDuration: number | undefined;
  readonly limit: number | undefined;
  readonly concurrency: number | undefined;
  readonly query: Readonly<Record<string, string>>;
  /** The command line as given, for the command a message shows. */
  readonly args?: readonly string[];
}

/**
 * Checks `sync <list> --to FILE [--id F] [--sort-by F] [--sort-direction D] [--sweep N|all] [--deletes remove|mark]
 * [--max-deletes SHARE] [--changes]`.
 * @throws {Error} (made a usage error by the caller) With what is wrong.
 */
export function syncRequest(
  positionals: readonly string[],
  values: Values,
  shared: Pick<SyncRequest, "limit" | "concurrency" | "query">,
  usage: (message: string) => Error,
): SyncRequest {
  const [path, ...extra] = positionals;
  if (path === undefined) {
    throw usage("sync needs a <list>, e.g. transactions");
  }
  if (extra.length > 0) throw usage(`unexpected argument: ${extra[0]}`);
  const target = values.to;
  if (target === undefined || target === "") {
    throw usage("sync needs --to FILE, e.g. --to copy.db or --to copy.jsonl");
  }
  const kind = /\.(db|sqlite3?)$/i.test(target)
    ? "sqlite"
    : /\.(jsonl|ndjson)$/i.test(target)
    ? "jsonl"
    : undefined;
  if (kind === undefined) {
    throw usage(
      `--to must end in .db, .sqlite or .sqlite3 (SQLite) or .jsonl or .ndjson: received ${target}`,
    );
  }
  if (values.full === true) {
    throw usage(
      "--full was replaced by --sweep all (a whole cycle now, deletes included)",
    );
  }
  const deletes = values.deletes ?? "remove";
  if (deletes !== "remove" && deletes !== "mark") {
    throw usage(`--deletes must be remove or mark: received ${deletes}`);
  }
  if (deletes === "mark" && kind === "jsonl") {
    throw usage(
      "--deletes mark needs a SQLite --to (a JSONL file keeps no deleted_at)",
    );
  }
  if (values.changes === true && kind === "jsonl") {
    throw usage(
      "--changes needs a SQLite --to (.db, .sqlite, .sqlite3): a JSONL file keeps no change table",
    );
  }
  return {
    path,
    target,
    kind,
    id: values.id ?? idFieldOf(path),
    sortBy: values["sort-by"],
    sortDirection: direction(values["sort-direction"], usage),
    sweep: sweepOf(values.sweep, usage),
    deletes,
    maxDeletes: shareOf(values["max-deletes"], usage),
    changes: values.changes === true,
    priority: priorityOf(values.priority, usage),
    maxDuration: durationOf(values["max-duration"], usage),
    ...shared,
  };
}

function priorityOf(
  value: string | undefined,
  usage: (message: string) => Error,
): SyncRequest["priority"] {
  if (value === undefined) return undefined;
  if (value === "high" || value === "low" || value === "auto") return value;
  throw usage(`--priority must be high, low or auto: received ${value}`);
}

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000 };

/** A duration such as `90s`, `10m` or `1h`, in ms (at most 24 days). */
function durationOf(
  value: string | undefined,
  usage: (message: string) => Error,
): number | undefined {
  if (value === undefined) return undefined;
  const [, count, unit] = /^(\d{1,7})(s|m|h)$/.exec(value) ?? [];
  const ms = Number(count) * (UNITS[unit ?? ""] ?? NaN);
  if (ms > 0 && ms <= 2_147_483_647) return ms;
  throw usage(
    `--max-duration must be a time such as 90s, 10m or 1h, up to 596h: received ${value}`,
  );
}

function direction(
  value: string | undefined,
  usage: (message: string) => Error,
): "ASC" | "DESC" {
  const upper = (value ?? "ASC").toUpperCase();
  if (upper === "ASC" || upper === "DESC") return upper;
  throw usage(`--sort-direction must be ASC or DESC: received ${value}`);
}

function sweepOf(
  value: string | undefined,
  usage: (message: string) => Error,
): number | undefined {
  if (value === undefined) return undefined;
  if (value === "all") return Infinity;
  if (/^\d{1,9}$/.test(value)) return Number(value);
  throw usage(`--sweep must be a number of requests or all: received ${value}`);
}

function shareOf(
  value: string | undefined,
  usage: (message: string) => Error,
): number | undefined {
  if (value === undefined) return undefined;
  const share = Number(value);
  if (value.trim() !== "" && share >= 0 && share <= 1) return share;
  throw usage(`--max-deletes must be a share from 0 to 1: received ${value}`);
}

/** The id field of a list by the service's naming: `transactions` → `transactionID`. */
export function idFieldOf(path: string): string {
  const last = path.replace(/\/+$/, "").split("/").at(-1) ?? path;
  const singular = last.endsWith("ies")
    ? `${last.slice(0, -3)}y`
    : last.replace(/s$/, "");
  return `${singular}ID`;
}

/** The SQLite table of a list: its last segment, as a plain identifier. */
export function tableOf(path: string): string {
  const last = path.replace(/\/+$/, "").split("/").at(-1) ?? path;
  const table = last.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 63);
  return /^[A-Za-z_]/.test(table) ? table : `t_${table}`.slice(0, 63);
}
