// Internal: the `sync` command line, checked into a request. Pure.

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
  readonly full: boolean;
  readonly limit: number | undefined;
  readonly concurrency: number | undefined;
  readonly query: Readonly<Record<string, string>>;
}

/** The flags `sync` reads, as node:util parsed them. */
export interface SyncValues {
  readonly to?: string | undefined;
  readonly id?: string | undefined;
  readonly "sort-by"?: string | undefined;
  readonly full?: boolean | undefined;
}

/**
 * Checks `sync <list> --to FILE [--id F] [--sort-by F] [--full]`.
 *
 * @throws {Error} (made a usage error by the caller) With what is wrong.
 */
export function syncRequest(
  positionals: readonly string[],
  values: SyncValues,
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
  return {
    path,
    target,
    kind,
    id: values.id ?? idFieldOf(path),
    sortBy: values["sort-by"],
    full: values.full === true,
    ...shared,
  };
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
