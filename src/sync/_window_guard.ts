// Internal: the guard judged before each sweep window commits, over the copy's unseen rows read once when the sweep
// starts (the sink's `liveRows`): a window past `maxDeletes` stops the run. The cycle's end judges again (the backstop).

import { compareKeys, type SyncKey } from "./_window.ts";
import { type RecentDeletes, tooMany } from "./_deletes.ts";
import { parsedJson } from "./_checkpoint.ts";
import { tried } from "../core/_check.ts";

/** The unseen rows of the cycle under way, keyed by id, and what the guard weighs them against. */
export interface WindowGuard {
  /** Live rows the cycle has not seen yet, id → key; a window's ids leave it. */
  readonly unseen: Map<string, SyncKey>;
  /** Live rows of the copy when the sweep started. */
  readonly held: number;
  readonly maxDeletes: number;
  /** The last 24 hours when the sweep started: a window weighs its share of their largest size, not their deletes. */
  readonly recent: RecentDeletes;
  /** The pass reads newest first: rows at or after a window's last key are behind it. */
  readonly descending: boolean;
  /** The cycle's cursor stood on a row of the copy when the sweep started (not on an item the copy lacked). */
  readonly edgeHeld?: boolean;
  /** Once a window broke the guard: the unseen rows the last window read passed (a refusal quotes it). */
  refused?: number;
  /** Unseen rows that windows read twice alike passed once more: two reads of another list weigh as two windows. */
  doubled: number;
  /** The first id of the last window taken though doubted (read twice alike): the engine asks the sink about it. */
  retaken?: string;
  /** The unseen ids in the pass's order, the first `at` passed (to key `last`), `behind` of them unseen: counted once. */
  readonly passed: {
    readonly order: readonly string[];
    at: number;
    last: SyncKey | null;
    behind: number;
  };
}

/** A window as the doubter sees it: its ids and where it ends. */
type Read = { ids: readonly string[]; state: { edge: SyncKey | null } };

export type CopyRow = Readonly<{ id: string; item: unknown; seen: boolean }>;

/** A row of the copy as a sink lists it: a seen one without its item (`item` is not called). */
export function copyRow(id: string, seen: boolean, item: () => unknown) {
  return seen ? { id, item: undefined, seen } : { id, item: item(), seen };
}

/** The items of JSON texts, parsed as one array (V8 parses it faster than each), else each alone (as before). */
export function parsedItems(all: readonly string[]): unknown[] {
  const items = parsedJson(`[${all}]`) as unknown[] | undefined; // JSON.stringify's texts
  return items?.length === all.length ? items : all.map((t) => JSON.parse(t));
}

/** The largest copy judged per window (0.3 s per 100,000 SQLite rows, 50 MB at 200,000); a larger one at its end only. */
export const MAX_GUARDED_ROWS = 250_000;

/** The guard over `rows`, each unseen row keyed by `keyOf` (one it cannot key is left to the end); none past `most` rows, or for none. */
export async function windowGuard(
  rows: AsyncIterable<CopyRow>,
  keyOf: (item: unknown) => SyncKey,
  figures: Pick<WindowGuard, "maxDeletes" | "recent" | "descending"> & {
    readonly edge?: string | undefined;
  },
  most: number = MAX_GUARDED_ROWS,
): Promise<WindowGuard | undefined> {
  const unseen = new Map<string, SyncKey>();
  let edgeHeld = false, held = 0, named = true; // every unseen row's id its key's: the keys sorted alone give the order (half the cost)
  for await (const row of rows) {
    if (++held > most) return undefined;
    edgeHeld ||= row.id === figures.edge;
    // A JSONL copy lists a moved item's old line, then the head's after it: one row, the last line's.
    if (row.seen) {
      if (unseen.delete(row.id)) held--;
      continue;
    }
    const key = tried(() => keyOf(row.item));
    if (key === undefined) continue;
    if (unseen.has(row.id)) held--;
    unseen.set(row.id, key);
    named &&= key.id === row.id;
  }
  // None listed: an empty copy has nothing to remove, and a sink may list none of one too large to judge.
  if (held === 0) return undefined;
  const sign = figures.descending ? -1 : 1;
  const by = (a: SyncKey, b: SyncKey) => sign * compareKeys(a, b);
  const order = named
    ? [...unseen.values()].sort(by).map((key) => key.id)
    : [...unseen].sort(([, a], [, b]) => by(a, b)).map(([id]) => id);
  const passed = { order, at: 0, last: null, behind: 0 };
  return { ...figures, unseen, held, passed, edgeHeld, doubled: 0 };
}

