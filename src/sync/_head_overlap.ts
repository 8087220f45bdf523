// Internal: whether the head window over the copy's last item shows another list, asked once a run (the head refuses
// the run at share 1 then): read further on only where it would refuse.

import type { Committer } from "./_committer.ts";
import { type Committed, type PassRun, readWindow } from "./_pass.ts";
import type { SyncKey } from "./_window.ts";

/** What the check reads with: the pass's run, and the committer whose batches the sink holds first. */
type Run<T> = PassRun<T> & { readonly committer: Committer<T> };

/** Reads further on at most: twice 16 doublings and halvings (a service ignoring `page` answers every read in full). */
const MAX_READS = 32;

/**
 * Whether the head window over the copy's last item `edge` (newest first, the first to reach the copy) shows another
 * list: once. Holding that item, it is the same list; else (deleted, or another list answered) it must hold rows of the
 * copy there, or, read again at another address alike, the list further on must (`holdsFurther`); the sink's `holds`
 * tells (a sink that cannot tell is taken at its word).
 */
export function overlapCheck<T>(run: Run<T>, edge: SyncKey | null) {
  const { config } = run;
  const descending = config.identity.sortDirection === "DESC";
  let checked = edge === null || config.maxDeletes >= 1;
  return async (window: Committed<T>) => {
    const around = descending ? window.beyond : window.passed;
    if (checked || (around === undefined && descending)) return false;
    checked = true;
    if (around === undefined || around.some((key) => key.id === edge!.id)) {
      return false;
    }
    if (!await holdsNoneOf(run, around.map((key) => key.id))) return false;
    const place = await placeOf(run, window, around, descending);
    if (place === undefined) return true;
    // Found there again once the reads further on found a row of the copy: a misrouting that spans the window and the
    // first look, not every read after them, is caught by this read or by those before it.
    return !await holdsFurther(run, place, descending) ||
      await placeOf(run, window, around, descending) === undefined;
  };
}

/**
 * Where `around` (a part of the head window) lies in the list, as a read at another address finds one of its items
 * there, at a size known honoured and at most half the window's: none when no read does, so the window was another
 * list's answer (misrouted once, or from a cache poisoned for its address), whatever the list further on holds
 * (trusting it let 90 rows of another list in). A window the service cut may lie where the cut's size places it.
 */
async function placeOf<T>(
  run: Run<T>,
  { plan, ids, passed = [], beyond = [], state }: Committed<T>,
  around: readonly SyncKey[],
  descending: boolean,
): Promise<Place | undefined> {
  const size = Math.max(
    1,
    Math.min(plan.limit >> 1, state.accepted || Infinity),
  );
  // Newest first, `around` (the items past the copy's top) ends the window; else it begins it.
  const within = descending ? passed.length + ids.length : 0;
  const count = passed.length + ids.length + beyond.length;
  const cut = count < plan.limit ? [(plan.page - 1) * count] : [];
  const own = new Set(around.map((key) => key.id));
  for (const start of new Set([plan.start, ...cut])) {
    const at = start + within;
    const from = at - at % size;
    const page = from / size + 1;
    const items = await readWindow(run, { start: from, limit: size, page });
    if (items.some((item) => own.has(run.config.keyOf(item).id))) {
      return { at, size };
    }
  }
  return undefined;
}

/** Where a part of the head window lies (`at`, its first item's place), and a size the service honours (`size`). */
type Place = { readonly at: number; readonly size: number };

/**
 * Whether the list holds a row of the copy past `place`, where the copy's older rows lie (before it; newest first,
 * after it, to the list's end, found by an empty read): windows twice as far each time, then halfway between one with
 * items and one past the end. A mass delete that took the copy's last item, then items back-dated into the gap it
 * left, fill that window with items the copy lacks, and the same list holds the copy's other rows further on; another
 * list holds none.
 */
async function holdsFurther<T>(
  run: Run<T>,
  { at: place, size: limit }: Place,
  descending: boolean,
): Promise<boolean> {
  const at = Math.floor(place / limit);
  // Windows away from the head's: `low` read with items (0: the head's own), `high` known past the list's end.
  let [low, high] = [0, descending ? Infinity : at + 1];
  for (let reads = 0; high - low > 1 && reads < MAX_READS; reads++) {
    // Twice as far while that stays short of the end, then halfway to it (oldest first, page 1 is the end).
    const doubled = Math.max(1, 2 * low);
    const halfway = descending ? Math.floor((low + high) / 2) : high - 1;
    const away = doubled < high ? doubled : halfway;
    const index = descending ? at + away : at - away;
    const page = index + 1;
    const items = await readWindow(run, { start: index * limit, limit, page });
    const ids = items.map((item) => run.config.keyOf(item).id);
    if (items.length > 0 && !await holdsNoneOf(run, ids)) return true;
    if (items.length === 0) high = away;
    else low = away;
  }
  return false;
}

/** Whether the sink shows it holds none of `ids` as live rows (a sink that cannot tell: false). */
export async function holdsNoneOf<T>(
  { config, committer }: Run<T>,
  ids: readonly string[],
): Promise<boolean> {
  await committer.done();
  return (await config.sink.holds?.(ids, config.keyOf))?.size === 0;
}
