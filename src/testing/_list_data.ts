// The fake service's generated lists, and how it pages and sorts them.

import type { ListSizes } from "./fake_options.ts";
import { json } from "./_fake_http.ts";

/** One item of a fake list. */
export type Item = Record<string, string | number>;

/** One list endpoint: its items, its id field, sortable fields and default order. */
export interface ListResource {
  readonly name: string;
  readonly idField: string;
  readonly sortable: readonly string[];
  readonly defaultSort: string;
  readonly items: Item[];
  /** The items sorted per `"<field> <direction>"`, kept sorted as items come and go (_list_churn.ts). */
  readonly sorted: Map<string, Item[]>;
  /** The number of the next generated id: ids are never reused. */
  serial: number;
  /** The latest `creationDate` appended (epoch ms): the next comes after it, though that item was removed since. */
  appended?: number;
  /** Epoch ms where the list's date range starts (see {@linkcode offset}). */
  readonly epoch: number;
}

const COMPANY_WORDS = `Acme Borealis Cobalt Delta Ember Fjord Granite Harbor
  Indigo Juniper`.split(/\s+/);
const COMPANY_KINDS = ["Logistics", "Foods", "Studio", "Labs", "Transport"];
const FIRST_NAMES = "Ada Bo Chen Dana Eli Farah Gus Hana".split(" ");
const LAST_NAMES = ["Ito", "Jensen", "Kowalski", "Lopez", "Moreau", "Nakamura"];
/** How far back generated creation dates spread: 300 days. */
const SPAN = 300 * 86_400_000;
/** How old the newest generated item of a list is: minutes, by the fake's clock. */
const NEWEST_AGE = 3 * 60_000;

/** A small seeded generator (mulberry32): the same seed gives the same data. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One of `list` at random; `undefined` when it is empty. */
export function pick<T>(random: () => number, list: readonly T[]) {
  return list[Math.floor(random() * list.length)];
}

/** The id of generated item `n`, e.g. `tx_000042`. */
export function id(prefix: string, n: number): string {
  return `${prefix}_${String(n).padStart(6, "0")}`;
}

/** A place in the date range, in ms from its start: one draw of `random`. */
export function offset(random: () => number): number {
  return Math.floor(random() * SPAN);
}

/**
 * Dates items drawn with {@linkcode offset} (their `creationDate` a place in the range so far): the
 * newest is {@linkcode NEWEST_AGE} old at `now`, every order as drawn. Returns the range's start.
 */
function anchor(items: Item[], now: number): number {
  const placeOf = (item: Item) => item.creationDate as number;
  const newest = items.reduce((a, item) => Math.max(a, placeOf(item)), 0);
  const epoch = now - NEWEST_AGE - (items.length === 0 ? SPAN : newest);
  for (const item of items) {
    item.creationDate = new Date(epoch + placeOf(item)).toISOString();
  }
  return epoch;
}

/** Each list's id field, sort fields, and order without `sortBy` (`defaultSort`: the service's). */
const SHAPES = [
  {
    name: "organizations",
    idField: "organizationID",
    sortable: ["organizationID", "companyName", "creationDate"],
    defaultSort: "companyName",
  },
  {
    name: "transactions",
    idField: "transactionID",
    sortable: ["transactionID", "creationDate", "amount"],
    defaultSort: "creationDate",
  },
  {
    name: "cardholders",
    idField: "cardholderID",
    sortable: ["cardholderID", "name", "creationDate"],
    defaultSort: "cardholderID",
  },
] as const;

/** The three lists from `seed`, the newest item of each a few minutes old at `now`. */
export function generateLists(sizes: ListSizes, seed: number, now: number) {
  // As drawn, each item's `creationDate` is its place in the date range.
  const random = seededRandom(seed);
  const dated = () => offset(random);
  const draw = (name: keyof ListSizes) =>
    Array.from(
      { length: sizes[name] },
      (_, n) => itemOf(name, n + 1, random, dated, sizes.organizations),
    );
  // Drawn in this order, not SHAPES': a seed's lists stay as they were.
  const drawn = {
    organizations: draw("organizations"),
    cardholders: draw("cardholders"),
    transactions: draw("transactions"),
  };
  return new Map(SHAPES.map((shape): [string, ListResource] => {
    const items = drawn[shape.name];
    return [shape.name, {
      ...shape,
      items,
      sorted: new Map(),
      serial: items.length,
      epoch: anchor(items, now),
    }];
  }));
}

/**
 * Item `n` of list `name`: an organization's or cardholder's words drawn from `random` before its date from `date`, a
 * transaction's date before its amount (a seed's lists stay as they were); a cardholder belongs to one of `organizations`.
 */