/**
 * True when a window must not commit: the unseen rows at or before its `last` key (all once it `ended` the cycle), its
 * `ids` seen, break the guard, or a window before did (`refused` then counts what the windows so far passed).
 */
export function heldBack(
  guard: WindowGuard,
  window: {
    readonly ids: readonly string[];
    readonly last: SyncKey | null;
    readonly ended: boolean;
  },
): boolean {
  const { unseen, passed, held, maxDeletes, recent, refused = 0 } = guard;
  const sign = guard.descending ? -1 : 1;
  for (const id of window.ids) {
    const key = unseen.get(id);
    unseen.delete(id); // and the count of those passed, if it was among them
    if (key === undefined || passed.last === null) continue;
    if (sign * compareKeys(key, passed.last) <= 0) passed.behind--;
  }
  const behind = passedUnseen(guard, window.last, window.ended) +
    guard.doubled;
  // The end's base, not its deletes: never stricter than the end would be.
  const base = { deleted: 0, largest: recent.largest };
  if (guard.refused === undefined && !tooMany(behind, held, maxDeletes, base)) {
    return false;
  }
  guard.refused = Math.min(passed.order.length, Math.max(refused, behind)); // `behind` counts doubted rows twice
  return true;
}

/** The unseen rows a pass standing at `last` has passed (its windows move forward; one that went back counts anew). */
export function passedUnseen(
  guard: Pick<WindowGuard, "unseen" | "descending" | "passed">,
  last: SyncKey | null,
  ended: boolean,
): number {
  if (ended) return guard.unseen.size;
  if (last === null) return 0;
  const { passed } = guard, sign = guard.descending ? -1 : 1;
  if (passed.last !== null && sign * compareKeys(last, passed.last) < 0) {
    Object.assign(passed, { at: 0, behind: 0 });
  }
  const walked = unseenUpTo(guard, passed.at, last);
  passed.behind += walked.count;
  Object.assign(passed, { at: walked.at, last });
  return passed.behind;
}

/** From `from` in the pass's order, the unseen rows at or before `last` (a seen one is passed): how many, and the stop. */
function unseenUpTo(
  guard: Pick<WindowGuard, "unseen" | "descending" | "passed">,
  from: number,
  last: SyncKey,
): { at: number; count: number } {
  const { unseen, passed: { order } } = guard, sign = guard.descending ? -1 : 1;
  let at = from, count = 0;
  while (
    at < order.length &&
    sign * compareKeys(unseen.get(order[at]!) ?? last, last) <= 0
  ) {
    if (unseen.has(order[at++]!)) count++;
  }
  return { at, count };
}

/**
 * Doubts a sweep window once when it holds no row the cycle has yet to see though its range passes some: another
 * list's answer (a service's misrouted read), or every such row gone. Read again alike, it is taken (`retaken`), and
 * the guard weighs what it passes twice (else a doubted read of another list, then its re-read, weighed as one window).
 */
export function doubter(guard: WindowGuard | undefined) {
  let doubted: string | undefined;
  return ({ ids, state: { edge } }: Read) => {
    if (guard === undefined || edge === null || ids.length === 0) return false;
    if (ids.some((id) => guard.unseen.has(id))) return false;
    const passes = unseenUpTo(guard, guard.passed.at, edge).count;
    if (passes === 0) return false;
    if (doubted !== ids[0]) return (doubted = ids[0], true);
    guard.doubled += passes;
    guard.retaken = ids[0]!;
    return false;
  };
}
