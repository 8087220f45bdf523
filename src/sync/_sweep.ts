// Internal: the sweep, a run's rolling cycle: spends the run's budget reading the copy's range again, each window
// judged by the guard before it commits; a cycle's end commits with its last window (a spread one's: _confirm.ts).

import { afterSweepWindow, sweepStart } from "./_checkpoint.ts";
import { type Committed, listHead, runPass } from "./_pass.ts";
import type { Committer, SweepRun } from "./_committer.ts";
import type { SweepCursor, SyncCheckpoint } from "./sink.ts";
import { compareKeys } from "./_key_order.ts";
import type { SyncKey, WindowState } from "./_window.ts";
import { doubter } from "./_window_doubt.ts";
import { keyText } from "./_key_text.ts";
import {
  before,
  heldBack,
  holdsUnseen,
  skipsStart,
  type WindowGuard,
} from "./_window_guard.ts";
import {
  commitEnd,
  type cycleEnd,
  endCycle,
  guardOf,
  refuseForeign,
  refuseWindows,
} from "./_cycle_end.ts";
import {
  foreignBeforeEdge,
  foreignPage,
  splicedPage,
} from "./_foreign_page.ts";
import { confirmPassed } from "./_confirm.ts";
import { SyncError } from "./sync_error.ts";
import { notFound } from "./_short_end.ts";
import { confirms } from "./_deletes.ts";

/** Spends the sweep budget on the cycle under way or a new one (`sweep: Infinity`: never one begun before the run). */
export async function sweep<T>(
  run: SweepRun<T>,
  timeUp: () => boolean,
): Promise<void> {
  const { config, committer } = run;
  if (config.sweep === 0) return;
  const begun = sweepStart(committer.latest, config, {
    now: config.now(),
    // Any cycle under way began before this run (the head begins none), whatever its clock said then.
    fresh: config.fresh,
  });
  if (begun === undefined) return;
  const { sweep: cursor } = begun;
  if (begun.begins) await beginCycle(committer, cursor);
  const guard = await guardOf(run, cursor);
  // Begun by an earlier run, the cycle ends once what earlier runs passed unseen is read again (confirmPassed).
  const spread = !begun.begins && cursor.edge !== null;
  const doubt = doubter(guard, begun.state.edge);
  run = { ...run, shown: doubt.shown }; // what its windows show where it stands: kept
  const sweeping = new Sweeping(run, cursor, guard, spread, doubt.shown);
  const commit = (window: Committed<T>) => sweeping.commit(window);
  const [state, budget] = [begun.state, config.sweep];
  const end = await runPass(run, state, budget, commit, timeUp, doubt);
  if (guard?.refused !== undefined) {
    return await refuseWindows(run, guard, cursor.cycle, !end.ended);
  }
  if (sweeping.lost) return await beginAfresh(run);
  let { ending } = sweeping;
  if (sweeping.endedAt !== undefined) {
    const at = sweeping.endedAt;
    const kept = await confirmPassed(run, cursor, guard);
    await showListStart(run, guard, doubt.shown, at, sweeping.firstWindow);
    ending = await commitEnd(run, guard, cursor, at, sweeping.refusal, {
      kept: [...kept, ...doubt.shown],
    });
  }
  // Ended, the window that ended it committed (`ending`): one refused or lost returned above.
  if (ending !== undefined) return await endCycle(run, cursor.cycle, ending);
  // Out of budget mid-cycle: where the sweep stands (or where a gap moved it back to) is saved for the next run.
  const at = committer.latest.sweep ?? cursor;
  const stands = afterSweepWindow(committer.latest, at, end.state, false);
  await committer.flush("sweep", stands);
}

/** A sweep's windows as they come: each judged by the guard, then committed; where the cycle ended. */
class Sweeping<T> {
  /** Kept until a cycle completes: the one this run may complete answers it. */
  readonly refusal: SyncCheckpoint["refused"];
  /** Page 1 began after the cursor, past rows the cycle has yet to see: the cycle is given up. */
  lost = false;
  /** The cycle's end, committed with its last window. */
  ending: ReturnType<typeof cycleEnd> | undefined;
  /** A spread cycle's last window, committed: its end waits for confirmPassed. */
  endedAt: WindowState | undefined;
  /** The first and last items of the cycle's first window, when this run read it. */
  firstWindow: FirstWindow | undefined;
  #starts: boolean;
  /** The items the last window with any committed, in this run: read by the cycle, staged or written. */
  #read = new Set<string>();

