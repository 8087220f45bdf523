/**
 * Offset pagination as the partner API does it (`limit`, `page` from 1, optional `sortBy` and
 * `sortDirection`): {@linkcode paginate} turns a function that fetches one page into an async
 * iterator of items, with parallel pages, early stops, abort and de-duplication.
 *
 * @example Paging an in-memory list
 * ```ts
 * import { collect, paginate } from "@partner-api/client/paginate";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const all = Array.from({ length: 120 }, (_, i) => i);
 * const items = await collect(
 *   paginate(({ page, limit }) => Promise.resolve(all.slice((page - 1) * limit, page * limit))),
 *   { maxItems: 1000 },
 * );
 * deepStrictEqual(items, all);
 * ```
 *
 * @module
 */

import {
  checkNumber,
  given,
  numberError,
  requireOptions,
  typeError,
} from "../core/_check.ts";
import {
  CONTEXT,
  flatten,
  pageConfig,
  requestFields,
  walkPages,
} from "./_walk.ts";
import type {
  CollectOptions,
  PageRequest,
  PaginateOptions,
} from "./page_types.ts";

export type * from "./page_types.ts";

/**
 * Iterates over every item of an offset-paged list, in order. It stops after the first page
 * shorter than `limit`, or at `maxPages`, `maxItems`, `until` or the caller's `break`, requesting no
 * page it does not need (at concurrency 1; above, it aborts those it no longer needs).
 * @param fetchPage Fetches one page from a {@linkcode PageRequest}, honouring its `signal`.
 * @throws {RangeError} At once, when `limit`, `page` or `concurrency` is not a positive integer,
 * or `maxItems` or `maxPages` is negative.
 * @throws {TypeError} At once, for a bad `sortBy`, `sortDirection`, `dedupeBy`, `until` or
 * `signal`; while iterating, for a page that is not an array.
 *
 * @example Stopping at the first item that is too old
 * ```ts
 * import { paginate } from "@partner-api/client/paginate";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const ages = [1, 2, 3, 4, 5, 6, 7, 8, 9]; // newest first
 * const asked: number[] = [];
 * const young = paginate(({ page, limit }) => {
 *   asked.push(page);
 *   return Promise.resolve(ages.slice((page - 1) * limit, page * limit));
 * }, { limit: 3, until: (age) => age > 4 });
 * deepStrictEqual(await Array.fromAsync(young), [1, 2, 3, 4]);
 * deepStrictEqual(asked, [1, 2]); // no page after the one that held 5
 * ```
 */
export function paginate<T>(
  fetchPage: (request: PageRequest) => Promise<readonly T[]>,
  options: PaginateOptions<T> = {},
): AsyncIterableIterator<T> {
  if (typeof fetchPage !== "function") {
    throw typeError(CONTEXT, "fetchPage", "must be a function");
  }
  requireOptions(options, CONTEXT);
  const config = pageConfig(options);
  const pages = walkPages<T, { items: readonly T[] }>(
    async (request) => ({ items: await fetchPage(request) }),
    config,
  );
  return flatten(pages, config.signal);
}

/**
 * Writes a page request as the service's query parameters (`sortBy`, `sortDirection` when present).
 * @throws {RangeError} When `limit` or `page` is not a positive integer (a `TypeError` when it is no number).
 * @throws {TypeError} For a request that is no object, or a bad `sortBy`, `sortDirection` or `priority`.
 *
 * @example Building a page address
 * ```ts
 * import { pageSearchParams } from "@partner-api/client/paginate";
 * import { equal } from "node:assert/strict";
 *
 * const query = pageSearchParams({ page: 2, limit: 50, sortBy: "creationDate", sortDirection: "DESC" });
 * equal(query.toString(), "limit=50&page=2&sortBy=creationDate&sortDirection=DESC");
 * ```
 */
export function pageSearchParams(request: PageRequest): URLSearchParams {
  // A request built by hand is checked as `paginate` checks its options (`page: -1` was written as it was).
  requireOptions(request, WRITING, "request");
  const [limit, page] = (["limit", "page"] as const).map((field) =>
    checkNumber(request[field], undefined, "positive integer", WRITING, field)
  );
  const { sortBy, sortDirection } = requestFields(request, WRITING);
  return new URLSearchParams({
    limit: String(limit),
    page: String(page),
    ...given({ sortBy, sortDirection }),
  });
}

const WRITING = "Cannot write page parameters";

/**
 * Collects an async iterable into an array, up to a required cap, and stops the iteration there.
 * @returns At most `maxItems` items, in order.
 * @throws {RangeError} When `maxItems` is not a non-negative integer (a `TypeError` when it is no number).
 *
 * @example Loading the first 100 items at most
 * ```ts
 * import { collect, paginate } from "@partner-api/client/paginate";
 * import { equal } from "node:assert/strict";
 *
 * const endless = paginate(({ page, limit }) =>
 *   Promise.resolve(Array.from({ length: limit }, (_, i) => (page - 1) * limit + i))
 * );
 * const first = await collect(endless, { maxItems: 100 });
 * equal(first.length, 100);
 * ```
 */
export async function collect<T>(
  items: AsyncIterable<T>,
  options: CollectOptions,
): Promise<T[]> {
  const maxItems = options?.maxItems;
  if (!Number.isSafeInteger(maxItems) || maxItems < 0) {
    const rule = "must be a non-negative integer";
    throw numberError(maxItems, "Cannot collect", "maxItems", rule);
  }
  const collected: T[] = [];
  if (maxItems === 0) return collected;
  for await (const item of items) {
    collected.push(item);
    if (collected.length >= maxItems) break;
  }
  return collected;
}
