// Internal: the order of keys a pass follows, and the refusal of a page out of it.

import { SyncError } from "./sync_error.ts";
import type { SyncCheckpoint } from "./sink.ts";

/** An item's place in the order: its sort value (the id by default), then its id. */
export type SyncKey = NonNullable<SyncCheckpoint["edge"]>;

/** Orders two sort values: numbers by value before strings by UTF-16 code units (one total order: 9 < 10 < "10" < "9"). */
function compareValues(a: string | number, b: string | number): number {
  if (typeof a !== typeof b) return typeof a === "number" ? -1 : 1;
  if (typeof a === "number") return a - (b as number);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Orders two keys ascending: by sort value, then by id. */
export function compareKeys(a: SyncKey, b: SyncKey): number {
  return compareValues(a.value, b.value) || compareValues(a.id, b.id);
}

/** A pass's order of keys: ascending, or newest first. */
export type Order = (a: SyncKey, b: SyncKey) => number;

/** Equal keys are the same item twice (kept once, by its last occurrence). */
export function checkOrder(
  keys: readonly SyncKey[],
  order: Order,
  plan: { page: number; limit: number },
) {
  const at = keys.findIndex((key, i) => i > 0 && order(keys[i - 1]!, key) > 0);
  if (at < 0) return;
  const [before, after] = [keys[at - 1]!, keys[at]!];
  const rule = typeof before.value === typeof after.value // a field of numbers and texts: each service has its order
    ? "items of one sort value must come by id, compared as text"
    : "numbers order before texts: sort by a field of one kind";
  const message =
    `Cannot sync: the list is not in the asked order: '${after.id}' (sort value ${
      shown(after.value)
    }) came after '${before.id}' (${
      shown(before.value)
    }) (page ${plan.page}, limit ${plan.limit}; ${rule})`;
  throw new SyncError(message, "unordered");
}

/** A sort value as JSON (a number and a text apart), at most 40 characters. */
const shown = (value: string | number) => JSON.stringify(value).slice(0, 40);
