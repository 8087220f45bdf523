// Internal: whether a sweep window is another list's page, or another list's ids spliced among the list's own: judged
// by the copy (the rows it passes, those it holds) and, where the copy cannot tell, by a read at another address.

import type { SyncConfig } from "./_config.ts";
import type { CycleRun, SweepRun } from "./_committer.ts";
import type { SweepCursor } from "./sink.ts";
import type { WindowGuard } from "./_window_guard.ts";
import { isKeyed, keyOfText, keyText } from "./_key_text.ts";
import { type Committed, listHead } from "./_pass.ts";
import { compareKeys } from "./_key_order.ts";
import { MIN_WINDOW, type SyncKey } from "./_window.ts";

/**
 * Whether `window`, holding none of the copy's live rows where its range passes rows the cycle has yet to see, is another
 * list's page. Taken only when its range holds few of the copy's rows (a quarter of its items at most) and a read at
 * another address (its size one less, or more) shows the same items there; a read that tells nothing refuses.
 */
export async function foreignPage<T>(
  run: SweepRun<T>,
  guard: WindowGuard,
  window: Committed<T>,
  { edge, cycle }: Pick<SweepCursor, "edge" | "cycle">,
): Promise<boolean> {
  // Items cycle `cycle` staged are the list's.
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
  const within = await readWithin(run, window, span(run, [edge, keyOf(last)]));
  return within.length === 0 || within.some((key) => !own.has(key.id));
}

/**
 * Whether `window`, passing `passes` rows of the copy the cycle has yet to see (more than a quarter of its size) and
 * holding items that are neither rows of the copy nor staged for `cycle`, is another list's spliced among the list's
 * own: a read at another address (`readWithin`) shows, past the edge up to its last item, a row of the copy it lacks,
 * or nothing (without that read, a list that lost rows and gained as many there was refused every run). A read
 * opening past the first row the window passes is followed by one of the page before it.
 */
export async function splicedPage<T>(
  run: SweepRun<T>,
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
  const own = new Set(window.ids), keep = span(run, [edge, keyOf(last)]);
  const within = await readWithin(run, window, keep, 2);
  if (within.length === 0 || await lacks(run, own, within)) return true;
  // Opening past the first row the window passes, that read told nothing of it: read the page before it too.
  const rows = await guard.copy.unseen(
    keyText(edge),
    keyText(keyOf(last)),
    limit,
  );
  const gone = rows.find((row) => !own.has(row.id));
  const sign = config.identity.sortDirection === "DESC" ? -1 : 1;
  if (
    gone === undefined ||
    sign * compareKeys(within[0]!, keyOfText(gone.key)) <= 0
  ) return false;
  const at = (window.start ?? 0) + (window.passed?.length ?? 0) - (limit - 1);
  return await lacks(
    run,
    own,
    await readWithin(run, window, keep, 1, Math.max(0, at)),
  );
}

/**
 * Whether `window`, passing `passes` rows of the copy the cycle has yet to see, is another list's page sorting before
 * `edge`: most of its items up to it are neither the edge's own, nor the copy's rows, nor items of `read` (the last
 * window with any this run committed), unless, passing a quarter of its size at most or the run's first with its
 * items up to the edge staged by the run before, it leads to the edge as the list's own page does (`leadsToEdge`).
 */
export async function foreignBeforeEdge<T>(
  run: SweepRun<T>,
  guard: WindowGuard,
  window: Committed<T>,
  { edge, cycle, passes, read }: {
    edge: SyncKey;
    cycle: number;
    passes: number;
    read: ReadonlySet<string>;
  },
): Promise<boolean> {
  const before = passes > 0 ? window.passed ?? [] : [];
  if (before.length === 0) return false;
  const unread = before.map((key) => key.id)
    .filter((id) => !read.has(id) && id !== edge.id);
  if (!await mostUnknown(run, unread, before.length)) return false;
  const size = window.limit ?? before.length + window.ids.length;
  // Passing many, only the run's first window whose items up to the edge the run before staged is judged as one
  // passing few (else a cycle never ended).
  const staged = async () =>
    !await mostUnknown(run, unread, before.length, cycle);
  if (4 * passes > size && (read.size > 0 || !await staged())) return true;
  return !await leadsToEdge(run, guard, window, { edge, cycle });
}

