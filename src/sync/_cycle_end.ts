// Internal: a sweep cycle's guard as a run commits it: the guard read from the copy, the ending batch's record of
// its deletes (corrected to the sink's count), and a refusal recorded (the cycle given up) before the run fails.

import { afterDeletes, afterSweepWindow } from "./_checkpoint.ts";
import type { Committer } from "./_committer.ts";
import type { SyncConfig } from "./_config.ts";
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
import { isKeyed, keyOfText, keyText } from "./_key_text.ts";
import { SyncError } from "./sync_error.ts";
import { type Committed, listHead, type PassRun } from "./_pass.ts";
import { compareKeys } from "./_key_order.ts";
import { MIN_WINDOW, type SyncKey, type WindowState } from "./_window.ts";

/** What a cycle's end needs of the run. */
type CycleRun<T> = Readonly<{ config: SyncConfig<T>; committer: Committer<T> }>;

/**
 * The window ending a cycle (`before`: its checkpoint): the guard's figures for the sink, and the checkpoint with the
 * deletes on record as the guard counts them (unguarded: as uncounted), so a run stopped right after forgets none
 * (endCycle corrects them; a confirmed `refusal` starts them afresh).
 */
export function cycleEnd<T>(
  { config, committer }: CycleRun<T>,
  guard: WindowGuard | undefined,
  before: SyncCheckpoint,
  refusal: SyncCheckpoint["refused"],
) {
  const { deletes, maxDeletes } = config, now = config.now();
  // Dated by the checkpoint before this window: `before` replaced `verifiedAt` with this cycle's start, on this run's
  // clock, and dropped `sweep` and `refused`, which may hold a later time.
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

/**
 * Commits cycle `cursor`'s end at `state`: with its last `window`, or alone once a spread cycle read again what it
 * passed (`kept`: the rows those reads left unconfirmed).
 */
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

/**
 * A completed cycle's deletes go on record, as the sink counted them, over what its `ending` window recorded (`cycleEnd`:
 * a confirmed refusal starts them afresh); or the guard refuses it.
 */
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

/**
 * Whether `window`, holding none of the copy's live rows where its range passes rows the cycle has yet to see, is another
 * list's page. Taken only when its range holds few of the copy's rows (a quarter of its items at most: a row or two gone
 * before items the copy lacks) and a read at another address (its size one less, or more) agrees: the same items there.
 * A deleted row before a window's worth of such items was refused every run (r157 F2, F3); a read that tells nothing,
 * or another list at that address too, refuses (r158 F1: one of 24 or 25 answered empty let another list in).
 */
export async function foreignPage<T>(
  run: CycleRun<T> & PassRun<T>,
  guard: WindowGuard,
  window: Committed<T>,
  { edge, cycle }: Pick<SweepCursor, "edge" | "cycle">,
): Promise<boolean> {
  // Items cycle `cycle` staged are the list's: a confirming read of one new item, read by an earlier run, was refused.
  if (!await holdsNone(run, window.ids, cycle)) return false;
  const { config } = run, { keyOf } = config;
  const last = window.items.at(-1);
  if (last === undefined) return true;
  // The copy's live rows past the pass's `edge` up to its last item, every one missing from it (seen or not).
  const from = edge === null ? null : keyText(edge);
  const upTo = keyText(keyOf(last));
  const gone = await guard.copy.place(from, upTo) + 1;
  if (4 * gone > await quarterOf(guard, window, [edge, upTo], config.limit)) {
    return true;
  }
  const own = new Set(window.ids);
  const within = await readWithin(run, window, [edge, keyOf(last)]);
  return within.length === 0 || within.some((key) => !own.has(key.id));
}

/**
 * The keys the list shows past `edge` up to `last`, read where `window`'s first item past its overlap stands (or `at`)
 * at its size one less, else (refused) one more; with `reads` 2, at the other size half a window further on too when the first showed
 * none there (a list gaining an item a request had moved on past it). None where they tell nothing.
 */
async function readWithin<T>(
  run: CycleRun<T> & PassRun<T>,
  window: Committed<T>,
  [edge, last]: [SyncKey | null, SyncKey],
  reads = 1,
  at = (window.start ?? 0) + (window.passed?.length ?? 0),
): Promise<SyncKey[]> {
  const sign = run.config.identity.sortDirection === "DESC" ? -1 : 1;
  const limit = window.limit ?? MIN_WINDOW;
  for (const size of [limit - 1, limit + 1]) {
    if (size < 1 || reads === 0) continue;
    const read = await listHead(run, size, Math.floor(at / size) + 1);
    if (read === undefined) continue; // refused: a least page size
    reads--;
    const within = read.filter((key) =>
      (edge === null || sign * compareKeys(key, edge) > 0) &&
      sign * compareKeys(key, last) <= 0
    );
    if (within.length > 0) return within;
    at += Math.floor(limit / 2); // what it reads stood further on by then
  }
  return [];
}

/**
 * Whether `window`, passing `passes` rows of the copy the cycle has yet to see (more than a quarter of its size) and
 * holding items that are neither rows of the copy nor staged for `cycle`, is another list's spliced among the list's
 * own: a read at another address (`readWithin`) shows, past the edge up to its last item, a row of the copy it lacks,
 * or nothing. Ascending, the cycle's last window answered at both its reads with its overlap, 12 other ids and the rows
 * the head read there removed 12 that exist and put 12 in (r250b; newest first, that splice holds no row of the copy
 * and was refused; one real item first, or every other, still went in: r251a). Refused without that read, a list that
 * lost 8 rows in a row and gained 8 there was refused on every run; refused where that read showed an item new since,
 * or, read once, nothing of its range, a list gaining one a request was refused 2 to 5 times as often (r252a). A read
 * opening past the first row the window passes is followed by one of the page before it (r253a, r254a).
 */
export async function splicedPage<T>(
  run: CycleRun<T> & PassRun<T>,
  guard: WindowGuard,
  window: Committed<T>,
  passes: number,
  { edge, cycle }: Pick<SweepCursor, "edge" | "cycle">,
): Promise<boolean> {
  const { config, committer } = run, { sink, keyOf } = config;
  const last = window.items.at(-1);
  if (edge === null || last === undefined) return false;
  const limit = window.limit ?? window.ids.length;
  if (4 * passes <= limit) return false;
  await committer.done();
  const held = await sink.holds?.(window.ids, keyOf, cycle);
  if (held === undefined || held.size === window.ids.length) return false; // no other ids: rows gone
  const own = new Set(window.ids),
    range: [SyncKey, SyncKey] = [edge, keyOf(last)];
  const lacks = async (keys: SyncKey[]) => {
    const lacked = keys.filter((key) => !own.has(key.id)).map((key) => key.id);
    return lacked.length > 0 && (await sink.holds?.(lacked, keyOf))?.size !== 0;
  };
  const within = await readWithin(run, window, range, 2);
  if (within.length === 0 || await lacks(within)) return true;
  // Opening past the first row the window passes, that read told nothing of it (placed by a window answering more of
  // its overlap than the list holds, r253a, or by the window before, r254a: 6 to 37 that exist removed): read the page
  // before it too, for the rows it lacks.
  const rows = await guard.copy.unseen(keyText(edge), keyText(range[1]), limit);
  const gone = rows.find((row) => !own.has(row.id));
  const sign = config.identity.sortDirection === "DESC" ? -1 : 1;
  if (
    gone === undefined ||
    sign * compareKeys(within[0]!, keyOfText(gone.key)) <= 0
  ) return false;
  const at = (window.start ?? 0) + (window.passed?.length ?? 0) - (limit - 1);
  return await lacks(await readWithin(run, window, range, 1, Math.max(0, at)));
}

/**
 * What `foreignPage` takes a quarter of: `window`'s new items; its size (at most `limit`) where it is a short page
 * holding the edge's item where it overlaps and reaching past every row of the copy the cycle has yet to see: the
 * list's end, its last few rows gone before an item new there (4 of 41 gone were refused at share 1: walk seed 37). Not
 * elsewhere: answered at two addresses, another list past the list's own overlap took the share (r242a F1), denser than
 * the list a quarter of a full page (r243a F1), on a short page mid-list a quarter of a page of 1,000 (r244a F1).
 */
async function quarterOf<T>(
  guard: WindowGuard,
  window: Committed<T>,
  [edge, last]: [SyncKey | null, string],
  limit: number,
): Promise<number> {
  const { passed = [], beyond = [], ids } = window, asked = window.limit;
  const short = asked !== undefined &&
    passed.length + ids.length + beyond.length < asked &&
    passed.some((key) => key.id === edge?.id);
  if (!short) return ids.length;
  const past = await guard.copy.unseen(last, null, 1);
  return past.length === 0 ? Math.min(asked, limit) : ids.length;
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

/**
 * Whether, of `of` items, `ids` are those not known the list's, and more than half of `of` are among them and not the
 * copy's live rows (a sink that cannot tell: false).
 */
export async function mostUnknown<T>(
  { config, committer }: CycleRun<T>,
  ids: readonly string[],
  of: number,
): Promise<boolean> {
  await committer.done();
  const held = await config.sink.holds?.(ids, config.keyOf);
  return held !== undefined && 2 * (ids.length - held.size) > of;
}

/**
 * Whether `keys` (a window's items up to the edge `edge`, in the pass's order) are the list's own there, new items come
 * in among them: one at least is a row of the copy or an item cycle `cycle` staged (other than the edge's), and every
 * live row of the copy the cycle saw between their first and the edge is among them. Items inserted just before the edge since the
 * window before (r168a F1: 4 such, refused at share 1), or a spread cycle's next run reading over what the run before
 * staged (r167a: 97 of 3,240 runs refused); another list's page lacks the copy's rows there, or holds none of them nor
 * anything the cycle read (ids sorting in the gap just before the edge removed 92 that exist, r169a F2; ids a misrouted
 * window had the cycle stage, windows back, 85: F4).
 */
export async function leadsToEdge<T>(
  { config, committer }: CycleRun<T>,
  guard: WindowGuard,
  { passed: keys = [], ids: past }: Committed<T>,
  { edge, cycle }: { edge: SyncKey; cycle: number },
): Promise<boolean> {
  const [first, ...rest] = keys.filter((key) => key.id !== edge.id);
  if (first === undefined) return false;
  await committer.done();
  const { sink, keyOf } = config;
  const ids = [first, ...rest].map((key) => key.id);
  const held = await sink.holds?.([edge.id, ...ids], keyOf);
  if (held === undefined || !await anchored(sink, keyOf, ids, past, cycle)) {
    return false;
  }
  // The live rows after the first up to the edge, less one: the edge's own, when it is one (not staged); less those
  // the cycle passed unseen (the list lost them: an edge deleted runs before, r167a).
  const [after, upTo] = [keyText(first), keyText(edge)];
  const live = await guard.copy.place(after, upTo) + 1;
  const between = live - (held.has(edge.id) ? 1 : 0);
  const passed = await guard.copy.unseen(after, upTo, Math.max(0, between));
  return between - passed.length <= rest.filter((k) => held.has(k.id)).length;
}

/**
 * Whether a window stands in the list where its items up to the edge (`ids`) say: one of them is a row of the copy
 * or an item cycle `cycle` staged, or most of its items past the edge (`past`) are rows of the copy (a spread run's
 * first window over items inserted just before the edge since, r169a F6).
 */
async function anchored<T>(
  sink: SyncConfig<T>["sink"],
  keyOf: SyncConfig<T>["keyOf"],
  ids: readonly string[],
  past: readonly string[],
  cycle: number,
) {
  if ((await sink.holds?.(ids, keyOf, cycle))?.size) return true; // staged too
  const held = await sink.holds?.(past, keyOf);
  return held !== undefined && 2 * held.size > past.length;
}

/**
 * Whether the sink shows it holds none of `ids` as live rows (`holds`; nor staged for `cycle`, given), or without
 * `ids`, no live row at all (one confirmed emptied: `liveCount` or `liveRows`); a sink that cannot tell: false.
 */
export async function holdsNone<T>(
  { config, committer }: CycleRun<T>,
  ids?: readonly string[],
  cycle?: number,
): Promise<boolean> {
  const { sink } = config;
  await committer.done();
  if (ids) return (await sink.holds?.(ids, config.keyOf, cycle))?.size === 0;
  if (isKeyed(sink)) return await sink.liveCount() === 0;
  if (sink.liveRows === undefined) return false;
  for await (const _ of sink.liveRows(0, config.keyOf)) return false;
  return true;
}
