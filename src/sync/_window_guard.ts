// Internal: the guard judged before each sweep window commits, over the copy's rows the cycle has not seen that the
// window's range passes (`CopyReader`: a SQL sink's key index, or rows read once): a window past `maxDeletes` stops the
// run. The cycle's end judges again (the backstop).

import { compareKeys } from "./_key_order.ts";
import { firstPast, MIN_WINDOW, type SyncKey } from "./_window.ts";
import { type RecentDeletes, tooMany } from "./_deletes.ts";
import { tried } from "../core/_check.ts";
import {
  type KeyedCopy,
  keyOfText,
  keyText,
  type UnseenRow,
} from "./_key_text.ts";
import type { SyncSink } from "./sink.ts";

export type CopyRow = Readonly<{ id: string; item: unknown; seen: boolean }>;

/** The largest copy read whole for the guard (0.3 s per 100,000 rows, 50 MB at 200,000); a larger one at its end only. */
export const MAX_GUARDED_ROWS = 250_000;

/** Where the guard reads the copy: its live rows, and those the cycle has not seen in a range of key texts. */
export interface CopyReader {
  /** Live rows of the copy when the sweep started. */
  readonly held: number;
  /** The cycle's cursor stood on a row of the copy when the sweep started (not on an item the copy lacked). */
  readonly edgeHeld: boolean;
  /** Unseen rows with keys after `after`, at or before `upTo` (null: open), in the pass's order; at most `most`. */
  unseen(
    after: string | null,
    upTo: string | null,
    most: number,
  ): Promise<readonly UnseenRow[]>;
  /** A window's ids, seen: a reader of rows read once forgets them (a sink's own log tells once they commit). */
  saw(ids: readonly string[]): void;
  /** How many live rows lie after key text `after` (null: from the start) and before the row of `key`. */
  place(after: string | null, key: string): Promise<number>;
}

/** The guard of a sweep under way: what it weighs, and the unseen rows its windows passed. */
export interface WindowGuard {
  readonly copy: CopyReader;
  readonly maxDeletes: number;
  /** The last 24 hours when the sweep started: a window weighs its share of their largest size, not their deletes. */
  readonly recent: RecentDeletes;
  /** The pass reads newest first: rows at or after a window's last key are behind it. */
  readonly descending: boolean;
  /** Unseen rows the pass stands past, id → key text (at or before `reach`): a window's ids leave it. */
  readonly passed: Map<string, string>;
  /** The key text the pass stands at (null: before the first window). */
  reach: string | null;
  /** The copy's unseen rows past `reach` up to `upTo`, as read last for a window (its doubt, then its judgement). */
  ahead?: Ahead & {
    readonly reach: string | null;
    readonly upTo: string | null;
  };
  /** Unseen rows passed past a full answer (`Ahead`'s `more`): counted, not kept (the guard broke there). */
  beyond: number;
  /** Once a window broke the guard: the unseen rows the last window read passed (a refusal quotes it). */
  refused?: number;
  /** Unseen rows that windows read twice alike passed once more: two reads of another list weigh as two windows. */
  doubled: number;
  /** The first id of the last window taken though doubted (read twice alike): the engine asks the sink about it. */
  retaken?: string;
}

/** The copy's unseen rows past where the pass stands: the first (`rows`), cut (`full`), and how many more (not kept). */
type Ahead = {
  readonly rows: readonly UnseenRow[];
  readonly full: boolean;
  readonly more: number;
};

/** A window as the guard sees it: its ids, and the key it ends at (`ended`: the cycle's last). */
type Passing = {
  readonly ids: readonly string[];
  readonly last: SyncKey | null;
  readonly ended: boolean;
};

/** The guard of a sweep over `copy`, or none for a copy that holds no live row (nothing to remove). */
export function windowGuard(
  copy: CopyReader,
  figures: Pick<WindowGuard, "maxDeletes" | "recent" | "descending">,
): WindowGuard | undefined {
  if (copy.held === 0) return undefined;
  return {
    ...figures,
    copy,
    passed: new Map(),
    reach: null,
    doubled: 0,
    beyond: 0,
  };
}

/**
 * True when a window must not commit: the unseen rows at or before its `last` key (all once it `ended` the cycle), its
 * `ids` seen, break the guard, or a window before did (`refused` then counts what the windows so far passed).
 */