export function itemOf(
  name: string,
  n: number,
  random: () => number,
  date: () => Item["creationDate"],
  organizations = 1,
): Item {
  if (name === "transactions") {
    return {
      transactionID: id("tx", n),
      creationDate: date(),
      amount: amountOf(random),
      currency: "EUR",
      organizationID: id("org", 1),
    };
  }
  if (name === "organizations") {
    const company = `${pick(random, COMPANY_WORDS)} ${
      pick(random, COMPANY_KINDS)
    }`;
    return {
      organizationID: id("org", n),
      companyName: `${company} ${n}`,
      creationDate: date(),
    };
  }
  return {
    cardholderID: id("ch", n),
    name: `${pick(random, FIRST_NAMES)} ${pick(random, LAST_NAMES)}`,
    organizationID: id("org", ((n - 1) % Math.max(1, organizations)) + 1),
    creationDate: date(),
  };
}

/** A transaction's amount in EUR, to the cent: one draw of `random`. */
export function amountOf(random: () => number): number {
  return Math.round(random() * 100_000) / 100;
}

/** A query the service refuses, with the reason for its 400. */
class BadQuery extends Error {}

function badQuery(name: string, rule: string, received: unknown): BadQuery {
  return new BadQuery(`'${name}' ${rule}: received ${received}`);
}

function readInteger(params: URLSearchParams, name: string, fallback: number) {
  const text = params.get(name);
  if (text === null) return fallback;
  const value = Number(text);
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(value) || value < 1) {
    throw badQuery(name, "must be a positive integer", text);
  }
  return value;
}

/** How the service serves its lists. */
interface ListServing {
  readonly lists: Map<string, ListResource>;
  readonly listEnvelope: "object" | "array";
  /** Changes the list before each page, as churn does. */
  readonly churn: ((resource: ListResource) => void) | undefined;
  readonly maxLimit: number;
  readonly cutAtMax: boolean;
}

/** The page `params` asks for, sorted as the service sorts, and its size (`limit` as served). */
function pageOf(
  resource: ListResource,
  params: URLSearchParams,
  { maxLimit, cutAtMax }: ListServing,
): { items: readonly Item[]; limit: number } {
  // Its own default within its largest (50 past a maxLimit of 10 was refused).
  const asked = readInteger(params, "limit", Math.min(50, maxLimit));
  // Some services cut a page to their largest size instead of refusing it.
  const limit = cutAtMax ? Math.min(asked, maxLimit) : asked;
  if (limit > maxLimit) {
    throw badQuery("limit", `must be at most ${maxLimit}`, limit);
  }
  const page = readInteger(params, "page", 1);
  const sortBy = params.get("sortBy") ?? resource.defaultSort;
  if (!resource.sortable.includes(sortBy)) {
    const fields = resource.sortable.join(", ");
    throw badQuery("sortBy", `must be one of ${fields}`, sortBy);
  }
  const direction = params.get("sortDirection") ?? "ASC";
  if (direction !== "ASC" && direction !== "DESC") {
    throw badQuery("sortDirection", "must be ASC or DESC", direction);
  }
  const key = `${sortBy} ${direction}`;
  // Sorted once and kept: a crawl of a million must not sort a million per page.
  const sorted = resource.sorted.get(key) ??
    resource.items.toSorted(orderOf(resource, key));
  resource.sorted.set(key, sorted);
  return { items: sorted.slice((page - 1) * limit, page * limit), limit };
}

/** One page of a list, as the service sends it. */
export function answerList(
  serving: ListServing,
  request: Request,
  name: string,
): Response {
  const resource = serving.lists.get(name);
  if (resource === undefined) return json(404, { error: "not_found" });
  serving.churn?.(resource);
  const params = new URL(request.url).searchParams;
  let page: ReturnType<typeof pageOf>;
  try {
    page = pageOf(resource, params, serving);
  } catch (error) {
    if (!(error instanceof BadQuery)) throw error;
    return json(400, { error: "bad_request", message: error.message });
  }
  if (serving.listEnvelope === "array") return json(200, page.items);
  // The size served, cut or default too (not the limit asked, over a page cut to maxLimit).
  return json(200, {
    [name]: page.items,
    page: Number(params.get("page") ?? 1),
    limit: page.limit,
  });
}

/** The comparison of the order named `"<field> <direction>"`; ties by id. */
export function orderOf(resource: ListResource, key: string) {
  const [sortBy, direction] = key.split(" ") as [string, string];
  const sign = direction === "ASC" ? 1 : -1;
  const idField = resource.idField;
  return (a: Item, b: Item) =>
    sign * (compare(a[sortBy], b[sortBy]) || compare(a[idField], b[idField]));
}

function compare(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}
