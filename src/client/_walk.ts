// The one place page boundaries live: pages in order, where a list ends, the paginator's options.

import { raceAbort } from "../core/_deadlines.ts";
import type { PageRequest, PaginateOptions } from "./page_types.ts";
import { pageRepeats, repeatedPage } from "./_repeats.ts";
import {
  checkAtMost,
  checkNumber,
  given,
  oneOf,
  optionNames,
  requireFunction,
  requireKnownOptions,
  requireSignal,
  requireSortField,
} from "../core/_check.ts";
import { checkPriority } from "../core/_rate_options.ts";

export const CONTEXT = "Cannot paginate";
export const PAGE_OPTIONS = optionNames<PaginateOptions<unknown>>()(
  "limit page sortBy sortDirection maxItems maxPages concurrency dedupeBy until signal priority",
);

/** What a page fetcher gives back: the page's items and anything else about it. */
export interface Fetched<T> {
  readonly items: readonly T[];
}

/** One page as the walk yields it; its items are read lazily: read them all before the next page. */
export interface Walked<T, F extends Fetched<T>> {
  readonly page: number;
  /** The items kept: after `dedupeBy`, and cut at `until` or `maxItems`. */
  readonly items: Iterable<T>;
  readonly fetched: F;
}

function requestPage<T, F>(
  fetchPage: (request: PageRequest) => Promise<F>,
  config: PageConfig<T>,
  page: number,
) {
  const controller = new AbortController();
  const { limit, fields, signal: caller } = config;
  const signal = caller
    ? AbortSignal.any([caller, controller.signal])
    : controller.signal;
  const result =
    (async () => await fetchPage({ page, limit, ...fields, signal }))();
  // A page abandoned in flight may still reject; nobody is waiting for it.
  result.catch(() => {});
  return { page, controller, result };
}

/** What the items read so far of the walk's pages came to. */
interface Tally {
  /** Items kept, in all pages. */
  kept: number;
  /** Items of this page not seen before, `until`'s included. */
  fresh: number;
  /** `until` or the cap ended the list on this page. */
  last: boolean;
}

/** The items a page keeps: the new ones up to `until` and the cap. */
function keep<T>(
  items: readonly T[],
  config: PageConfig<T>,
  seen: Set<unknown>,
  tally: Tally,
): Iterable<T> {
  const { dedupeBy, until, maxItems } = config;
  tally.fresh = 0;
  // The common case, a whole page kept, costs no generator.
  if (
    dedupeBy === undefined && until === undefined &&
    tally.kept + items.length < maxItems
  ) {
    tally.fresh = items.length;
    tally.kept += items.length;
    return items;
  }
  return kept(items, config, seen, tally);
}

function* kept<T>(
  items: readonly T[],
  { dedupeBy, until, maxItems }: PageConfig<T>,
  seen: Set<unknown>,
  tally: Tally,
): Generator<T, undefined, undefined> {
  for (const item of items) {
    if (dedupeBy !== undefined) {
      const key = dedupeBy(item);
      if (seen.has(key)) continue;
      seen.add(key);
    }
    tally.fresh++;
    if (until?.(item) === true) {
      tally.last = true;
      return;
    }
    if (++tally.kept >= maxItems) tally.last = true;
    yield item;
    if (tally.last) return;
  }
}

/** The items of a fetched page, which must be an array of at most `limit` (a source that sends more ignores it). */
function itemsOf<T>(fetched: Fetched<T>, page: number, limit: number) {
  const items = fetched.items as unknown;
  const fault = !Array.isArray(items)
    ? `is not an array: received ${items === null ? "null" : typeof items}`
    : items.length > limit
    ? `holds more items than 'limit' (${limit}): received ${items.length}`
    : undefined;
  if (fault === undefined) return items as readonly T[];
  throw new TypeError(`${CONTEXT}: page ${page} ${fault}`);
}

/** Aborts the pages in flight, saying `why`; returns them, in order. */
function abandon<T, F>(
  pending: ReturnType<typeof requestPage<T, F>>[],
  why: string,
) {
  const dropped = pending.splice(0);
  for (const { controller } of dropped) {
    controller.abort(new DOMException(why, "AbortError"));
  }
  return dropped;
}

