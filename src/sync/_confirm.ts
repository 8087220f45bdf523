// Internal: a cycle spread over runs removes only what the run ending it saw missing. The rows earlier runs of the
// cycle passed unseen are read again where they stand now (a pass from just before each), and committed as sweep
// windows: one the list holds again is seen and stays.

import { sweepStart } from "./_checkpoint.ts";
import { type Committed, runPass } from "./_pass.ts";
import type { SweepRun } from "./_committer.ts";
import { copyReader, refuseForeign } from "./_cycle_end.ts";
import { foreignPage } from "./_foreign_page.ts";
import { keyOfText, keyText } from "./_key_text.ts";
import { before, type CopyReader, type WindowGuard } from "./_window_guard.ts";
import type { SyncKey } from "./_window.ts";
import type { SweepCursor } from "./sink.ts";

/**
 * The list requests a run may spend reading again, past its sweep budget: each row costs about a window, placed by the
 * copy's rows between it and the read before. Past them, the rows left stay, unconfirmed (`keptRows`).
 */
const CONFIRM_READS = 32;

/** Rows left unconfirmed read from the copy at a time. */
const KEPT_AT_A_TIME = 10_000;

/**
 * Reads again, before the cycle of `cursor` ends, the rows of the copy the cycle has not seen that lie before
 * `cursor.edge`: each seen now (and its window's rows) is committed, and leaves `guard`'s count. Stops at CONFIRM_READS
 * requests: the ids of the rows left unread, which the cycle's end keeps. Not at `maxDuration`: the run ending a cycle
 * spread by it has no time left, so no deleted row would ever be removed.
 */
export async function confirmPassed<T>(
  run: SweepRun<T>,
  cursor: SweepCursor,
  guard: WindowGuard | undefined,
): Promise<readonly string[]> {
  const { config, committer, requests } = run;
  if (cursor.edge === null) return []; // no window of an earlier run committed
  const copy = guard?.copy ?? await copyReader(run, cursor);
  if (copy === undefined) return [];
  const descending = config.identity.sortDirection === "DESC";
  const startedAt = keyText(cursor.edge), from = requests.count;
  // Past `done`, where the last read ended, the list's next item stands at `standing`.
  let done: string | null = null, standing = 0;
  for (;;) {
    const [row] = await copy.unseen(done, startedAt, 1);
    const left = CONFIRM_READS - (requests.count - from);
    if (row === undefined) return [];
    if (left <= 0) break;
    const start = await readFrom(run, cursor, row.key, {
      done,
      standing,
      copy,
    });
    let reached = false, ended = false;
    const commit = async (window: Committed<T>) => {
      committer.tally.read += window.items.length;
      // Guarded, a window of items that is another list's page (`foreignPage`) is refused, as in the sweep.
      const foreign = guard !== undefined && window.items.length > 0 &&
        await foreignPage(run, guard, window, {
          ...start,
          cycle: cursor.cycle,
        });
      if (foreign) return await refuseForeign(run, cursor.cycle);
      await committer.commit("sweep", committer.latest, window);
      seen(copy, guard, window.ids);
      const edge = window.state.edge;
      ended = window.ended;
      reached = ended ||
        (edge !== null && !before(descending, keyText(edge), row.key));
      return reached ? false : undefined;
    };
    const alone = { ...run, alone: true, stop: undefined };
    const end = await runPass(alone, start, left, commit);
    if (ended || end.state.edge === null) return []; // past the list's end, none is there
    if (!reached) break;
    done = keyText(end.state.edge);
    standing = end.state.offset;
  }
  // Out of reads: the rows left are not confirmed.
  return await keptRows(copy, guard, done, startedAt);
}

/**
 * Where the read of the row at key text `key` starts: placed past `standing` by the copy's rows between (none unseen),
 * not at it; a guess too far is sought back no further than `standing`.
 */
async function readFrom<T>(
  { config, committer }: SweepRun<T>,
  { seek: _, misses: __, ...cursor }: SweepCursor,
  key: string,
  { done, standing, copy }: {
    done: string | null;
    standing: number;
    copy: CopyReader;
  },
) {
  const descending = config.identity.sortDirection === "DESC";
  const sweep = {
    ...cursor,
    edge: justBefore(keyOfText(key), descending),
    offset: standing + await copy.place(done, key),
    seek: { low: standing, probes: 1 },
  };
  const at = { now: config.now(), fresh: false };
  return sweepStart({ ...committer.latest, sweep }, config, at)!.state;
}

/**
 * A key just before `key` in the pass's order: a pass standing there reads `key` next. Not before the whole sort value:
 * past a window of ties, every row would be sought back to them.
 */
function justBefore({ value, id }: SyncKey, descending: boolean): SyncKey {
  if (descending) return { value, id: `${id}\u0000` };
  const last = id.charCodeAt(id.length - 1); // an id is never empty
  const unit = last > 0 ? String.fromCharCode(last - 1) + "\uffff" : "";
  return { value, id: id.slice(0, -1) + unit };
}

/**
 * The unseen rows after `done` up to `upTo`, left unconfirmed: the cycle keeps them (removed unread, an item back among
 * them would go though it exists), and counts them no more; the next cycle sees one the list lost.
 */
async function keptRows(
  copy: CopyReader,
  guard: WindowGuard | undefined,
  done: string | null,
  upTo: string,
): Promise<readonly string[]> {
  const kept: string[] = [];
  for (let after = done;;) {
    const rows = await copy.unseen(after, upTo, KEPT_AT_A_TIME);
    kept.push(...rows.map((row) => row.id));
    if (rows.length < KEPT_AT_A_TIME) break;
    after = rows.at(-1)!.key;
  }
  seen(copy, guard, kept);
  return kept;
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
