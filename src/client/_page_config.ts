// Internal: a paginator's options, checked all at once before any page is
// requested.

import { checkNumber, optionError } from "../core/_check.ts";
import type { PaginateOptions, SortDirection } from "./page_types.ts";

const CONTEXT = "Cannot paginate";

/** A paginator's checked options. */
export interface PageConfig<T> {
  readonly limit: number;
  readonly firstPage: number;
  readonly lastPage: number;
  readonly maxItems: number;
  readonly concurrency: number;
  readonly sort: { sortBy?: string; sortDirection?: SortDirection };
  readonly dedupeBy: ((item: T) => unknown) | undefined;
  readonly until: ((item: T) => boolean) | undefined;
  readonly signal: AbortSignal | undefined;
}

function positiveInteger(
  value: number | undefined,
  fallback: number,
  field: string,
): number {
  return checkNumber(value, fallback, "positive integer", CONTEXT, field);
}

/** More pages in flight than this gain nothing and can exhaust memory. */
const MAX_CONCURRENCY = 64;

function concurrencyOf(value: number | undefined): number {
  const concurrency = positiveInteger(value, 1, "concurrency");
  if (concurrency > MAX_CONCURRENCY) {
    throw optionError(
      RangeError,
      CONTEXT,
      "concurrency",
      `must be at most ${MAX_CONCURRENCY}`,
      String(value),
    );
  }
  return concurrency;
}

function countLimit(value: number | undefined, field: string): number {
  if (value === Infinity) return Infinity;
  return checkNumber(value, Infinity, "non-negative integer", CONTEXT, field);
}

function sortOptions(
  sortBy: unknown,
  sortDirection: unknown,
): PageConfig<unknown>["sort"] {
  if (sortBy !== undefined && (typeof sortBy !== "string" || sortBy === "")) {
    throw optionError(
      TypeError,
      CONTEXT,
      "sortBy",
      "must be a non-empty string",
      JSON.stringify(sortBy),
    );
  }
  if (
    sortDirection !== undefined && sortDirection !== "ASC" &&
    sortDirection !== "DESC"
  ) {
    throw optionError(
      TypeError,
      CONTEXT,
      "sortDirection",
      'must be "ASC" or "DESC"',
      JSON.stringify(sortDirection),
    );
  }
  return {
    ...(sortBy === undefined ? {} : { sortBy }),
    ...(sortDirection === undefined ? {} : { sortDirection }),
  };
}

export function pageConfig<T>(options: PaginateOptions<T>): PageConfig<T> {
  const { dedupeBy, until, signal } = options;
  for (const [name, value] of [["dedupeBy", dedupeBy], ["until", until]]) {
    if (value !== undefined && typeof value !== "function") {
      throw optionError(
        TypeError,
        CONTEXT,
        name as string,
        "must be a function",
      );
    }
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw optionError(
      TypeError,
      CONTEXT,
      "signal",
      "must be an AbortSignal",
    );
  }
  const firstPage = positiveInteger(options.page, 1, "page");
  return {
    limit: positiveInteger(options.limit, 50, "limit"),
    firstPage,
    lastPage: firstPage + countLimit(options.maxPages, "maxPages") - 1,
    maxItems: countLimit(options.maxItems, "maxItems"),
    concurrency: concurrencyOf(options.concurrency),
    sort: sortOptions(options.sortBy, options.sortDirection),
    dedupeBy,
    until,
    signal,
  };
}
