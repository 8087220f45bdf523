// Internal: whether a sweep window is read again before the guard weighs it, over the copy's rows its range passes
// unseen (`rowsAhead`): a window of another list, or a page that left out items the list holds.

import type { SyncKey } from "./_window.ts";
import { keyText } from "./_key_text.ts";
import { holdsAny, rowsAhead, type WindowGuard } from "./_window_guard.ts";

/** Reads of one window that each leave out a row the reads before did not, before it is taken. */
const MAX_READS = 3;

/** A window as the doubter sees it: its ids, those where the pass stood (`passed`), the state it leaves the pass in. */
type Doubted = {
  ids: readonly string[];
  passed?: readonly SyncKey[];
  state: { edge: SyncKey | null };
};

/**
 * Doubts a sweep window once when its range passes rows the cycle has yet to see and it holds none: another list's
 * answer, or every such row gone. Read again alike, it is taken (`retaken`, which `foreignPage` judges) and weighed
 * twice by the guard, unless it holds the item the pass stood on (`from`, then each window's last) where it overlaps:
 * likely the list's own page, weighed once. One that holds some of them is read again until a read passes no row the
 * reads before did not (a page that left items out). At most MAX_READS reads of a window in a row (a list that moves
 * under each read differs every time). `shown`: the ids a read of a window showed that the read taken left out.
 */
export function doubter(guard: WindowGuard | undefined, from: SyncKey | null) {
  let doubted: string | undefined, reads = 0; // doubted reads of this window in a row
  let stood = from?.id; // the item the pass stands on
  const missed = new Set<string>();
  const doubts = async ({ ids, passed, state: { edge } }: Doubted) => {
    if (guard === undefined || edge === null || ids.length === 0) return false;
    // Exactly what the answer shows (one cut at the share is refused where the window commits).
    const { rows, more, full } = await rowsAhead(guard, keyText(edge), ids);
    const again = reads + 1 < MAX_READS;
    if (holdsAny(guard, ids, rows)) {
      const known = new Set([...ids, ...missed]);
      const gone = rows.filter((row) => !known.has(row.id));
      gone.forEach((row) => missed.add(row.id));
      return !full && gone.length > 0 && again;
    }
    const passes = rows.length + more; // none of them its own
    // Only new items (back-dated since) are not doubted: read twice or thrice, a list gaining them fast outran the pass.
    if (passes === 0) return false;
    if (doubted !== ids[0] && again) return (doubted = ids[0], true);
    // An answer cut at the share breaks the guard anyway, and may leave out the window's own rows: not weighed twice.
    const own = passed?.some((key) => key.id === stood) === true;
    if (!full && !own) guard.doubled += passes;
    guard.retaken = ids[0]!;
    return false;
  };
  const earlier = new Set<string>(); // what the reads of this window before the one taken showed
  const shown = new Set<string>();
  const judge = async (window: Doubted) => {
    const readAgain = await doubts(window);
    reads = readAgain ? reads + 1 : 0;
    if (!readAgain) stood = window.state.edge?.id ?? stood;
    if (readAgain) window.ids.forEach((id) => earlier.add(id));
    else if (earlier.size > 0) { // a window read once (most) has nothing to compare
      const taken = new Set(window.ids);
      earlier.forEach((id) => taken.has(id) || shown.add(id));
      earlier.clear();
    }
    return readAgain;
  };
  // A read of the list showed them during this run: the cycle's end keeps them (`SyncWriteContext.kept`).
  return Object.assign(judge, { shown });
}
