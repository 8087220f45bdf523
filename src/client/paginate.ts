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

import { optionError } from "../core/_check.ts";
import { flatten, pageConfig, walkPages } from "./_walk.ts";

const CONTEXT = "Cannot paginate";

/**
 * The two sort directions the service knows.
 *
 * @example Handed to each page request
 * ```ts
 * import { paginate, type SortDirection } from "@partner-api/client/paginate";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const sortDirection: SortDirection = "DESC";
 * const pages = paginate(({ sortDirection }) => Promise.resolve([sortDirection]), { sortDirection, limit: 2 });
 * deepStrictEqual(await Array.fromAsync(pages), ["DESC"]);
 * ```
 */
export type SortDirection = "ASC" | "DESC";

/**
 * What {@linkcode paginate} asks `fetchPage` for.
 *
 * @example A fetchPage for any offset-paged endpoint
 * ```ts
 * import { type PageRequest, pageSearchParams } from "@partner-api/client/paginate";
 * import { equal } from "node:assert/strict";
 *
 * function pageUrl(request: PageRequest): string {
 *   return `https://api.partner.example/api/transactions?${pageSearchParams(request)}`;
 * }
 * equal(pageUrl({ page: 2, limit: 10 }), "https://api.partner.example/api/transactions?limit=10&page=2");
 * ```
 */
export interface PageRequest {
  /** The page number, from 1. */
  readonly page: number;
  /** Items per page. */
  readonly limit: number;
  /** Field to sort by, only when the caller gave one. */
  readonly sortBy?: string;
  /** Sort direction, only when the caller gave one. */
  readonly sortDirection?: SortDirection;
  /** Aborts when the caller's does or the page is no longer needed; always set by {@linkcode paginate}. */
  readonly signal?: AbortSignal;
  /** The priority to fetch the page at, only when the caller gave one: pass it to `fetch`. */
  readonly priority?: "high" | "low" | "auto";
}

/**
 * Options of {@linkcode paginate}.
 *
 * @example The newest 200 transactions, four pages at a time
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { collect, type PaginateOptions } from "@partner-api/client/paginate";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * type Transaction = { transactionID: string; creationDate: string };
 * await using api = await startFakePartnerApi();
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const options: PaginateOptions<Transaction> = {
 *   sortBy: "creationDate",
 *   sortDirection: "DESC",
 *   maxItems: 200,
 *   concurrency: 4,
 *   dedupeBy: (transaction) => transaction.transactionID,
 * };
 * const newest = await collect(client.list<Transaction>("transactions", options), { maxItems: 1000 });
 * equal(newest.length, 200);
 * equal(api.apiRequests, 4); // 50 a page: no page past the 200th item
 * ```
 */
export interface PaginateOptions<T> {
  /**
   * Items per page (a total is `maxItems`); always sent.
   *
   * @default {50}
   */
  limit?: number;
  /**
   * The first page to request.
   *
   * @default {1}
   */
  page?: number;
  /** Field to sort by; sent only when given (the service has its own default order). */
  sortBy?: string;
  /** Sort direction; sent only when given (the service's default is unknown). */
  sortDirection?: SortDirection;
  /**
   * Stop after yielding this many items.
   *
   * @default {Infinity}
   */
  maxItems?: number;
  /**
   * Stop after this many pages.
   *
   * @default {Infinity}
   */
  maxPages?: number;
  /**
   * Page requests in flight, 1 to 64; items still come in order, and at most `concurrency - 1` pages
   * past the end are requested (then aborted).
   *
   * @default {1}
   */
  concurrency?: number;
  /**
   * Returns a key per item; an item whose key was already yielded is dropped (offset paging repeats
   * items inserted ahead while you page). It keeps every key in memory and cannot bring back items
   * skipped by deletions; a full page of seen items ends with a `RepeatedPageError`.
   */
  dedupeBy?: (item: T) => unknown;
  /**
   * Stops before the first item for which it returns `true`, requesting no further page; with
   * `creationDate` `DESC` this is "since". Called once per item, in order, after `dedupeBy`.
   */
  until?: (item: T) => boolean;
  /**
   * Aborts the iteration, which throws the signal's reason. To pass `Deno.serve`'s `request.signal`,
   * run with `--unstable-no-legacy-abort`: Deno 2.9 otherwise aborts it after every answer.
   */
  signal?: AbortSignal;
  /**
   * The priority of every page request, handed to `fetchPage`: `"low"` makes a client's crawl
   * background (see docs/rate-limit.md).
   *
   * @default {none: a client's list takes the client's own priority}
   */
  priority?: "high" | "low" | "auto";
}