export async function heldBack(guard: WindowGuard, window: Passing) {
  const { maxDeletes, recent, refused = 0 } = guard;
  await passTo(guard, window);
  const behind = guard.passed.size + guard.beyond + guard.doubled;
  // The end's base, not its deletes: never stricter than the end would be.
  const base = { deleted: 0, largest: recent.largest };
  const broken = guard.refused !== undefined ||
    tooMany(behind, guard.copy.held, maxDeletes, base);
  if (!broken) return false;
  guard.refused = Math.min(guard.copy.held, Math.max(refused, behind)); // `behind` counts doubted rows twice
  return true;
}

/** Moves the pass to `window`'s end: the unseen rows it passed join `passed`, and its own ids leave. */
async function passTo(guard: WindowGuard, window: Passing): Promise<void> {
  const upTo = window.ended ? null : window.last && keyText(window.last);
  if (upTo !== null && before(guard.descending, upTo, guard.reach)) {
    backTo(guard, upTo);
  } else if (window.ended || upTo !== null) {
    const { rows, more } = await rowsAhead(guard, upTo, window.ids);
    for (const row of rows) guard.passed.set(row.id, row.key);
    guard.beyond += more;
  }
  if (window.ended || upTo !== null) guard.reach = upTo;
  for (const id of window.ids) guard.passed.delete(id);
  guard.copy.saw(window.ids);
  // Its rows seen now: a pass back over the same range again read them as unseen from the answer kept (50 of 49).
  delete guard.ahead;
}

/** How many unseen rows lie past `after` up to `upTo`, but `ids`, read a page at a time and none kept. */
async function countFrom(
  copy: CopyReader,
  [after, upTo]: [string, string | null],
  ids: readonly string[],
) {
  const except = new Set(ids);
  let count = 0;
  let page: readonly UnseenRow[] = [{ id: "", key: after }];
  while (page.length > 0) {
    page = await copy.unseen(page.at(-1)!.key, upTo, COUNTED_PAGE);
    count += page.filter((row) => !except.has(row.id)).length;
  }
  return count;
}

/** Rows a refusal's count reads at a time. */
const COUNTED_PAGE = 10_000;

/**
 * Whether a cycle's first window, of `ids` from `first`, skips items the list still holds at its start (page 1 answered
 * stale or shifted): unseen rows of the copy lie before `first`, and reads where the window put `first`, at other
 * addresses than the window's (`head`), show some. Pages of one and of 25 (24) that agree decide; else a page of 23 (24)
 * votes too, and a tie refuses (a read that shows a row saw it in the list): one stale answer of three is outvoted.
 */
export async function skipsStart(
  guard: WindowGuard,
  { ids, first, limit, edge, page1, above = 0 }: {
    ids: readonly string[];
    first: SyncKey;
    limit?: number | undefined;
    /** The copy's last item committed (newest first, the newest: a head's top, seen by the cycle it carries on). */
    edge: SyncKey | null;
    /** The window's keys outside the cycle's range, where it is page 1. */
    page1?: readonly SyncKey[] | undefined;
    /** How many items the list held before `first` as the window read it (a head's new items, newest first). */
    above?: number;
  },
  head: (
    limit: number,
    page: number,
  ) => Promise<readonly SyncKey[] | undefined>,
): Promise<boolean> {
  const own = new Set(ids);
  const before = await guard.copy.unseen(null, keyText(first), 2);
  // The first row in the pass's order is one before the window, or its first item: two rows tell.
  if (!before.some((row) => !own.has(row.id))) return false;
  // What page 1 showed, in the cycle's range or not: a fresh one shows the copy's newest row.
  const shows = page1 && new Set([...ids, ...page1.map((key) => key.id)]);
  const edgeShown = edge === null || shows === undefined || shows.has(edge.id);
  const at = { first, edge: edgeShown ? null : edge, shows };
  // Each read's page holds the place the window gave `first`: past 24 new items, page 1 shows only them.
  const vote = async (size: number) =>
    startVote(guard, at, size, await head(size, Math.floor(above / size) + 1));
  // Sizes never the window's own address (a cache of it answers alike), nor past maxLimit.
  const sizes = [1, MIN_WINDOW, MIN_WINDOW - 1, MIN_WINDOW - 2];
  const [one, two, three] = sizes.filter((size) => size !== limit);
  const [a, b] = [await vote(one!), await vote(two!)];
  if (a === b && a !== 0) return a > 0;
  const votes = [a, b, await vote(three!)];
  const shown = votes.filter((vote) => vote > 0).length;
  return shown > 0 && shown >= votes.filter((vote) => vote < 0).length;
}

