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
  /** What the last 24 hours removed (the end-of-cycle judgement's figures). */
  readonly recent: RecentDeletes;
  /** The pass reads newest first: rows at or after a window's last key are behind it. */
  readonly descending: boolean;
  /** Once a window broke the guard: the unseen rows passed by the last window read (the share the refusal names). */
  refused?: number;
}

/** A row of the copy as a sink's `liveRows` gives it. */
export interface CopyRow {
  readonly id: string;
  readonly item: unknown;
  readonly seen: boolean;
}

/**
 * The guard over `rows` (read once, paged by the sink): each unseen row's key by `keyOf`; a row whose key cannot be read
 * is left to the end-of-cycle judgement (it is still held).
 */
export async function windowGuard(
  rows: AsyncIterable<CopyRow>,
  keyOf: (item: unknown) => SyncKey,
  figures: Pick<WindowGuard, "maxDeletes" | "recent" | "descending">,
): Promise<WindowGuard> {
  const unseen = new Map<string, SyncKey>();
  let held = 0;
  for await (const row of rows) {
    held++;
    if (row.seen) continue;
    let key: SyncKey;
    try {
      key = keyOf(row.item);
    } catch {
      continue;
    }
    unseen.set(row.id, key);
  }
  return { ...figures, unseen, held };
}

/**
 * Judges a window before it commits: its `ids` are seen; the unseen rows at or before its `last` key in the pass's
 * order (all of them when it `ended` the cycle) would be removed. True when the window must not commit: it breaks the
 * guard, or one before it did (`refused` then counts what the windows read so far passed). A row whose key moved
 * forward in the order counts until a window sees it.
 */
export function heldBack(
  guard: WindowGuard,
  window: {
    readonly ids: readonly string[];
    readonly last: SyncKey | null;
    readonly ended: boolean;
  },
): boolean {
  for (const id of window.ids) guard.unseen.delete(id);
  const behind = passedUnseen(guard, window.last, window.ended);
  const { held, maxDeletes, recent } = guard;
  if (
    guard.refused === undefined && !tooMany(behind, held, maxDeletes, recent)
  ) {
    return false;
  }
  guard.refused = Math.max(guard.refused ?? 0, behind);
  return true;
}

/** The unseen rows a pass standing at `last` has passed. */
export function passedUnseen(
  guard: Pick<WindowGuard, "unseen" | "descending">,
  last: SyncKey | null,
  ended: boolean,
): number {
  if (ended) return guard.unseen.size;
  if (last === null) return 0;
  const sign = guard.descending ? -1 : 1;
  let count = 0;
  for (const key of guard.unseen.values()) {
    if (sign * compareKeys(key, last) <= 0) count++;
  }
  return count;
}
