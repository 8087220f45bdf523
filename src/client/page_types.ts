// The paginator's public types, apart so that its entry (paginate.ts) and
// its option checks can both name them. Re-exported by "./paginate".

/**
 * The two sort directions the service knows.
 *
 * @example Newest first
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { collect, type SortDirection } from "@partner-api/client/paginate";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const newestFirst: SortDirection = "DESC";
 * const items = client.list<{ creationDate: string }>("transactions", {
 *   sortBy: "creationDate",
 *   sortDirection: newestFirst,
 * });
 * const [newest, next] = await collect(items, { maxItems: 2 });
 * ok(newest!.creationDate >= next!.creationDate);
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
  /**
   * Aborts when the caller's signal does, or when the page is no longer
   * needed. Always present when {@linkcode paginate} calls.
   */
  readonly signal?: AbortSignal;
  /**
   * The priority to fetch the page at (`RequestInit.priority`), only when
   * the caller gave one: pass it to `fetch` (a client's list does, and its
   * rate limiter reads it).
   */
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
   * Items per page: the size of each page requested, not a total (that is
   * `maxItems`); always sent.
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
   * Page requests kept in flight, 1 to 64. Items are still yielded in order;
   * at most `concurrency - 1` pages past the end are requested, and aborted.
   *
   * @default {1}
   */
  concurrency?: number;
  /**
   * Returns a key per item; an item whose key was already yielded is dropped.
   * Offset paging repeats items when new ones are inserted ahead of the
   * current page while you page (transactions by `creationDate` DESC); this
   * removes the repeats. It cannot bring back items skipped because others
   * were deleted meanwhile, and it keeps every key in memory. A full page
   * whose items were all seen before ends the iteration with an `Error`: the
   * server ignores `page`, and paging on would never end.
   */
  dedupeBy?: (item: T) => unknown;
  /**
   * Stops before the first item for which it returns `true`: that item and
   * every later one are left out, and no further page is requested (pages
   * already in flight are aborted). With `sortBy: "creationDate"` and
   * `sortDirection: "DESC"` this is "since": stop at the first item older
   * than a date. Called once per item, in order, after `dedupeBy`.
   */
  until?: (item: T) => boolean;
  /**
   * Aborts the iteration, which then throws the signal's reason. In a
   * `Deno.serve` handler, `request.signal` stops the list when the client
   * goes away: run with `--unstable-no-legacy-abort` (or `"unstable":
   * ["no-legacy-abort"]` in deno.json), as Deno 2.9 otherwise also aborts it
   * after every answer and warns each time a handler reads it.
   */
  signal?: AbortSignal;
  /**
   * The priority of every page request (Fetch's `RequestInit.priority`),
   * handed to `fetchPage` with each page. A client's `list` and `pages`
   * send their pages with it: `"low"` makes the crawl background, which
   * its rate limiter sends only when nothing else waits and the window
   * keeps its reserve free; any other value is live.
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