/**
 * What the list's first `size` items (`read`) say of the copy's rows before the window's `first`: 1, they hold an
 * unseen one (by its stored key), or the copy's `edge`, or, a full page of 23 or more, none that page 1 `shows`; -1,
 * they reach `first` (or the list's end) holding none; 0, they cannot tell (refused, empty, or only other items).
 */
async function startVote(
  guard: WindowGuard,
  { first, edge, shows }: {
    first: SyncKey;
    edge: SyncKey | null;
    shows: ReadonlySet<string> | undefined;
  },
  size: number,
  read: readonly SyncKey[] | undefined,
): Promise<-1 | 0 | 1> {
  // Empty, it contradicts the window: a service that answers a small page with none.
  if (read === undefined || read.length === 0) return 0;
  const sign = guard.descending ? -1 : 1;
  const earlier = read.filter((key) => sign * compareKeys(key, first) < 0);
  if (edge && earlier.some((key) => compareKeys(key, edge) === 0)) return 1;
  // 23 or more items before the window, none on page 1: page 1 is older than they are. Fewer than asked reach the
  // list's end: none of the copy's rows there is -1.
  const newer = size > 1 && earlier.length === size;
  if (newer && shows && !read.some((key) => shows.has(key.id))) return 1;
  if (earlier.length > 0) {
    const texts = earlier.map(keyText).sort();
    // From just before the first in the pass's order (its prefix, or the text and "\x01") to the last.
    const [after, upTo] = guard.descending
      ? [texts.at(-1)! + "\x01", texts[0]!]
      : [texts[0]!.slice(0, -1), texts.at(-1)!];
    const rows = await guard.copy.unseen(after, upTo, COUNTED_PAGE);
    const unseen = new Set(rows.map((row) => row.id));
    if (earlier.some((key) => unseen.has(key.id))) return 1;
  }
  return earlier.length < read.length || read.length < size ? -1 : 0;
}

/**
 * Whether a window holds a row of the copy that the cycle has yet to see, at or before its end (its range's, or passed),
 * or may: an answer cut at the share may leave them out, and its window breaks the guard anyway.
 */
export async function holdsUnseen(guard: WindowGuard, window: Passing) {
  const upTo = window.last && keyText(window.last);
  const { rows, full } = await rowsAhead(guard, upTo, window.ids);
  return full || holdsAny(guard, window.ids, rows);
}

/** Whether `ids` hold a row the pass went by unseen, or one of `rows` (unseen, ahead of it). */
export function holdsAny(
  { passed }: WindowGuard,
  ids: readonly string[],
  rows: readonly UnseenRow[],
): boolean {
  const ahead = new Set(rows.map((row) => row.id));
  return ids.some((id) => passed.has(id) || ahead.has(id));
}

/**
 * The copy's unseen rows past where the pass stands, up to `upTo` (none behind it): enough to tell that a window of
 * `ids` breaks the guard (the share, and the window's own), never the whole copy.
 */
export async function rowsAhead(
  guard: WindowGuard,
  upTo: string | null,
  ids: readonly string[],
): Promise<Ahead> {
  const { reach, ahead } = guard;
  if (upTo !== null && !before(guard.descending, reach, upTo)) {
    return { rows: [], full: false, more: 0 };
  }
  if (ahead?.reach === reach && ahead.upTo === upTo) return ahead;
  const base = Math.max(guard.copy.held, guard.recent.largest);
  const most = ids.length + Math.ceil(guard.maxDeletes * base) + 1;
  const rows = await guard.copy.unseen(reach, upTo, most);
  // A full answer breaks the guard: the rows past it are counted for the refusal's share, not kept.
  const range: [string, string | null] = [rows.at(-1)?.key ?? "", upTo];
  const full = rows.length >= most;
  const more = full ? await countFrom(guard.copy, range, ids) : 0;
  guard.ahead = { reach, upTo, rows, full, more };
  return guard.ahead;
}

