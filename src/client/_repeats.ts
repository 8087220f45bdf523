// Internal: telling a page the server answered before, without keeping the pages: a list must end whatever the server
// sends, and one that ignores `page` may rotate its answers (A, B, A, B behind a balancer).

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

/** How many pages' numbers a walk keeps, each kind: a rotation of up to this many answers is caught. */
const REMEMBERED = 4096;

/**
 * Pages of one item in a row, each met twice before, that end a list (`limit: 1` behind a rotating server paged for
 * ever). A run of them cannot be told from a server switching among a few answers in any order: a list of `limit: 1`
 * whose values repeat that long ends, as one with two alike in a row does.
 */
const ONE_ITEM_RUN = 64;

/**
 * Says whether a full page repeats one: the page before, item by item; or earlier pages, whole, two pages in a row (a
 * server rotating k answers ends at page 2k + 2; {@linkcode ONE_ITEM_RUN} for pages of one item). A page's whole
 * content is read only when its size and ends were seen before (its ends alone ended lists whose values repeat).
 */
export function pageRepeats() {
  const ends = new Set<number>(), wholes = new Set<number>();
  let previous: { items: readonly unknown[]; ends: number } | undefined;
  let run = 0; // pages in a row, each whole as an earlier one
  return (items: readonly unknown[]): boolean => {
    const print = hashOf(
      `${items.length}\0${textOf(items[0])}\0${textOf(items.at(-1))}`,
    );
    const before = previous;
    previous = { items, ends: print };
    if (before?.ends === print && sameItems(items, before.items)) return true;
    if (!ends.has(print)) {
      remember(ends, print);
      run = 0;
      return false;
    }
    const one = items.length < 2;
    const whole = one ? print : hashOf(items.map(textOf).join("\0"));
    run = wholes.has(whole) ? run + 1 : 0;
    remember(wholes, whole);
    return run >= (one ? ONE_ITEM_RUN : 2);
  };
}

function remember(numbers: Set<number>, number: number) {
  numbers.add(number);
  if (numbers.size > REMEMBERED) numbers.delete(numbers.values().next().value!);
}

/** Whether `items` equals `previous` item by item (asked once their ends are equal). */
function sameItems(items: readonly unknown[], previous: readonly unknown[]) {
  if (previous.length !== items.length) return false;
  return items.every((item, at) => textOf(item) === textOf(previous[at]));
}

/** An item as text: JSON for JSON data and Dates; another value by its identity (a Map writes as `{}`; a cycle throws). */
function textOf(item: unknown): string {
  if (typeof item === "bigint") return `${item}n`;
  if (typeof item === "object" && item !== null) {
    const proto = Object.getPrototypeOf(item);
    // A Date writes its time (by identity, a server repeating pages of Dates paged for ever).
    const plain = proto === Object.prototype || proto === Array.prototype ||
      proto === null || proto === Date.prototype;
    if (plain) {
      try {
        return JSON.stringify(item);
      } catch {
        // A BigInt or a cycle inside: by identity.
      }
    }
  } else if (typeof item !== "function" && typeof item !== "symbol") {
    return JSON.stringify(item) ?? "undefined";
  }
  return identityOf(item as object | symbol);
}

const identities = new WeakMap<WeakKey, string>();
let made = 0;

/** A text of its own for each object or symbol (a symbol Symbol.for made is its key: the same symbol). */
function identityOf(value: object | symbol): string {
  if (typeof value === "symbol" && Symbol.keyFor(value) !== undefined) {
    return `\u0001${String(value)}`;
  }
  let text = identities.get(value as WeakKey);
  if (text === undefined) {
    identities.set(value as WeakKey, text = `\u0001${++made}`);
  }
  return text;
}

/** A string as a 53-bit number (cyrb53): pages remembered, not kept. */
function hashOf(text: string): number {
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
