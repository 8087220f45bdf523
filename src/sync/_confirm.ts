// Internal: a cycle spread over runs removes only what the run ending it saw missing (r152 F1). The rows earlier runs
// of the cycle passed unseen are read again where they stand now (a pass from just before each, which finds its place
// as a resumed sweep finds its edge), and committed as sweep windows: one the list holds again is seen and stays.

import { sweepStart } from "./_checkpoint.ts";
import { type Committed, type PassRun, runPass } from "./_pass.ts";
import type { Committer } from "./_committer.ts";
import { copyReader, holdsNone, refuseForeign } from "./_cycle_end.ts";
import { keyOfText, keyText } from "./_key_text.ts";
import type { CopyReader, WindowGuard } from "./_window_guard.ts";
import type { SyncKey } from "./_window.ts";
import type { SweepCursor } from "./sink.ts";

/**
 * The list requests a run may spend reading again, past its sweep budget: each row costs about a window, placed by the
 * copy's rows between it and the read before. Past them, the rows left go as before: unconfirmed.
 */
const CONFIRM_READS = 32;

/** What confirming needs of the run. */
type ConfirmRun<T> = PassRun<T> & { readonly committer: Committer<T> };

/**
 * Reads again, before the cycle of `cursor` (this run's sweep began there) ends, the rows of the copy the cycle has not
 * seen that lie before `cursor.edge`, where earlier runs passed them: each seen now (and its window's rows) is
 * committed, and leaves `guard`'s count. Stops at `timeUp` or CONFIRM_READS requests.
 */
export async function confirmPassed<T>(
  run: ConfirmRun<T>,
  cursor: SweepCursor,
  guard: WindowGuard | undefined,
  timeUp: () => boolean,
): Promise<void> {
  const { config, committer, requests } = run;
  if (cursor.edge === null) return; // no window of an earlier run committed
  const copy = guard?.copy ?? await copyReader(run, cursor);
  if (copy === undefined) return;
  const descending = config.identity.sortDirection === "DESC";
  const startedAt = keyText(cursor.edge), from = requests.count;
  // Past `done`, where the last read ended, the list's next item stands at `standing`.
  let done: string | null = null, standing = 0;
  const { seek: _, misses: __, ...rest } = cursor;
  while (!timeUp()) {
    const [row] = await copy.unseen(done, startedAt, 1);
    const left = CONFIRM_READS - (requests.count - from);
    if (row === undefined || left <= 0) return;
    // Placed past `standing` by the copy's rows between (the list held them when the cycle saw them; none is unseen),
    // not at it (the first row cost 16 requests); a guess too far is sought back no further than it (r156 G2).
    const sweep = {
      ...rest,
      edge: justBefore(keyOfText(row.key), descending),
      offset: standing + await copy.place(done, row.key),
      seek: { low: standing, probes: 1 },
    };
    const start = sweepStart(
      { ...committer.latest, sweep },
      config,
      { now: config.now(), fresh: false },
    )!.state;
    let reached = false, ended = false;
    const commit = async (window: Committed<T>) => {
      committer.tally.read += window.items.length;
      // Guarded, a window holding items and none of the copy's rows is another list's page, as in the sweep: refused.
      const foreign = guard !== undefined && window.items.length > 0 &&
        await holdsNone(run, window.ids);
      if (foreign) return await refuseForeign(run, cursor.cycle);
      await committer.commit("sweep", committer.latest, window);
      seen(copy, guard, window.ids);
      const edge = window.state.edge;
      ended = window.ended;
      reached = ended ||
        (edge !== null && !before(descending, keyText(edge), row.key));
      return reached ? false : undefined;
    };
    const end = await runPass(
      { ...run, alone: true },
      start,
      left,
      commit,
      timeUp,
    );
    // Out of reads or time, the rows left are not confirmed; past the list's end, none is there.
    if (!reached || ended || end.state.edge === null) return;
    done = keyText(end.state.edge);
    standing = end.state.offset;
  }
}

/**
 * A key just before `key` in the pass's order: a pass standing there reads `key` next (ascending, an id between is
 * read again too). Not before the whole sort value: past a window of ties, every row was sought back to them (r156 G1).
 */
function justBefore({ value, id }: SyncKey, descending: boolean): SyncKey {
  if (descending) return { value, id: `${id}\u0000` };
  const last = id.charCodeAt(id.length - 1); // an id is never empty
  const unit = last > 0 ? String.fromCharCode(last - 1) + "\uffff" : "";
  return { value, id: id.slice(0, -1) + unit };
}

/** Whether key text `a` comes before `b` in the pass's order. */
function before(descending: boolean, a: string, b: string): boolean {
  return descending ? a > b : a < b;
}

/** `ids` seen: the reader forgets them, and the guard counts them no more. */
function seen(
  copy: CopyReader,
  guard: WindowGuard | undefined,
  ids: readonly string[],
) {
  copy.saw(ids);
  for (const id of ids) guard?.passed.delete(id);
}
