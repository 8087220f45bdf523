// Internal: how `list` writes items: JSON lines, a JSON array, CSV or a table, control characters escaped in each.

import type { Format } from "./_list_plan.ts";
import type { CliWriter } from "./io.ts";
import { escapeControls } from "../core/_controls.ts";
import { fieldsOf } from "../core/_check.ts";
import { layOut, row, safeJson, table } from "./_render.ts";

/** Writes items a page at a time; `end` once the list ends (or is interrupted). */
interface ItemWriter {
  page(items: readonly unknown[]): void;
  end(): void;
}

/**
 * The writer for `format`. `notify` hears once of a key first seen after the columns were fixed: never silently dropped.
 * A header shows each column's name as `shown` does (a name of `--fields` may hold a token).
 */
export function itemWriter(
  out: CliWriter,
  format: Format,
  options: {
    fields: readonly string[] | undefined;
    notify: (line: string) => void;
    shown: (text: string) => string;
  },
): ItemWriter {
  const { fields } = options;
  // An item as a row (anything but an object as `{ value }`), cut to `fields` when given.
  const record = (item: unknown) => {
    const all = !Array.isArray(item) && fieldsOf(item) || { value: item };
    if (fields === undefined) return all;
    // Its own fields only: not Object's `constructor`.
    const own = (field: string) =>
      Object.hasOwn(all, field) ? all[field] : undefined;
    return Object.fromEntries(fields.map((field) => [field, own(field)]));
  };
  if (format === "table" || format === "csv") {
    return columnsWriter(out, format, options, record);
  }
  const value = (item: unknown) => fields === undefined ? item : record(item);
  if (format === "jsonl") {
    return {
      page: (items) =>
        out.write(items.map((item) => `${safeJson(value(item))}\n`).join("")),
      end: () => {},
    };
  }
  // JSON: an item is written once the next arrives, with its comma, so no line is left open for progress to overwrite.
  let held: string | undefined;
  return {
    page(items) {
      for (const item of items) {
        out.write(held === undefined ? "[\n" : `  ${held},\n`);
        held = safeJson(value(item));
      }
    },
    end: () => out.write(held === undefined ? "[]\n" : `  ${held}\n]\n`),
  };
}

/**
 * A table, or CSV (RFC 4180: CRLF line ends), under one header. The first page with rows (an empty list: none, at the
 * end) fixes the columns: `fields`, else its rows' keys, and a table's widths; a later wider cell is cut (`…`) rather
 * than re-laying the table, and a key first seen later is told to `notify`, once.
 */
function columnsWriter(
  out: CliWriter,
  format: "table" | "csv",
  { fields, notify, shown }: Parameters<typeof itemWriter>[2],
  record: (item: unknown) => Record<string, unknown>,
): ItemWriter {
  let columns: readonly string[] | undefined;
  let write = (_item: Record<string, unknown>) => {};
  const csvLine = (values: readonly unknown[]) =>
    out.write(`${values.map(csvField).join(",")}\r\n`);
  const first = (rows: readonly Record<string, unknown>[]) => {
    const fixed = columns = fields ??
      [...new Set(rows.flatMap((item) => Object.keys(item)))];
    if (format === "table") {
      if (rows.length === 0) return;
      out.write(table(fixed, rows, shown));
      const layout = layOut(fixed, rows);
      write = (item) => out.write(row(layout, item));
    } else {
      if (fixed.length > 0) csvLine(fixed.map(shown));
      write = (item) => csvLine(fixed.map((column) => item[column]));
      rows.forEach(write);
    }
  };
  const where = format === "table"
    ? "after the first page and is not shown"
    : "after the header and is not in the CSV";
  const reported = new Set<string>();
  const later = (item: Record<string, unknown>) => {
    for (const key of Object.keys(item)) {
      if (columns!.includes(key) || reported.has(key)) continue;
      reported.add(key);
      const column = `column '${escapeControls(key)}'`;
      notify(
        `${column} first appeared ${where}; name the columns with --fields`,
      );
    }
    write(item);
  };
  return {
    page(items) {
      const rows = items.map(record);
      if (columns !== undefined) rows.forEach(later);
      else if (rows.length > 0) first(rows);
    },
    end() {
      if (columns === undefined) first([]);
    },
  };
}

/**
 * One field as RFC 4180 has it, quoted when it must be. A cell a spreadsheet would run as a formula (`=`, `+`, `-` or
 * `@` first: OWASP's CSV injection) gets a `'` before it unless a plain number such as `-5`: stricter than "followed
 * by a non-digit", which lets `=1+HYPERLINK(...)` through.
 */
export function csvField(value: unknown): string {
  const text = escapeControls(
    fieldsOf(value) ? JSON.stringify(value) : String(value ?? ""),
  );
  const cell = FORMULA_START.test(text) && !NUMBER.test(text)
    ? `'${text}`
    : text;
  return /[",\r\n]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell;
}

const FORMULA_START = /^[=+\-@]/;
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;