  constructor(
    readonly run: SweepRun<T>,
    readonly cursor: SweepCursor,
    readonly guard: WindowGuard | undefined,
    readonly spread: boolean,
    /** Ids reads of a doubted window, or of the list's start (showListStart), showed the read taken left out: kept. */
    readonly shown: Set<string>,
  ) {
    this.refusal = run.committer.latest.refused;
    this.#starts = cursor.edge === null;
  }

  async commit(window: Committed<T>): Promise<void | false> {
    const { run, guard, cursor } = this, { config, committer } = run;
    committer.tally.read += window.items.length; // as it arrives: refused by the guard, or committed
    // An empty first window proves no start: the next one's is judged.
    if (this.#starts && window.items.length > 0) {
      await checkStart(run, guard, window);
      const [first, last] = [window.items[0], window.items.at(-1)];
      this.firstWindow = {
        first: config.keyOf(first),
        last: config.keyOf(last),
      };
    }
    this.#starts &&= window.items.length === 0;
    // Page 1 begins after the cursor: the list moved on past rows of the copy (a retention window) when the cursor
    // stood on one and page 1 holds unseen rows; else another list answered, and the cycle is given up.
    const { state, ended } = window;
    const passed = { ids: window.ids, last: state.edge, ended };
    this.lost = window.lost === true && guard !== undefined &&
      !(guard.copy.edgeHeld && await holdsUnseen(guard, passed));
    if (this.lost) return false;
    const behind = guard && guard.passed.size + guard.beyond;
    if (guard !== undefined && await heldBack(guard, passed)) {
      // Refused: no more windows commit; those the budget still reads tell the share the refusal names.
      return config.signal?.throwIfAborted();
    }
    // Taken though doubted, within the share: another list's page (`foreignPage`) is refused; else one spliced among
    // the list's (`splicedPage`).
    const standing = committer.latest.sweep?.edge ?? null; // the window's own not yet committed
    const where = { edge: standing, cycle: cursor.cycle };
    const passes = guard === undefined
      ? 0
      : guard.passed.size + guard.beyond - (behind ?? 0);
    const retaken = guard?.retaken !== undefined &&
      guard.retaken === window.ids[0];
    const foreign = guard !== undefined &&
      (retaken
        ? foreignPage(run, guard, window, where)
        : splicedPage(run, guard, window, passes, where));
    if (await foreign || await this.#elsewhere(window, standing, passes)) {
      return await refuseForeign(run, cursor.cycle);
    }
    if (ended && !this.spread) {
      await showListStart(run, guard, this.shown, state, this.firstWindow);
      const { refusal } = this;
      this.ending = await commitEnd(run, guard, cursor, state, refusal, {
        window,
        kept: [...this.shown],
      });
      return;
    }
    const at = afterSweepWindow(committer.latest, cursor, state, false);
    await committer.commit("sweep", at, window);
    if (ended) this.endedAt = state;
    return ended ? false : undefined;
  }

  /** Whether `window` is another list's page sorting before the edge `standing` (`foreignBeforeEdge`). */
  async #elsewhere(
    window: Committed<T>,
    standing: SyncKey | null,
    passes: number,
  ): Promise<boolean> {
    if (this.guard === undefined) return false; // unguarded: nothing kept for it
    const read = this.#read;
    // Not `passed` (another list's page holding the edge's item seeded it); the cycle's first window's too.
    if (window.ids.length > 0) this.#read = new Set(window.ids);
    if (standing === null) return false; // it passes what is newer than the cycle: the guard's
    const at = { edge: standing, cycle: this.cursor.cycle, passes, read };
    return await foreignBeforeEdge(this.run, this.guard, window, at);
  }
}

/** The first and last items of a cycle's first window. */
type FirstWindow = { readonly first: SyncKey; readonly last: SyncKey };

