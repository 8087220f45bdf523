// Internal: the guard judged as the sweep passes, before each window commits: the copy's live rows the cycle has not
// seen are read once when the sweep starts (the sink's `liveRows`), and a window whose passed-and-unseen rows would break
// `maxDeletes` stops the run there, so a sweep answered with another list commits nothing of it. The cycle's end
// judges again (the sinks' backstop): rows whose key cannot be read are left to it.

import type { SyncKey } from "./_window.ts";
import { compareKeys } from "./_window.ts";
import { type RecentDeletes, tooMany } from "./_deletes.ts";

/** The unseen rows of the cycle under way, keyed by id, and what the guard weighs them against. */
export interface WindowGuard {
  /** Live rows the cycle has not seen yet, id → key; a window's ids leave it. */
  readonly unseen: Map<string, SyncKey>;
  /** Live rows of the copy when the sweep started. */
  readonly held: number;
  readonly maxDeletes: number;
  /**
   * What the last 24 hours removed when the sweep started, and the copy's largest size in them: a window weighs its
   * share of that size, as the end does, but not the deletes (by the cycle's end, its only removal, a record may have
   * left the 24 hours; the end weighs them); a refusal names both, so its share is above `maxDeletes`.
   */
  readonly recent: RecentDeletes;
  /** The pass reads newest first: rows at or after a window's last key are behind it. */
  readonly descending: boolean;
  /** Once a window broke the guard: the unseen rows passed by the last window read (the share the refusal names). */
  refused?: number;
  /** Where the pass stands among the unseen rows in its order: counted once, not again per window. */
  readonly passed: Passed;
}

/**
 * The unseen rows' ids in the pass's order, the first `at` of them passed (up to key `last`), `behind` of those still
 * unseen: each window moves `at` on from where the last stopped, so a cycle costs its rows once, not once per window.
 */
interface Passed {
  readonly order: readonly string[];
  at: number;
  last: SyncKey | null;
  behind: number;
}

/** A row of the copy as a sink's `liveRows` gives it. */
export interface CopyRow {
  readonly id: string;
  readonly item: unknown;
  readonly seen: boolean;
}

/**
 * The largest copy (live rows) whose windows are judged: reading its rows costs a run about 0.7 s per 100,000 SQLite
 * rows, and its unseen ids and keys about 50 MB at 200,000. A larger copy is judged at each cycle's end only, so that a
 * run over a large copy stays within the time and heap a sync of 1,000,000 items is given.
 */
export const MAX_GUARDED_ROWS = 250_000;

/**
 * The guard over `rows` (read once, paged by the sink): each unseen row's key by `keyOf`; a row whose key cannot be read
 * is left to the end-of-cycle judgement (it is still held). Undefined past `most` rows (the reading stops there), or
 * for none.
 */
export async function windowGuard(
  rows: AsyncIterable<CopyRow>,
  keyOf: (item: unknown) => SyncKey,
  figures: Pick<WindowGuard, "maxDeletes" | "recent" | "descending">,
  most: number = MAX_GUARDED_ROWS,
): Promise<WindowGuard | undefined> {
  const unseen = new Map<string, SyncKey>();
  let held = 0;
  for await (const row of rows) {
    if (++held > most) return undefined;
    if (row.seen) continue;
    let key: SyncKey;
    try {
      key = keyOf(row.item);
    } catch {
      continue;
    }
    unseen.set(row.id, key);
  }
  // None listed: an empty copy has nothing to remove, and a sink may list none of one too large to judge.
  if (held === 0) return undefined;
  const sign = figures.descending ? -1 : 1;
  const order = [...unseen.keys()].sort((a, b) =>
    sign * compareKeys(unseen.get(a)!, unseen.get(b)!)
  );
  const passed = { order, at: 0, last: null, behind: 0 };
  return { ...figures, unseen, held, passed };
}

/**
 * Judges a window before it commits: its `ids` are seen; the unseen rows at or before its `last` key in the pass's
 * order (all of them when it `ended` the cycle) would be removed. True when the window must not commit: it breaks the
 * guard, or one before it did (`refused` then counts what the windows read so far passed). A row whose key moved
 * forward in the order counts until a window sees it. The cycle's share alone is weighed: the 24 hours' deletes are its
 * end's.
 */
export function heldBack(
  guard: WindowGuard,
  window: {
    readonly ids: readonly string[];
    readonly last: SyncKey | null;
    readonly ended: boolean;
  },
): boolean {
  for (const id of window.ids) seen(guard, id);
  const behind = passedUnseen(guard, window.last, window.ended);
  const { held, maxDeletes, recent } = guard;
  // The end's base (the copy's largest size in the 24 hours), not its deletes: never stricter than the end would be.
  const base = { deleted: 0, largest: recent.largest };
  if (guard.refused === undefined && !tooMany(behind, held, maxDeletes, base)) {
    return false;
  }
  guard.refused = Math.max(guard.refused ?? 0, behind);
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
  const { unseen, passed } = guard;
  const sign = guard.descending ? -1 : 1;
  if (passed.last !== null && sign * compareKeys(last, passed.last) < 0) {
    Object.assign(passed, { at: 0, behind: 0 });
  }
  const { order } = passed;
  while (
    passed.at < order.length &&
    sign * compareKeys(unseen.get(order[passed.at]!) ?? last, last) <= 0
  ) {
    if (unseen.has(order[passed.at++]!)) passed.behind++;
  }
  passed.last = last;
  return passed.behind;
}

/** A row a window saw leaves the unseen ones, and the count of those passed if it was among them. */
function seen(guard: WindowGuard, id: string): void {
  const key = guard.unseen.get(id);
  if (key === undefined) return;
  guard.unseen.delete(id);
  const { last } = guard.passed;
  const sign = guard.descending ? -1 : 1;
  if (last !== null && sign * compareKeys(key, last) <= 0) {
    guard.passed.behind--;
  }
}
