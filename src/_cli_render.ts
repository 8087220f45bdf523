// Internal: how the command-line tool shows things to a person.

import type { QuotaBucket } from "./quota.ts";

/**
 * Where the tool writes: standard output or error, or a test's capture.
 *
 * @example A writer that collects output
 * ```ts
 * import type { CliWriter } from "@partner-api/client/cli";
 *
 * const lines: string[] = [];
 * const writer: CliWriter = { isTerminal: false, write: (text) => void lines.push(text) };
 * writer.write("done\n");
 * if (lines[0] !== "done\n") throw new Error();
 * ```
 */
export interface CliWriter {
  /** Writes `text` as it is. */
  write(text: string): void;
  /** Whether a person is watching (a terminal), which decides formats and progress. */
  readonly isTerminal: boolean;
}

const CELL_LIMIT = 40;

/** "59 min", "23 h 5 min", "12 s". */
export function duration(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest === 0 ? `${hours} h` : `${hours} h ${rest} min`;
}

/** "2026-11-21 11:00 UTC". */
export function utcTime(epochMs: number): string {
  return `${
    new Date(epochMs).toISOString().slice(0, 16).replace("T", " ")
  } UTC`;
}

function text(value: unknown): string {
  const shown = typeof value === "string" ? value : JSON.stringify(value) ?? "";
  return shown.length > CELL_LIMIT
    ? `${shown.slice(0, CELL_LIMIT - 1)}…`
    : shown;
}

/** Lays rows out as a table with a header; numbers align right. */
export function table(
  columns: readonly string[],
  rows: readonly Record<string, unknown>[],
): string {
  const cells = rows.map((row) => columns.map((column) => text(row[column])));
  const widths = columns.map((column, i) =>
    Math.max(column.length, ...cells.map((row) => row[i]!.length))
  );
  const numeric = columns.map((column) =>
    rows.length > 0 && rows.every((row) => typeof row[column] === "number")
  );
  const line = (values: readonly string[]) =>
    values.map((value, i) =>
      numeric[i] ? value.padStart(widths[i]!) : value.padEnd(widths[i]!)
    ).join("  ").trimEnd() + "\n";
  return line(columns) + cells.map(line).join("");
}

/** A bucket as a small gauge: `per_hour  ████████░░  8/10 left, resets in 59 min`. */
export function gauge(bucket: QuotaBucket, width = 20): string {
  const filled = bucket.limit === 0
    ? 0
    : Math.round(width * bucket.remaining / bucket.limit);
  const bar = "█".repeat(filled) + "░".repeat(width - filled);
  return `  ${
    bucket.bucket.padEnd(9)
  } ${bar}  ${bucket.remaining}/${bucket.limit} left, resets in ${
    duration(bucket.resetAfter)
  }\n`;
}

/** Reports paging progress: rewritten in place on a terminal, a line per page otherwise. */
export function progressReporter(
  out: CliWriter,
  limit: number,
  now: () => number = Date.now,
): { item(): void; done(): void } {
  const started = now();
  let items = 0;
  let reported = -1;
  const report = (final: boolean) => {
    if (!out.isTerminal && items === reported) return;
    reported = items;
    const seconds = Math.max((now() - started) / 1000, 0.001);
    const pages = Math.ceil(items / limit);
    const line = `${pages} pages, ${items} items, ${
      Math.round(items / seconds)
    } items/s`;
    out.write(
      out.isTerminal ? `\r\x1b[K${line}${final ? "\n" : ""}` : `${line}\n`,
    );
  };
  return {
    item() {
      if (++items % limit === 0) report(false);
    },
    done() {
      report(true);
    },
  };
}
