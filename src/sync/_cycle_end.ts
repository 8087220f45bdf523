// Internal: a sweep cycle's guard as a run commits it: the guard read from the copy, the ending batch's record of
// its deletes (corrected to the sink's count), and a refusal recorded (the cycle given up) before the run fails.

import { afterDeletes, afterSweepWindow } from "./_checkpoint.ts";
import type { CycleRun } from "./_committer.ts";
import type { SweepCursor, SyncCheckpoint } from "./sink.ts";
import {
  confirms,
  countedAt,
  deletesRefused,
  guardClock,
  recentDeletes,
  tooManyDeletes,
} from "./_deletes.ts";
import {
  keyedReader,
  rowsReader,
  type WindowGuard,
  windowGuard,
} from "./_window_guard.ts";
import { isKeyed } from "./_key_text.ts";
import { SyncError } from "./sync_error.ts";
import type { Committed } from "./_pass.ts";
import type { WindowState } from "./_window.ts";

/**
 * The window ending a cycle (`before`: its checkpoint): the guard's figures for the sink, and the checkpoint with the
 * deletes on record as the guard counts them (unguarded: uncounted), so a run stopped right after forgets none.
 */
export function cycleEnd<T>(
  { config, committer }: CycleRun<T>,
  guard: WindowGuard | undefined,
  before: SyncCheckpoint,
  refusal: SyncCheckpoint["refused"],
) {
  const { deletes, maxDeletes } = config, now = config.now();
  // Dated by the checkpoint before this window: `before` dropped `sweep` and `refused`, which may hold a later time.
  const at = guardClock(committer.latest, now);
  const confirmed = confirms(refusal, maxDeletes);
  const judged = countedAt(refusal, maxDeletes, now);
  const recent = recentDeletes(before.deletions, judged, confirmed);
  const counted = guard === undefined
    ? { deleted: 0, held: 0, uncounted: true as const }
    : { deleted: guard.passed.size, held: guard.copy.held };
  const checkpoint = afterDeletes(before, { at, ...counted }, confirmed, now);
  const endsCycle = { deletes, maxDeletes, recent };
  return { at, now, before, confirmed, checkpoint, endsCycle };
}

/** Commits cycle `cursor`'s end at `state`: with its last `window`, or alone (`kept`: rows left unconfirmed). */
export async function commitEnd<T>(
  run: CycleRun<T>,
  guard: WindowGuard | undefined,
  cursor: SweepCursor,
  state: WindowState,
  refusal: SyncCheckpoint["refused"],
  { window, kept = [] }: { window?: Committed<T>; kept?: readonly string[] },
) {
  const at = afterSweepWindow(run.committer.latest, cursor, state, true);
  const ending = cycleEnd(run, guard, at, refusal);
  const more = {
    endsCycle: ending.endsCycle,
    ...(kept.length ? { kept } : {}),
  };
  await run.committer.commit("sweep", ending.checkpoint, window, more);
  return ending;
}

/** A completed cycle's deletes go on record as the sink counted them, over its `ending` window's; or the guard refuses it. */
export async function endCycle<T>(
  run: CycleRun<T>,
  cycle: number,
  ending: ReturnType<typeof cycleEnd>,
): Promise<void> {
  const { config, committer } = run;
  try {
    await committer.done();
  } catch (error) {
    if (!(error instanceof SyncError) || error.reason !== "too-many-deletes") {
      throw error;
    }
    return await refuse(run, cycle, error);
  }
  const { deleted, held = 0 } = committer.lastReport;
  // A sink that does not count its deletes leaves the ending window's record: the guard's count, or uncounted.
  if (deleted === undefined) return config.signal?.throwIfAborted();
  const { at, before, confirmed, now } = ending;
  const deletes = afterDeletes(before, { at, deleted, held }, confirmed, now);
  await committer.record(deletes); // even once aborted: the deletes are made, their record follows
  config.signal?.throwIfAborted();
}

/** The guard judged window by window, when it is on and the sink tells its rows (read after what was committed). */
export async function guardOf<T>(
  { config, committer }: CycleRun<T>,
  { cycle, edge }: SweepCursor,
): Promise<WindowGuard | undefined> {
  const { maxDeletes } = config;
  if (maxDeletes >= 1) return undefined;
  // A run answering a refusal is judged at the end only: a share named from part of a cycle would refuse it again.
  if (confirms(committer.latest.refused, maxDeletes)) return undefined;
  const copy = await copyReader({ config, committer }, { cycle, edge });
  if (!copy) return undefined;
  const recent = recentDeletes(committer.latest.deletions, config.now());
  const descending = config.identity.sortDirection === "DESC";
  return windowGuard(copy, { maxDeletes, recent, descending });
}

/** The copy's rows as cycle `cycle` saw them (read after what was committed), when the sink tells them. */
export async function copyReader<T>(
  { config, committer }: CycleRun<T>,
  { cycle, edge }: Pick<SweepCursor, "cycle" | "edge">,
) {
  const { sink, keyOf, signal } = config;
  await committer.done();
  const descending = config.identity.sortDirection === "DESC";
  const ask = { cycle, keyOf, descending, edge: edge?.id, signal };
  return isKeyed(sink)
    ? await keyedReader(sink, ask, () => committer.done())
    : sink.liveRows && await rowsReader(sink.liveRows(cycle, keyOf), ask);
}

/** A sweep whose windows broke the guard: nothing of them committed; refused as at its end (`partial`: read in part). */
export async function refuseWindows<T>(
  run: CycleRun<T>,
  { copy: { held }, maxDeletes, recent, refused = 0 }: WindowGuard,
  cycle: number,
  partial: boolean,
): Promise<never> {
  const what = `the copy of ${run.config.identity.path}`;
  await run.committer.done(); // a batch before that failed is the run's error
  const why = tooManyDeletes(refused, held, maxDeletes, what, recent, partial);
  return await refuse(run, cycle, why);
}

/** Refuses cycle `cycle` at a sweep window taken for another list's page (`foreignPage`, `splicedPage`; share 1). */
export async function refuseForeign<T>(run: CycleRun<T>, cycle: number) {
  const why =
    "a sweep window holds none of the copy's rows where its range passes rows the cycle has yet to see, read twice alike or read at another address, so the list lost them, or another list answered that page";
  const what = `the copy of ${run.config.identity.path}`;
  return await refuse(run, cycle, deletesRefused(why, what, 1));
}

/** Records the guard's refusal of cycle `cycle` (given up: the next run begins another), then fails the run with it. */
async function refuse<T>(
  run: CycleRun<T>,
  cycle: number,
  error: SyncError,
): Promise<never> {
  const { committer, config } = run, maxDeletes = error.maxDeletesNeeded ?? 1;
  // Without `sweep`: the next run begins a new cycle.
  const { sweep: _, ...rest } = committer.written;
  const refused = { cycle, at: config.now(), maxDeletes };
  await committer.record({ ...rest, refused });
  throw error;
}