/** A pass that moved back to `upTo` no longer stands past the unseen rows after it. */
function backTo({ passed, descending }: WindowGuard, upTo: string): void {
  for (const [id, key] of passed) {
    if (before(descending, upTo, key)) passed.delete(id);
  }
}

/** Whether key text `a` comes before `b` in the pass's order (null: before every key). */
export function before(
  descending: boolean,
  a: string | null,
  b: string | null,
) {
  return b !== null && (a === null || (descending ? a > b : a < b));
}

/** What a reader of the copy is asked with: the cycle, the pass's direction, the cursor's id, how to key an item. */
type ReaderAsk = {
  readonly cycle: number;
  readonly keyOf: (item: unknown) => SyncKey;
  readonly descending: boolean;
  readonly edge: string | undefined;
  /** The run's: keying a copy's rows (after an older version wrote them) stops when it aborts. */
  readonly signal?: AbortSignal | undefined;
};

/** A reader of a sink's key index (`KeyedCopy`): each read waits for the batches before it (`settled`) to commit. */
export async function keyedReader(
  sink: KeyedCopy & Pick<SyncSink<unknown>, "holds">,
  { cycle, keyOf, descending, edge, signal }: ReaderAsk,
  settled: () => Promise<void>,
): Promise<CopyReader> {
  return {
    held: await sink.liveCount(),
    edgeHeld: edge !== undefined &&
      (await sink.holds?.([edge], keyOf))?.has(edge) === true,
    async unseen(after, upTo, most) {
      await settled();
      const range = { after, upTo, descending };
      return await sink.unseenBetween(cycle, range, most, keyOf, signal);
    },
    saw: () => {},
    async place(after, key) {
      await settled(); // the row of `key` is live: counted with them
      return await sink.liveCount({ after, upTo: key, descending }) - 1;
    },
  };
}

/** A reader of `rows` read once (a sink without a key index): the unseen ones keyed and sorted; none past `most`. */
export async function rowsReader(
  rows: AsyncIterable<CopyRow>,
  { keyOf, descending, edge }: ReaderAsk,
  most: number = MAX_GUARDED_ROWS,
): Promise<CopyReader | undefined> {
  const unseen = new Map<string, SyncKey>();
  const seen: SyncKey[] = []; // with the unseen, where a row stands (`place`)
  let held = 0, edgeHeld = false;
  for await (const row of rows) {
    if (++held > most) return undefined;
    edgeHeld ||= row.id === edge;
    const key = tried(() => keyOf(row.item));
    // A JSONL copy lists a moved item's old line, then the head's after it: one row, the last line's.
    if (row.seen) {
      if (unseen.delete(row.id)) held--;
      if (key !== undefined) seen.push(key);
      continue;
    }
    if (key === undefined) continue; // left to the cycle's end
    if (unseen.has(row.id)) held--;
    unseen.set(row.id, key);
  }
  const byOrder = (a: SyncKey, b: SyncKey) =>
    (descending ? -1 : 1) * compareKeys(a, b);
  // Keyed as text only where a window reads (200,000 texts at once cost a run's start 0.5 s).
  const order = [...unseen].sort(([, a], [, b]) => byOrder(a, b));
  const textAt = (at: number) => keyText(order[at]![1]);
  return {
    held,
    edgeHeld,
    unseen(after, upTo, most) {
      const found: UnseenRow[] = [];
      // The first whose key comes after `after` (every key does after null).
      const past = (at: number) => before(descending, after, textAt(at));
      for (let at = firstPast(order.length, past); at < order.length; at++) {
        if (found.length >= most) break;
        const key = textAt(at);
        if (upTo !== null && before(descending, upTo, key)) break;
        const id = order[at]![0];
        if (unseen.has(id)) found.push({ id, key });
      }
      return Promise.resolve(found);
    },
    saw: (ids) => ids.forEach((id) => unseen.delete(id)),
    place(after, text) {
      const sorted = seen.sort(byOrder); // once: in order after
      // Rows up to `key`, of the seen and of the (first) unseen.
      const upTo = (key: SyncKey) =>
        firstPast(sorted.length, (at) => byOrder(sorted[at]!, key) > 0) +
        firstPast(order.length, (at) => byOrder(order[at]![1], key) > 0);
      const from = after === null ? 0 : upTo(keyOfText(after));
      return Promise.resolve(upTo(keyOfText(text)) - from - 1);
    },
  };
}