/**
 * The keys the list shows that `keep` keeps, read where `window`'s first item past its overlap stands (or `at`) at its
 * size one less, else (refused) one more; with `reads` 2, at the other size half a window further on too when the first
 * showed none (a list gaining an item a request had moved on past it). None where they tell nothing.
 */
async function readWithin<T>(
  run: SweepRun<T>,
  window: Committed<T>,
  keep: (key: SyncKey) => boolean,
  reads = 1,
  at = (window.start ?? 0) + (window.passed?.length ?? 0),
): Promise<SyncKey[]> {
  const limit = window.limit ?? MIN_WINDOW;
  for (const size of [limit - 1, limit + 1]) {
    if (size < 1 || reads === 0) continue;
    const read = await listHead(run, size, Math.floor(at / size) + 1);
    if (read === undefined) continue; // refused: a least page size
    reads--;
    const within = read.filter(keep);
    if (within.length > 0) return within;
    at += Math.floor(limit / 2); // what it reads stood further on by then
  }
  return [];
}

/** Keys past `after`, up to `last`, in the pass's order. */
function span<T>(
  { config }: CycleRun<T>,
  [after, last]: [SyncKey | null, SyncKey],
) {
  const sign = config.identity.sortDirection === "DESC" ? -1 : 1;
  return (key: SyncKey) =>
    (after === null || sign * compareKeys(key, after) > 0) &&
    sign * compareKeys(key, last) <= 0;
}

/** Whether `keys` hold a row of the copy that is not among `own`. */
async function lacks<T>(
  { config }: CycleRun<T>,
  own: ReadonlySet<string>,
  keys: readonly SyncKey[],
) {
  const lacked = keys.filter((key) => !own.has(key.id)).map((key) => key.id);
  if (lacked.length === 0) return false;
  return (await config.sink.holds?.(lacked, config.keyOf))?.size !== 0;
}

/**
 * What `foreignPage` takes a quarter of: `window`'s new items; its size (at most `limit`) where it is a short page
 * holding the edge's item where it overlaps and reaching past every row of the copy the cycle has yet to see (the list's
 * end, its last few rows gone before an item new there). Not elsewhere: another list would take the share.
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

/**
 * Whether, of `of` items, `ids` are those not known the list's, and more than half of `of` are among them and not the
 * copy's live rows (a sink that cannot tell: false).
 */
async function mostUnknown<T>(
  { config, committer }: CycleRun<T>,
  ids: readonly string[],
  of: number,
  cycle?: number,
): Promise<boolean> {
  await committer.done();
  const held = await config.sink.holds?.(ids, config.keyOf, cycle);
  return held !== undefined && 2 * (ids.length - held.size) > of;
}

/**
 * Whether `keys` (a window's items up to the edge `edge`, in the pass's order) are the list's own there, new items come
 * in among them: one at least is a row of the copy or an item cycle `cycle` staged (other than the edge's), and every
 * live row of the copy the cycle saw between their first and the edge is among them. Another list's page lacks the
 * copy's rows there, or holds none of them nor anything the cycle read.
 */
async function leadsToEdge<T>(
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
  // The live rows after the first up to the edge, less the edge's own (if one) and those the cycle passed unseen.
  const [after, upTo] = [keyText(first), keyText(edge)];
  const live = await guard.copy.place(after, upTo) + 1;
  const between = live - (held.has(edge.id) ? 1 : 0);
  const passed = await guard.copy.unseen(after, upTo, Math.max(0, between));
  return between - passed.length <= rest.filter((k) => held.has(k.id)).length;
}

/**
 * Whether a window stands in the list where its items up to the edge (`ids`) say: one of them is a row of the copy
 * or an item cycle `cycle` staged, or most of its items past the edge (`past`) are rows of the copy.
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
