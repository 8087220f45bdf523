// The paginator's public types, apart so that paginate.ts and the option checks both name them.

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
   * @default {50}
   */
  limit?: number;
  /**
   * The first page to request.
   * @default {1}
   */
  page?: number;
  /** Field to sort by; sent only when given (the service has its own default order). */
  sortBy?: string;
  /** Sort direction; sent only when given (the service's default is unknown). */
  sortDirection?: SortDirection;
  /**
   * Stop after yielding this many items.
   * @default {Infinity}
   */
  maxItems?: number;
  /**
   * Stop after this many pages.
   * @default {Infinity}
   */
  maxPages?: number;
  /**
   * Page requests in flight, 1 to 64; items still come in order, and at most `concurrency - 1` pages
   * past the end are requested (then aborted).
   * @default {1}
   */
  concurrency?: number;
  /**
   * Returns a key per item; an item whose key was already yielded is dropped (offset paging repeats
   * items inserted ahead while you page). With `concurrency`, the first page is read alone, and once a
   * page holds items seen (the list moved) the pages in flight are dropped and read again one at a time.
   * It keeps every key in memory and cannot bring back items skipped by deletions; full pages of seen
   * items end with a `RepeatedPageError` (after as many as were read again once the list moved).
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
 * only items seen), or full pages repeat earlier ones two in a row (64 in a row for pages of one item:
 * a list of `limit: 1` whose values repeat that long ends too; page it with a larger `limit`): the
 * server seems to ignore `page`, and paging on would never end.
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
