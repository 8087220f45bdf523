// Internal: how `list` writes items: JSON lines, a JSON array, CSV or a table, control characters escaped in each.

import type { Format } from "./_plan.ts";
import type { CliWriter } from "./io.ts";
import {
  columnsOf,
  escapeControls,
  firstThenLater,
  keyNotice,
  type RowSink,
  safeJson,
  tableWriter,
} from "./_render.ts";

/** Writes items a page at a time; `end` once the list ends (or is interrupted). */
export interface ItemWriter {
  page(items: readonly unknown[]): void;
  end(): void;
}

/** The writer for `format`. `notify` hears once of a key first seen after the columns were fixed: never silently dropped. */
export function itemWriter(
  out: CliWriter,
  format: Format,
  options: {
    fields: readonly string[] | undefined;
    notify: (line: string) => void;
  },
): ItemWriter {
  const { fields, notify } = options;
  const record = (item: unknown) => pick(asRecord(item), fields);
  if (format === "table" || format === "csv") {
    const rows = format === "table"
      ? tableWriter(out, fields, notify)
      : csvWriter(out, fields, notify);
    return { page: (items) => rows.page(items.map(record)), end: rows.end };
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

function asRecord(item: unknown): Record<string, unknown> {
  return typeof item === "object" && item !== null && !Array.isArray(item)
    ? item as Record<string, unknown>
    : { value: item };
}

function pick(
  item: Record<string, unknown>,
  fields: readonly string[] | undefined,
): Record<string, unknown> {
  if (fields === undefined) return item;
  const picked: Record<string, unknown> = {};
  for (const field of fields) picked[field] = item[field];
  return picked;
}

/** CSV (RFC 4180: CRLF line ends) with one header. */

function csvWriter(
  out: CliWriter,
  fields: readonly string[] | undefined,
  notify: (line: string) => void,
): RowSink {
  let columns: readonly string[] = fields ?? [];
  const unseen = keyNotice(notify, "after the header and is not in the CSV");
  const line = (values: readonly unknown[]) =>
    out.write(`${values.map(csvField).join(",")}\r\n`);
  const writeRow = (item: Record<string, unknown>) => {
    unseen(columns, item);
    line(columns.map((column) => item[column]));
  };
  const firstPage = (rows: readonly Record<string, unknown>[]) => {
    columns = columnsOf(fields, rows);
    if (columns.length > 0) line(columns);
    for (const item of rows) writeRow(item);
  };
  return firstThenLater(firstPage, writeRow);
}

/**
 * One field as RFC 4180 has it, quoted when it must be. A cell a spreadsheet would run as a formula (`=`, `+`, `-` or
 * `@` first: OWASP's CSV injection) gets a `'` before it unless a plain number such as `-5`: stricter than "followed
 * by a non-digit", which lets `=1+HYPERLINK(...)` through.
 */
export function csvField(value: unknown): string {
  const text = defused(escapeControls(
    value === undefined || value === null
      ? ""
      : typeof value === "string"
      ? value
      : typeof value === "object"
      ? JSON.stringify(value)
      : String(value),
  ));
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const FORMULA_START = /^[=+\-@]/;
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;

/** `text`, with a `'` before it when a spreadsheet would take it for a formula. */
function defused(text: string): string {
  return FORMULA_START.test(text) && !NUMBER.test(text) ? `'${text}` : text;
}