/** The keys (as text) the reads of the list's start span, first to last; from the list's start: null; none read: undefined. */
type Span = readonly [string | null, string] | undefined;

/** Pages of the list's start a cycle's end reads again at most: 32 (a window's worth of requests, as confirmPassed). */
const START_PAGES = 32;

/**
 * Before a cycle's end removes rows (guarded: when it passed any; else when the run confirms a refusal), reads the
 * list's start again at another size than the windows' (a page 1 answered stale at the window's size left rows out):
 * page 1 at one less than the largest page honoured (two less where that is refused), then pages at the size it came
 * back, until one passes the last item of the cycle's first window (unknown: two pages), START_PAGES at most. What
 * they show, the end keeps (`shown`); an answer that cannot be the list's start refuses the end (`readStart`).
 */
async function showListStart<T>(
  run: SweepRun<T>,
  guard: WindowGuard | undefined,
  shown: Set<string>,
  { maxLimit, refused, accepted, full = 0, descending }: WindowState,
  firstWindow: FirstWindow | undefined,
): Promise<void> {
  const last = firstWindow?.last;
  const { maxDeletes } = run.config;
  if (
    guard === undefined && !confirms(run.committer.latest.refused, maxDeletes)
  ) return;
  if (guard?.passed.size === 0) return;
  // Under the largest size honoured where one was refused or cut; none yet this cycle, under that one.
  const largest = Number.isFinite(refused)
    ? Math.max(accepted, full) || refused - 1
    : maxLimit;
  for (const size of [largest - 1, largest - 2]) {
    const first = size < 1 ? [] : await listHead(run, size);
    if (first === undefined) continue; // refused: a least page size
    // What the reads of page 1 on did not span, they say nothing of: rows passed unseen there are kept.
    const span = first.length === 0
      ? noSpan(run, guard, last)
      : await readStart(run, first, shown, { firstWindow, guard, descending });
    if (guard !== undefined && firstWindow !== undefined) {
      keepUnspanned(guard, shown, span, firstWindow);
    }
    return;
  }
}

/**
 * No page read: page 1 came back empty. Where this run's requests answered items, the list did not end: the rows up to
 * `last` are kept, or, with none known to keep, the end is refused. A run that read no item reads an empty list.
 */
function noSpan<T>(
  run: SweepRun<T>,
  guard: WindowGuard | undefined,
  last: SyncKey | undefined,
): Span {
  const keeps = guard !== undefined && last !== undefined;
  if (run.requests.items > 0 && !keeps) {
    throw untrusted(
      run,
      "came back empty, though this run read items from the list",
    );
  }
  return undefined;
}

/**
 * Reads the list's start from page 1 (`first`) on, at the size it came back, showing `shown` what each page holds, until
 * one passes `last` (unknown: two pages), START_PAGES at most; the keys they span. A page that begins before the one
 * before it refuses the cycle's end, as the list ending before `last` does in a confirming run (it keeps none).
 */
async function readStart<T>(
  run: SweepRun<T>,
  first: readonly SyncKey[],
  shown: Set<string>,
  { firstWindow, guard, descending }: {
    firstWindow: FirstWindow | undefined;
    guard: WindowGuard | undefined;
    descending: boolean | undefined;
  },
): Promise<Span> {
  const got = first.length, sign = descending ? -1 : 1;
  const last = firstWindow?.last;
  const passes = (key: SyncKey) =>
    last !== undefined && sign * compareKeys(key, last) >= 0;
  // Page 1 holds the list from its start, unless it begins after the first window's first item.
  const after = firstWindow &&
    sign * compareKeys(first[0]!, firstWindow.first) > 0;
  let read = first, begun = first[0]!;
  for (let page = 1;; page++) {
    for (const { id } of read) shown.add(id);
    // Pages of one size one after another hold the list between them: none in a gap but rows gone (or skipped by an
    // answer, not told apart).
    const span: Span = [
      after ? keyText(first[0]!) : null,
      keyText(read.at(-1)!),
    ];
    if (last === undefined ? page >= 2 : read.some(passes)) return span;
    if (page >= START_PAGES) return span;
    const next = read.length < got ? [] : await listHead(run, got, page + 1)
      .catch(async (error) => {
        if (notFound(error) && await endsAt(run, page * got, got)) return [];
        throw error;
      });
    if (next === undefined) return span; // refused: no word
    if (next.length === 0) {
      // Cut, or `last` went since: the rows past the span are kept.
      if (last === undefined || guard !== undefined) return span;
      throw untrusted(run, "ended before an item this run read");
    }
    // Inserts before it since shift a page by a few items, never before the one before it.
    if (sign * compareKeys(next[0]!, begun) <= 0) {
      throw untrusted(run, "answered pages that do not join");
    }
    [read, begun] = [next, next[0]!];
  }
}

