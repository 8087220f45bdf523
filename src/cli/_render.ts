// Internal: how the command-line tool shows things to a person, in the columns of a terminal.

import type { QuotaBucket } from "../core/quota.ts";
import { escapeControls } from "../core/_controls.ts";
import { cut } from "../core/_check.ts";
import type { CliWriter } from "./io.ts";

/** "59 min", "23 h 5 min", "12 s". */
export function duration(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest === 0 ? `${hours} h` : `${hours} h ${rest} min`;
}

/** "1 item", "2 items". */
export function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** "12 items/s" over `seconds` (an instant counts as a millisecond). */
export const itemsPerSecond = (items: number, seconds: number) =>
  `${Math.round(items / Math.max(seconds, 0.001))} items/s`;

/** "2026-11-21 11:00 UTC". */
export function utcTime(epochMs: number): string {
  const minute = new Date(epochMs).toISOString().slice(0, 16);
  return `${minute.replace("T", " ")} UTC`;
}

// Two columns: East Asian wide and fullwidth characters, and emoji drawn as such.
const WIDE =
  /[\p{Emoji_Presentation}\u1100-\u115F\u2E80-\u303E\u3041-\u33FF\u3400-\u4DBF\u4E00-\u9FFF\uA000-\uA4CF\uA960-\uA97F\uAC00-\uD7A3\uF900-\uFAFF\uFE10-\uFE19\uFE30-\uFE6F\uFF00-\uFF60\uFFE0-\uFFE6\u{16FE0}-\u{16FE4}\u{17000}-\u{18AFF}\u{1B000}-\u{1B16F}\u{1F200}-\u{1F2FF}\u{20000}-\u{3FFFD}]/u;
// None: drawn over the character before (combining marks, a decomposed Korean syllable's vowel and final, skin tones).
// Zero-width spaces and joiners never get here: they are shown escaped.
const NONE = /[\p{Mn}\p{Me}\u1161-\u11FF\u{1F3FB}-\u{1F3FF}]/u;
const PICTURE = /\p{Extended_Pictographic}/u;

/** The columns `char` takes after `before`. */
function widthOf(char: string, before: string): number {
  // U+FE0F draws the symbol before it as an emoji (❤️): two columns where it took one.
  if (char === "\uFE0F") {
    return PICTURE.test(before) && !WIDE.test(before) ? 1 : 0;
  }
  return NONE.test(char) ? 0 : WIDE.test(char) ? 2 : 1;
}

/** `text` in at most `width` columns (when cut, it ends with "…"), and the columns it takes; one walk of it. */
function fitted(text: string, width: number) {
  let columns = 0, at = 0, before = "", cutAt = -1, cutColumns = 0;
  for (const char of text) {
    const wide = widthOf(char, before);
    if (cutAt < 0 && columns + wide > width - 1) {
      [cutAt, cutColumns] = [at, columns];
    }
    columns += wide;
    if (columns > width) {
      return { text: `${text.slice(0, cutAt)}…`, columns: cutColumns + 1 };
    }
    at += char.length;
    before = char;
  }
  return { text, columns };
}

/** Columns a table cell takes at most. */
const CELL = 40;

/** A value as a table cell: text, escaped, in at most `width` columns (and 160 code units: combining marks take none). */
function cell(value: unknown, width = CELL) {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? "";
  return fitted(escapeControls(cut(text, 4 * CELL)), width);
}

/** Columns, their widths, and which align right (numbers). */
type Layout = Readonly<ReturnType<typeof layOut>>;

/** The columns' widths and alignment for `rows`. */
export function layOut(
  columns: readonly string[],
  rows: readonly Record<string, unknown>[],
) {
  return {
    columns,
    widths: columns.map((column) => {
      let width = cell(column).columns;
      for (const row of rows) {
        width = Math.max(width, cell(row[column]).columns);
      }
      return width;
    }),
    numeric: columns.map((column) =>
      rows.length > 0 && rows.every((row) => typeof row[column] === "number")
    ),
  };
}

/** One row of a table laid out (numbers align right); a cell wider than its column is cut. */
export function row(layout: Layout, item: Record<string, unknown>): string {
  return layout.columns.map((column, i) => {
    const width = layout.widths[i]!;
    const { text, columns } = cell(item[column], width);
    const pad = " ".repeat(width - columns);
    return layout.numeric[i] ? pad + text : text + pad;
  }).join("  ").trimEnd() + "\n";
}

/** Lays rows out as a table under a header of the column names, each as `shown`. */
export function table(
  columns: readonly string[],
  rows: readonly Record<string, unknown>[],
  shown = (name: string) => name,
): string {
  const layout = layOut(columns, rows);
  const header = Object.fromEntries(columns.map((name) => [name, shown(name)]));
  return [header, ...rows].map((item) => row(layout, item)).join("");
}

/** A bucket as a small gauge: `per_hour  ████████░░  8/10 left, resets in 59 min`. */
export function gauge(bucket: QuotaBucket, width = 20): string {
  // More left than the limit (the service said so, or a cache planted it) is a full bar, not a crash.
  const share = bucket.limit === 0 ? 0 : bucket.remaining / bucket.limit;
  const filled = Math.round(width * Math.min(1, Math.max(0, share)));
  const bar = "█".repeat(filled) + "░".repeat(width - filled);
  const { text, columns } = cell(bucket.bucket);
  const name = text + " ".repeat(Math.max(0, 9 - columns));
  const resets = `resets in ${duration(bucket.resetAfter)}`;
  return `  ${name} ${bar}  ${bucket.remaining}/${bucket.limit} left, ${resets}\n`;
}

/** JSON of `value` with every control and invisible character escaped as `\uXXXX` (valid JSON, the same string parsed). */
export function safeJson(value: unknown): string {
  return escapeControls(JSON.stringify(value));
}

/**
 * Paging progress on standard error: on a terminal one line rewritten after each page and erased before any output
 * (`clear`), so it never shares a line with a row; otherwise a line per page.
 */
export function progressReporter(
  out: CliWriter,
  now: () => number = Date.now,
  onlyAtEnd = false,
): { page(items: number): void; clear(): void; done(): void } {
  const started = now();
  const status = statusLine(out);
  let pages = 0;
  let items = 0;
  const show = () => {
    const read = `${counted(pages, "page")}, ${counted(items, "item")}`;
    status.show(`${read}, ${itemsPerSecond(items, (now() - started) / 1000)}`);
  };
  return {
    page(count) {
      // The empty page that ends a list is a request, not a page of output.
      if (count === 0) return;
      pages++;
      items += count;
      if (!onlyAtEnd) show();
    },
    clear: status.clear,
    done() {
      if (items === 0) return;
      // The last count, unless a line per page already said it.
      if (out.isTerminal || onlyAtEnd) show();
      status.end();
    },
  };
}

/** A line kept current on standard error: rewritten in place on a terminal (`clear` erases it, `end` keeps it), else a line each time. */
export function statusLine(out: CliWriter) {
  let showing = false;
  const leave = (text: string) => {
    if (showing) out.write(text);
    showing = false;
  };
  return {
    show(text: string) {
      if (!out.isTerminal) return out.write(`${text}\n`);
      out.write(`\r\x1b[K${text}`);
      showing = true;
    },
    clear: () => leave("\r\x1b[K"),
    end: () => leave("\n"),
  };
}
