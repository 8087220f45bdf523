// Internal: a JSONL copy's completed cycle, its changes counted by id against the copy it replaces.

import { openFile, readAtSync } from "./_files.ts";
import {
  type CopyFiles,
  itemsOf,
  type KeyOf,
  type Lines,
  linesOf,
  type Rewrite,
} from "./_jsonl_state.ts";

/**
 * Counts a cycle's changes by id (the old lines' ids and ends held in memory: no index; a line the cycle read again
 * compared with its old text, so no digest's collision hides a change), against the copy's live lines: the head's
 * since the cycle began (`tail`) included, counted by the head. `drop`: the earlier lines (of the rewrite, then
 * `tail`) of an item the new copy holds again, as its sort value moved on during the cycle: its last line counts.
 */
export async function cycleChanges(
  files: CopyFiles,
  rewrite: Rewrite,
  tail: string,
  keyOf: KeyOf | undefined,
) {
  // A line's id by the run's `keyOf`; without (a direct write), the line itself (a change: delete + insert).
  const idsOf = (read: Lines) =>
    keyOf ? itemsOf(files, read).map((item) => keyOf(item).id) : read.lines;
  const old = new Map<string, number>(), oldEnds: number[] = [];
  for await (const read of linesOf(files.copy, rewrite.mainAt)) {
    idsOf(read).forEach((id, i) =>
      old.set(id, oldEnds.push(read.ends[i]!) - 1)
    );
  }
  const tailLines = { path: files.copy, lines: tail.split("\n"), ends: [] };
  tailLines.lines.pop(); // past the last line's end
  const tailIds = idsOf({ ...tailLines, before: 0 });
  // They stay in the new copy: an item moved during the cycle has a line of each, and is one row.
  const held = old.size + new Set(tailIds.filter((id) => !old.has(id))).size;
  let inserted = 0, deleted = old.size;
  // Each id met is marked by its line (-1 - line), whose old line `oldOf` keeps: met again, that line is dropped.
  const drop: number[] = [], oldOf: number[] = [], changed = new Set<number>();
  const meet = (ids: string[], lines: string[], again?: [number, string][]) => {
    const first = oldOf.length; // lines before it are earlier calls': to the tail's call, the rewrite's
    ids.forEach((id, i) => {
      const was = old.get(id);
      let at = was ?? -1; // the id's old line, if any
      if (was === undefined) inserted += again ? 1 : 0; // new: the tail's, the head counted
      else if (was >= 0) deleted--;
      else {
        drop.push(-1 - was);
        at = oldOf[-1 - was]!;
        // The head's line of an item new to the copy, whose rewrite line counted: the head counted it.
        if (at < 0 && !again && -1 - was < first) inserted--;
      }
      // The last text decides whether an old line changed: the tail's, from the head, is new to the cycle.
      if (at >= 0 && keyOf) {
        again ? again.push([at, lines[i]!]) : changed.delete(at);
      }
      old.set(id, -1 - oldOf.length);
      oldOf.push(at);
    });
  };
  // No old line, none to read again: the copy may not exist yet (a first cycle whose every item was skipped).
  const file = oldEnds.length > 0 ? await openFile(files.copy, "read") : null;
  const readOld = (from: number, to: number) =>
    readAtSync(file!, files.copy, from, to);
  try {
    for await (const read of linesOf(files.rewrite, rewrite.end.length)) {
      const again: [number, string][] = []; // old line, new text
      meet(idsOf(read), read.lines, again);
      changedLines(again, oldEnds, changed, readOld);
    }
  } finally {
    await file?.close();
  }
  meet(tailIds, tailLines.lines);
  return { inserted, updated: changed.size, deleted, held, drop };
}

/**
 * Keeps in `changed` the old lines that differ from their new text, of `pairs` ([old line, new text]; a line's last
 * pair decides), the old lines (by their `ends`) read by `read(start, end)` up to `span` bytes at a time: a cycle reads
 * the list in the copy's order, so few reads, not one a line (most of a 100,000-line cycle's end).
 */
export function changedLines(
  pairs: [number, string][],
  ends: readonly number[],
  changed: Set<number>,
  read: (start: number, end: number) => Uint8Array,
  span = 8 << 20,
): void {
  pairs.sort(([a], [b]) => a - b); // stable: a line's pairs stay in order
  const startOf = (i: number) => (ends[i - 1] ?? -1) + 1;
  for (let i = 0, j = 1; i < pairs.length; i = j++) {
    const from = pairs[i]![0];
    while (j < pairs.length && ends[pairs[j]![0]]! - startOf(from) <= span) j++;
    const text = read(startOf(from), ends[pairs[j - 1]![0]]!);
    const lines = new TextDecoder().decode(text).split("\n");
    for (const [at, line] of pairs.slice(i, j)) {
      if (lines[at - from] === line) changed.delete(at);
      else changed.add(at);
    }
  }
}