/** The list's pages in order, each once (an empty one too); no needless request; those in flight aborted at the end. */
export async function* walkPages<T, F extends Fetched<T>>(
  fetchPage: (request: PageRequest) => Promise<F>,
  config: PageConfig<T>,
): AsyncGenerator<Walked<T, F>, undefined, undefined> {
  const { limit, maxItems, concurrency, signal } = config;
  const seen = new Set<unknown>();
  const pending: ReturnType<typeof requestPage<T, F>>[] = [];
  const tally: Tally = { kept: 0, fresh: 0, last: false };
  const repeats = pageRepeats();
  let first = true;
  let nextPage = config.firstPage;
  // With `dedupeBy`, the first page alone: every other is then read after it.
  let inFlight = config.dedupeBy ? 1 : concurrency;
  let readAgain = 0; // pages in flight when the list was seen moving, read again
  let allSeen = 0; // full pages in a row of items all seen
  try {
    signal?.throwIfAborted();
    while (true) {
      while (
        pending.length < inFlight && nextPage <= config.lastPage &&
        tally.kept + pending.length * limit < maxItems
      ) {
        pending.push(requestPage(fetchPage, config, nextPage++));
      }
      const head = pending.shift();
      if (head === undefined) return;
      const fetched = await raceAbort(head.result, signal);
      const items = itemsOf(fetched, head.page, limit);
      // (With `dedupeBy`, a page seen before is one of items all seen: judged below.)
      if (!config.dedupeBy && items.length === limit && repeats(items)) {
        throw repeatedPage(CONTEXT, head.page);
      }
      const chosen = keep(items, config, seen, tally);
      yield { page: head.page, items: chosen, fetched };
      signal?.throwIfAborted();
      if (tally.last || items.length < limit) return;
      allSeen = tally.fresh === 0 ? allSeen + 1 : 0;
      // Items all seen: the server ignores `page`; or the list grew by a page or more while pages read again were in
      // flight (read on through as many).
      if (allSeen > readAgain) throw repeatedPage(CONTEXT, head.page);
      // Seen moving (`dedupeBy`): the pages in flight are read again, one at a time: one read before the page before
      // it misses an item an insert ahead pushed across their boundary; read in order, it holds it.
      if (config.dedupeBy && tally.fresh < items.length) {
        const dropped = abandon(pending, "read again");
        nextPage = dropped[0]?.page ?? nextPage;
        inFlight = 1;
        readAgain = Math.max(readAgain, dropped.length);
      } else if (first) inFlight = concurrency; // (the first page cannot show a move)
      first = false;
    }
  } finally {
    abandon(pending, "the paginator no longer needs this page");
  }
}

/** The items of `pages`, the signal looked at after each; by index (`for...of` cost a fifth more). */
export async function* flatten<T>(
  pages: AsyncIterator<{ readonly items: Iterable<T> }>,
  signal: AbortSignal | undefined,
): AsyncGenerator<T, undefined, undefined> {
  try {
    while (true) {
      const page = await pages.next();
      if (page.done === true) return;
      const { items } = page.value;
      if (!Array.isArray(items)) {
        for (const item of items) {
          yield item;
          signal?.throwIfAborted();
        }
        continue;
      }
      for (let at = 0; at < items.length; at++) {
        yield items[at] as T;
        signal?.throwIfAborted();
      }
    }
  } finally {
    // A break or a failure ends the pages (and aborts those in flight).
    await pages.return?.();
  }
}

export type PageConfig<T> = Readonly<ReturnType<typeof pageConfig<T>>>;

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
  return checkAtMost(concurrency, MAX_CONCURRENCY, CONTEXT, "concurrency");
}

function countLimit(value: number | undefined, field: string): number {
  if (value === Infinity) return Infinity;
  return checkNumber(value, Infinity, "non-negative integer", CONTEXT, field);
}

/** What each page request carries, when given: the sort and the priority, each checked (`context` begins a refusal). */
export function requestFields(
  options: Pick<PageRequest, "sortBy" | "sortDirection" | "priority">,
  context = CONTEXT,
) {
  const { sortBy, sortDirection, priority } = options;
  const direction = sortDirection === undefined
    ? undefined
    : oneOf(sortDirection, ["ASC", "DESC"] as const, context, "sortDirection");
  const by = sortBy === undefined
    ? undefined
    : requireSortField(sortBy, context);
  const checked = checkPriority(priority, undefined, context);
  return given({ sortBy: by, sortDirection: direction, priority: checked });
}

export function pageConfig<T>(options: PaginateOptions<T>) {
  requireKnownOptions(options, PAGE_OPTIONS, CONTEXT);
  const { dedupeBy, until, signal } = options;
  requireFunction(dedupeBy, CONTEXT, "dedupeBy");
  requireFunction(until, CONTEXT, "until");
  requireSignal(signal, CONTEXT);
  const firstPage = positiveInteger(options.page, 1, "page");
  return {
    limit: positiveInteger(options.limit, 50, "limit"),
    firstPage,
    // No page past the largest number a request can name exactly: past it `nextPage++` stood still, for ever.
    lastPage: Math.min(
      firstPage + countLimit(options.maxPages, "maxPages") - 1,
      Number.MAX_SAFE_INTEGER,
    ),
    maxItems: countLimit(options.maxItems, "maxItems"),
    concurrency: concurrencyOf(options.concurrency),
    fields: requestFields(options),
    dedupeBy,
    until,
    signal,
  };
}
