// Internal: the `list` command line, checked into a request. Pure.

import type { ListOptions } from "../client/mod.ts";
import { fieldsOf, given } from "../core/_check.ts";
import {
  badName,
  count,
  oneOf,
  onePositional,
  pagingOf,
  sortDirection,
  sortField,
  UsageError,
  type Values,
} from "./_flag_values.ts";

const FORMATS = ["jsonl", "json", "csv", "table"] as const;
export type Format = typeof FORMATS[number];

/** What `list` was asked for. */
export type ListRequest = Readonly<ReturnType<typeof listRequest>>;

/** Checks `list <path> [options]`: a UsageError says what is wrong. */
export function listRequest(rest: readonly string[], values: Values) {
  const path = onePositional(rest, "list needs a <path>, e.g. transactions");
  // Each page sets them: in the path, the library would refuse them in its own words.
  const paging = URL.parse(path, "http://x/")?.searchParams;
  const held = ["limit", "page"].find((name) => paging?.has(name));
  if (held !== undefined) {
    throw new UsageError(
      `list's <path> must not hold '${held}': give --${held}: received ${path}`,
    );
  }
  const format = oneOf(values.format, "format", FORMATS);
  const options: ListOptions<unknown> = {
    ...given({
      ...pagingOf(values),
      page: count(values.page, "page", 1),
      maxItems: count(values["max-items"], "max-items", 0),
    }),
    ...orderOf(values),
  };
  const fields = values.fields === undefined
    ? undefined
    : fieldNames(values.fields);
  if (fields?.includes("")) {
    throw new UsageError(
      `--fields must be names separated by commas: received ${values.fields}`,
    );
  }
  return {
    path,
    format,
    /** The keys to keep, in this order; all when undefined. */
    fields,
    options,
  };
}

/** The sort, and with `--since` the item the list stops before. */
function orderOf(values: Values) {
  const direction = sortDirection(values["sort-direction"]);
  const sortBy = sortField(values["sort-by"]);
  if (values.since !== undefined) {
    const { field, until } = since(values.since);
    if (sortBy !== undefined && sortBy !== field) {
      throw new UsageError(
        `--since ${field}=… sorts by ${field}: it cannot come with --sort-by ${sortBy}`,
      );
    }
    if (direction === "ASC") {
      throw new UsageError(
        "--since reads newest first (DESC): it cannot come with --sort-direction ASC",
      );
    }
    return { sortBy: field, sortDirection: "DESC" as const, until };
  }
  return given({ sortBy, sortDirection: direction });
}

/**
 * `--since FIELD=VALUE`: the list, newest first by FIELD, stops at the first item whose FIELD is older than VALUE (or
 * missing). VALUE is an ISO 8601 date or a number: two dates compare as instants, two numbers as numbers, else as text.
 */
export function since(text: string) {
  const [, field, value] = /^([^=]+)=(.+)$/s.exec(text) ?? [];
  if (field === undefined || value === undefined || badName(field)) {
    throw new UsageError(
      `--since must be FIELD=VALUE, e.g. creationDate=2026-11-24: received ${text}`,
    );
  }
  // The list is read newest first already: `-field` is no field (the library's words would name sortBy).
  if (field.startsWith("-")) {
    throw new UsageError(
      `--since must be FIELD=VALUE, newest first already: write --since ${
        field.slice(1)
      }=${value}: received ${text}`,
    );
  }
  // Else nothing orders the items (`2026-13-01`, `+275760-09-13`, `2026-W01`, `11/01/2026`, `abc`): no guess.
  if (!NUMBER.test(value) && !isRealDate(value)) {
    throw new UsageError(
      `--since ${field}=…: ${value} is neither a number nor a date that exists (a real day of a year from 0000 to 9999, at most to the nanosecond, e.g. 2026-11-24 or 2026-11-24T00:00:00Z)`,
    );
  }
  const older = olderThan(field, value);
  return { field, until: (item: unknown) => older(fieldsOf(item)?.[field]) };
}

const NUMBER = /^-?\d+(?:\.\d+)?$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/;

/** Whether `value` is an ISO 8601 date that exists: a day of its month (Date.parse reads Feb 30 as Mar 2), 0000 to 9999. */
function isRealDate(value: string): boolean {
  const iso = (ms: number) =>
    Number.isNaN(ms) ? "" : new Date(ms).toISOString();
  const day = value.slice(0, 10);
  // The instant too (a zone moves 9999-12-31T23:00:00-14:00 into 10000); past nanoseconds Date.parse drops digits.
  return !/\.\d{10}/.test(value) && iso(Date.parse(day)).startsWith(day) &&
    /^\d{4}-/.test(iso(instantOf(value)));
}

/** An ISO 8601 date as epoch ms, UTC unless it names a zone; else NaN. */
function instantOf(text: string): number {
  const match = ISO_DATE.exec(text);
  if (match === null) return NaN;
  const local = text.includes("T") && match[1] === undefined;
  return Date.parse(local ? `${text}Z` : text);
}

/**
 * Whether a field's value is older (smaller) than `value`, or missing. No order holds between a number and a date.
 * @throws {UsageError} At the first date where `value` is a number (20261101 as text stopped at once), or the reverse.
 */
function olderThan(field: string, value: string): (own: unknown) => boolean {
  const instant = instantOf(value);
  const hasInstant = !Number.isNaN(instant);
  const number = NUMBER.test(value) ? Number(value) : NaN;
  const dashed = value.replace(/^(\d{4})(\d\d)(\d\d)$/, "$1-$2-$3"); // 20261101
  const numberOnDates = `dates, not numbers: write a date, e.g. ${
    isRealDate(dashed) ? dashed : "2026-11-24"
  }`;
  return (own) => {
    if (own === undefined || own === null) return true;
    const isNumber = typeof own === "number";
    if (isNumber && !Number.isNaN(number)) return own < number;
    const text = typeof own === "string" ? own : JSON.stringify(own);
    const at = instantOf(text);
    const onDates = !Number.isNaN(at);
    if (hasInstant && onDates) return at < instant;
    if ((!Number.isNaN(number) && onDates) || (hasInstant && isNumber)) {
      const what = onDates ? numberOnDates : "numbers, not dates: write one";
      throw new UsageError(`--since ${field}=${value}: ${field} holds ${what}`);
    }
    return text < value;
  };
}

/** The names `--fields` gives: split at commas, each trimmed. */
export const fieldNames = (text: string) =>
  text.split(",").map((field) => field.trim());
