// Internal: `list`: items as they come, progress on a terminal; on Ctrl-C the output stays whole (a JSON array closed),
// 130. Items are written as JSON lines, a JSON array, CSV or a table, control characters escaped in each.

import type { Session } from "./_session.ts";
import { fieldNames, type Format, type ListRequest } from "./_list_plan.ts";
import { UsageError } from "./_flag_values.ts";
import { nearest } from "../core/_nearest.ts";
import { fieldsOf } from "../core/_check.ts";
import { escapeControls } from "../core/_controls.ts";
import type { CliWriter } from "./io.ts";
import { layOut, progressReporter, row, safeJson, table } from "./_render.ts";

/** Ctrl-C (or SIGTERM, SIGHUP) stopped the run: exit code 128 + the signal's number (130), as shells expect. */
export class Interrupted extends Error {
  override readonly name = "Interrupted";
  constructor(message: string, readonly exitCode = 130) {
    super(message);
  }
}

/** A signal that Ctrl-C (or SIGTERM, SIGHUP) aborts with {@linkcode Interrupted}, heard until `stop`. */
export function onCtrlC(io: Session["io"]) {
  const interrupt = new AbortController();
  const abort = (exitCode?: number) =>
    interrupt.abort(new Interrupted("interrupted", exitCode));
  return { signal: interrupt.signal, stop: io.onInterrupt?.(abort) };
}

/** The refusal of the first of `fields` no item of the first page has, with the nearest key. */
function fieldsRefusal(fields: readonly string[], page: readonly unknown[]) {
  const keys = new Set(
    page.flatMap((item) => Object.keys(fieldsOf(item) ?? {})),
  );
  const unknown = fields.find((field) => !keys.has(field));
  if (unknown === undefined) return undefined;
  const pickable = [...keys].filter((key) => fieldNames(key)[0] === key); // what --fields can give
  const near = nearest(unknown, pickable);
  const hint = near ? `; did you mean ${near}?` : "";
  return new UsageError(
    `--fields: no item of the first page has '${unknown}'${hint}`,
  );
}

/** Writes every item of the list. */
export async function runList(
  session: Session,
  request: ListRequest,
  forceProgress = false,
): Promise<void> {
  const { io } = session;
  const format = request.format ?? (io.stdout.isTerminal ? "table" : "jsonl");
  const writer = itemWriter(io.stdout, format, {
    fields: request.fields,
    notify: (line) => io.stderr.write(`${line}\n`),
    shown: session.shown,
  });
  // JSON on a terminal: no progress line may land inside the array, so the count is said once, after it is closed.
  const atEnd = format === "json" && io.stdout.isTerminal;
  const progress = io.stderr.isTerminal || forceProgress
    ? progressReporter(io.stderr, io.now ?? Date.now, atEnd)
    : undefined;
  // On one terminal, the progress line is erased before output, and before any other stderr line (--verbose).
  const shared = io.stdout.isTerminal;
  if (progress) session.status.clear = progress.clear;
  const ctrlC = onCtrlC(io);
  const options = { ...request.options, signal: ctrlC.signal };
  // With --fields, a typo is a usage error, not a column of nothing: checked on the first page with items, before output.
  let unchecked = request.fields, refusal: UsageError | undefined;
  try {
    for await (const page of session.client.pages(request.path, options)) {
      if (unchecked !== undefined && page.items.length > 0) {
        refusal = fieldsRefusal(unchecked, page.items);
        if (refusal) throw refusal;
        unchecked = undefined;
      }
      if (shared) progress?.clear();
      writer.page(page.items);
      progress?.page(page.items.length);
    }
  } finally {
    ctrlC.stop?.();
    if (shared) progress?.clear();
    // Whatever stopped the list, what was written stays whole; a refused --fields wrote nothing (no header, no "[]").
    if (refusal === undefined) writer.end();
    progress?.done();
  }
}

/** Writes items a page at a time; `end` once the list ends (or is interrupted). */
interface ItemWriter {
  page(items: readonly unknown[]): void;
  end(): void;
}

/**
 * The writer for `format`. `notify` hears once of a key first seen after the columns were fixed: never silently dropped.
 * A header shows each column's name as `shown` does (a name of `--fields` may hold a token).
 */
function itemWriter(
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
 * A table, or CSV (RFC 4180: CRLF line ends), under one header. The first page with rows (or the end) fixes the columns
 * (`fields`, else its keys) and a table's widths: a later wider cell is cut, a key first seen later told to `notify`.
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
 * One field as RFC 4180 has it, quoted when it must be. A cell a spreadsheet would run as a formula (OWASP's CSV
 * injection) gets a `'` first unless a plain number such as `-5` (not "a non-digit next": `=1+HYPERLINK(...)`).
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
