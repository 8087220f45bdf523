// Internal: telling a page the server answered before, without keeping the pages: a list must end whatever the server
// sends (DESIGN's bounds), and one that ignores `page` may rotate its answers (A, B, A, B behind a balancer: outside
// attack r178b F1, a crawl that never ended).

import type { RepeatedPageError } from "./page_types.ts";

/** The `RepeatedPageError` when a full page repeats one before, or holds only items seen. */
export function repeatedPage(context: string, page: number): RepeatedPageError {
  return Object.assign(
    new Error(
      `${context}: page ${page} repeats items seen before; the server seems to ignore 'page' (stopped instead of paging for ever)`,
    ),
    { reason: "repeated-page" as const, page },
  );
}

/**
 * Remembers the full pages of a walk by a number each (memory stays bounded: 20,000 pages take a set of numbers), and
 * says whether a page repeats one: the one before when every item is equal, an earlier one when its size, first and
 * last items are (a list moved by whole pages between the two reads looks the same; a list only ends so).
 */
export function pageRepeats() {
  const prints = new Set<number>();
  let previous: { items: readonly unknown[]; print: number } | undefined;
  return (items: readonly unknown[]): boolean => {
    const print = printOf(items);
    if (print === undefined) {
      // Items that are no JSON data (class instances, Maps, BigInts) compare by identity, with the page before only.
      const same = previous !== undefined &&
        items.every((item, at) => item === previous!.items[at]);
      previous = { items, print: NaN };
      return same;
    }
    const before = previous;
    previous = { items, print };
    if (before?.print === print && sameItems(items, before.items)) return true;
    if (prints.has(print) && before?.print !== print) return true;
    prints.add(print);
    return false;
  };
}

/** Whether `items` equals `previous` item by item, as JSON data (asked once their prints are equal). */
function sameItems(items: readonly unknown[], previous: readonly unknown[]) {
  if (previous.length !== items.length) return false;
  for (let at = 0; at < items.length; at++) {
    if (
      items[at] !== previous[at] && dataOf(items[at]) !== dataOf(previous[at])
    ) return false;
  }
  return true;
}

/** A page's size, first and last items as JSON data, hashed (cyrb53); undefined where one is not JSON data. */
function printOf(items: readonly unknown[]): number | undefined {
  const first = dataOf(items[0]), last = dataOf(items.at(-1));
  if (first === undefined || last === undefined) return undefined;
  const text = `${items.length}\u0000${first}\u0000${last}`;
  let h1 = 0xdeadbeef, h2 = 0x41c6ce57;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    h1 = Math.imul(h1 ^ code, 2654435761);
    h2 = Math.imul(h2 ^ code, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^
    Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^
    Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/**
 * An item as JSON, if it is JSON data: a class instance or a Map writes as `{}` (every page of them looked the same:
 * r178b F2), and a BigInt or a cycle throws.
 */
function dataOf(item: unknown): string | undefined {
  if (typeof item === "object" && item !== null) {
    const proto = Object.getPrototypeOf(item);
    if (
      proto !== Object.prototype && proto !== Array.prototype && proto !== null
    ) return undefined;
  } else if (
    !["string", "number", "boolean"].includes(typeof item) && item !== null
  ) {
    return undefined;
  }
  try {
    return JSON.stringify(item);
  } catch {
    return undefined;
  }
}
