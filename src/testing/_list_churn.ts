// The fake's lists changing while paged; every cached order stays sorted (search and splice, no re-sort).

import {
  checkNumber,
  optionNames,
  requireKnownOptions,
  typeError,
} from "../core/_check.ts";
import {
  amountOf,
  id,
  type Item,
  itemOf,
  type ListResource,
  offset,
  orderOf,
  pick,
  seededRandom,
} from "./_list_data.ts";
import type { FakeChurn } from "./fake_options.ts";

const CONTEXT = "Cannot start fake partner API";

/** An item's id as callers name it: text, whatever the field holds. */
const idOf = ({ idField }: ListResource, item: Item) => String(item[idField]);

/** The change each list request makes, if churn is configured (from `seed`, so a run repeats). */
export function churner(
  churn: FakeChurn | undefined,
  seed: number,
  now: () => number,
): ((resource: ListResource) => void) | undefined {
  if (churn === undefined) return undefined;
  const names = optionNames<FakeChurn>()("append insertAnywhere remove update");
  requireKnownOptions(churn, names, CONTEXT, "churn");
  const { append, insertAnywhere, remove, update } = churn;
  const counts = { append, insertAnywhere, remove, update };
  for (const [field, n] of Object.entries(counts)) {
    checkNumber(n, 0, "non-negative integer", CONTEXT, `churn.${field}`);
  }
  const random = seededRandom(seed + 1);
  return (resource) => {
    const at = now();
    appendItems(resource, churn.append ?? 0, at, random);
    // Each change takes an item at random, while the list has any.
    const times = (count: number | undefined, change: (item: Item) => void) => {
      for (let i = 0; i < (count ?? 0); i++) {
        const item = pick(random, resource.items);
        if (item === undefined) break;
        change(item);
      }
    };
    times(churn.insertAnywhere, (model) =>
      insertItem(resource, {
        ...model,
        [resource.idField]: `${model[resource.idField]}_${++resource.serial}`,
        creationDate: new Date(resource.epoch + offset(random)).toISOString(),
      }));
    times(churn.remove, (gone) => removeItem(resource, idOf(resource, gone)));
    times(churn.update, (item) =>
      updateItem(resource, idOf(resource, item), {
        revision: Number(item.revision ?? 0) + 1,
        updatedAt: new Date(at).toISOString(),
        ...(resource.name === "transactions"
          ? { amount: amountOf(random) }
          : {}),
      }));
  };
}

/** Adds `count` items with the next ids, dated at or after every other (one removed since too), up to `now`. */
export function appendItems(
  resource: ListResource,
  count: number,
  now: number,
  random: () => number,
): void {
  if (count === 0) return;
  // At or after every item listed so far (a removed newest one too), ties after by id, spread up to the clock's now,
  // none after it. A date that does not parse (an item a test put in) places nothing.
  const latest = resource.items.reduce((at, item) => {
    const date = Date.parse(String(item.creationDate));
    return Number.isNaN(date) ? at : Math.max(at, date);
  }, resource.appended ?? -Infinity);
  const from = Number.isFinite(latest) ? latest : now - count * 1000;
  const step = Math.max(0, now - from) / count;
  const prefix = resource.name === "organizations" ? "org" : "ch";
  for (let i = 0; i < count; i++) {
    const n = ++resource.serial;
    const newest = Math.floor(from + step * (i + 1));
    const creationDate = new Date(newest).toISOString();
    // A new transaction is drawn whole; another list's is shaped as one it holds (in an empty one, as its first was).
    const model =
      resource.name === "transactions" || resource.items.length === 0
        ? itemOf(resource.name, n, random, () => creationDate)
        : {
          ...pick(random, resource.items),
          [resource.idField]: id(prefix, n),
          creationDate,
        };
    insertItem(resource, model);
    resource.appended = newest;
  }
}

/** Puts `item` into the list and every cached order. @throws {TypeError} (`item`) When it has no id or a taken one. */
export function insertItem(resource: ListResource, item: Readonly<Item>) {
  const { idField } = resource;
  const refused = (rule: string, received: string) =>
    typeError(`Cannot insert into ${resource.name}`, "item", rule, received);
  const key = item?.[idField];
  if (typeof key !== "string" && typeof key !== "number") {
    throw refused(`must have a string or number '${idField}'`, typeof key);
  }
  if (resource.items.some((other) => other[idField] === key)) {
    const rule = `must have a '${idField}' the list does not hold`;
    throw refused(rule, String(key));
  }
  const copy = { ...item };
  resource.items.push(copy);
  resort(resource, copy, "in");
}

/** Sets `fields` on the item with `id`, moving it in every cached order; whether it was there. */
export function updateItem(
  resource: ListResource,
  id: string,
  fields: Readonly<Record<string, string | number>>,
): boolean {
  const rule = typeof fields !== "object" || fields === null
    ? "must be an object"
    : Object.entries(fields).some(([, value]) =>
        typeof value !== "string" && typeof value !== "number"
      )
    ? "must hold only strings and numbers"
    : resource.idField in fields && idOf(resource, fields as Item) !== id
    ? `must not change '${resource.idField}'`
    : undefined;
  if (rule !== undefined) {
    const received = fields === null ? "null" : typeof fields;
    throw typeError(`Cannot update ${resource.name}`, "fields", rule, received);
  }
  const item = resource.items.find((item) => idOf(resource, item) === id);
  if (item === undefined) return false;
  resort(resource, item, "out");
  Object.assign(item, fields);
  resort(resource, item, "in");
  return true;
}

/** Takes the item with `id` out of the list; whether it was there. */
export function removeItem(resource: ListResource, id: string): boolean {
  const index = resource.items.findIndex((item) => idOf(resource, item) === id);
  if (index === -1) return false;
  const [item] = resource.items.splice(index, 1) as [Item];
  resort(resource, item, "out");
  return true;
}

/** Puts `item` into every cached order of `resource` (before the first item not before it), or takes it out. */
function resort(resource: ListResource, item: Item, way: "in" | "out"): void {
  for (const [order, sorted] of resource.sorted) {
    const compare = orderOf(resource, order);
    let at = 0; // how many are known to come before `item`
    for (let step = 2 ** 31; step >= 1; step /= 2) {
      const next = sorted[at + step - 1];
      if (next !== undefined && compare(next, item) < 0) at += step;
    }
    if (way === "in") sorted.splice(at, 0, item);
    else sorted.splice(at, 1);
  }
}

/** The list named `name`; an unknown one is a TypeError naming those there are. */
export function listNamed(lists: Map<string, ListResource>, name: string) {
  const resource = lists.get(name);
  if (resource !== undefined) return resource;
  const rule = `must be one of ${[...lists.keys()].join(", ")}`;
  throw typeError("Cannot change the fake's lists", "list", rule, String(name));
}