/**
 * Keeps the rows passed unseen within the cycle's first window (after its first item, up to its last) outside the
 * `span` of the reads of the list's start. Before the window's first item the window said they went.
 */
function keepUnspanned(
  { passed, descending }: WindowGuard,
  shown: Set<string>,
  span: Span,
  window: FirstWindow,
): void {
  const [first, last] = [keyText(window.first), keyText(window.last)];
  const within = (key: string, [from, to]: NonNullable<Span>) =>
    !before(descending, key, from) && !before(descending, to, key);
  for (const [id, key] of passed) {
    if (!before(descending, first, key) || before(descending, last, key)) {
      continue;
    }
    if (span === undefined || !within(key, span)) shown.add(id);
  }
}

/** The refusal of a cycle's end whose read of the list's first pages `what` (untrusted: a cache, another list). */
function untrusted<T>({ config }: SweepRun<T>, what: string) {
  const message =
    `Cannot sync ${config.identity.path}: the list's first pages, read again before the sweep's cycle ends, ${what}: an answer that cannot be trusted (a cache, another list); nothing of the cycle was removed: run again`;
  return new SyncError(message, "unordered");
}

/**
 * Whether the list ends at `at`, where a page beginning there answered 404 after a full page before it (as Django REST
 * Framework does): as a page of one size less (or more) beginning before it says. One 404 alone is no word.
 */
async function endsAt<T>(run: SweepRun<T>, at: number, got: number) {
  const size = got > 1 && at % (got - 1) !== 0 ? got - 1 : got + 1;
  const begins = Math.floor(at / size) * size;
  const read = await listHead(run, size, begins / size + 1);
  return read !== undefined && read.length > 0 && begins + read.length === at;
}

/** Refuses a cycle's first window that skipped an item the list holds at its start (`skipsStart`), with the guard on. */
async function checkStart<T>(
  run: SweepRun<T>,
  guard: WindowGuard | undefined,
  window: Committed<T>,
) {
  const { config } = run;
  const first = config.keyOf(window.items[0]);
  const { ids, limit, passed = [], beyond = [], start = 0 } = window;
  const page1 = start === 0 ? [...passed, ...beyond] : undefined;
  const { edge } = run.committer.latest;
  const ask = { ids, first, limit, edge, page1, above: start + passed.length };
  const read = (limit: number, page: number) => listHead(run, limit, page);
  if (guard && await skipsStart(guard, ask, read)) {
    const message =
      `Cannot sync ${config.identity.path}: the sweep's first page began after rows of the copy, though the list's first page, read at other sizes, shows them before it: page 1 was answered stale or shifted (a cache of that page); nothing of the cycle was committed or removed: run again`;
    throw new SyncError(message, "unordered");
  }
}

/** Commits the first checkpoint of the cycle `cursor` begins (no window: the sink hears it begins). */
async function beginCycle<T>(committer: Committer<T>, cursor: SweepCursor) {
  const checkpoint = { ...committer.latest, sweep: cursor };
  await committer.commit("sweep", checkpoint, undefined, { beginsCycle: true });
}

/** Gives up a cycle for a fresh one begun now (swept from the next run), with what it saw and staged. */
async function beginAfresh<T>({ config, committer }: SweepRun<T>) {
  const at = { now: config.now(), fresh: true };
  const begun = sweepStart(committer.latest, config, at);
  if (begun !== undefined) await beginCycle(committer, begun.sweep);
}