/**
 * Options of {@linkcode collect}.
 *
 * @example A cap for collect()
 * ```ts
 * import { collect, type CollectOptions, paginate } from "@partner-api/client/paginate";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const asked: number[] = [];
 * const numbers = paginate(({ page, limit }) => {
 *   asked.push(page);
 *   return Promise.resolve(Array.from({ length: limit }, (_, i) => (page - 1) * limit + i));
 * }, { limit: 2 });
 * const cap: CollectOptions = { maxItems: 3 };
 * deepStrictEqual(await collect(numbers, cap), [0, 1, 2]);
 * deepStrictEqual(asked, [1, 2]); // no page past the cap
 * ```
 */
export interface CollectOptions {
  /** The most items to collect: required, so nothing loads a million items by accident. */
  maxItems: number;
}

/**
 * The `Error` that ends a list when a full page repeats the one before (or, with `dedupeBy`, holds
 * only items seen): the server seems to ignore `page`, and paging on would never end.
 *
 * @example Telling it from other failures
 * ```ts
 * import { collect, paginate, type RepeatedPageError } from "@partner-api/client/paginate";
 * import { rejects } from "node:assert/strict";
 *
 * const sameEveryTime = () => Promise.resolve([1, 2]); // a server that ignores `page`
 * await rejects(collect(paginate(sameEveryTime, { limit: 2 }), { maxItems: 100 }), (error: RepeatedPageError) => {
 *   return error.reason === "repeated-page" && error.page === 2;
 * });
 * ```
 */
export interface RepeatedPageError extends Error {
  /** Always `"repeated-page"`. */
  readonly reason: "repeated-page";
  /** The page that repeated. */
  readonly page: number;
}

/**
 * Iterates over every item of an offset-paged list, in order. It stops after the first page
 * shorter than `limit`, or at `maxPages`, `maxItems`, `until` or the caller's `break`, requesting no
 * page it does not need (at concurrency 1; above, it aborts those it no longer needs).
 *
 * @typeParam T The item type.
 * @param fetchPage Fetches one page from a {@linkcode PageRequest}, honouring its `signal`.
 * @param options Page size, first page, sort, caps, concurrency, dedupe, abort.
 * @returns An async iterator of the items.
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
    throw optionError(TypeError, CONTEXT, "fetchPage", "must be a function");
  }
  const config = pageConfig(options);
  const pages = walkPages<T, { items: readonly T[] }>(
    async (request) => ({ items: await fetchPage(request) }),
    config,
  );
  return flatten(pages, config.signal);
}

/**
 * Writes a page request as the service's query parameters (`sortBy`, `sortDirection` when present).
 *
 * @param request The page request.
 * @returns The query parameters.
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
  const params = new URLSearchParams({
    limit: String(request.limit),
    page: String(request.page),
  });
  if (request.sortBy !== undefined) params.set("sortBy", request.sortBy);
  if (request.sortDirection !== undefined) {
    params.set("sortDirection", request.sortDirection);
  }
  return params;
}

/**
 * Collects an async iterable into an array, up to a required cap, and stops the iteration there.
 *
 * @typeParam T The item type.
 * @param items The items, e.g. from {@linkcode paginate}.
 * @param options `maxItems`: the cap, required.
 * @returns At most `maxItems` items, in order.
 * @throws {RangeError} When `maxItems` is not a non-negative integer.
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
    throw optionError(
      RangeError,
      "Cannot collect",
      "maxItems",
      "must be a non-negative integer",
      String(maxItems),
    );
  }
  const collected: T[] = [];
  if (maxItems === 0) return collected;
  for await (const item of items) {
    collected.push(item);
    if (collected.length >= maxItems) break;
  }
  return collected;
}
