// Internal: what a window proves, as pure functions over the pass's state (_window_plan.ts: where the next goes).
// Invariant (docs/sync.md): every item keyed up to `edge` that existed for the whole run is in the sink, once.

import {
  checkOrder,
  compareKeys,
  type Order,
  type SyncKey,
} from "./_key_order.ts";
import type { SweepCursor, SyncCheckpoint } from "./sink.ts";

export type { SyncKey };

/** Where a pass stands between windows: its `edge` and `offset` (null and 0 before the first). */
export interface WindowState extends Pick<SyncCheckpoint, "edge" | "offset"> {
  /** Items to read before `offset`, so that a shift to the left stays visible. */
  readonly margin: number;
  /** The largest size known to be honoured (0 until a page shows one). */
  readonly accepted: number;
  /** The cost bound, which the service honours: a page it cuts holds at least this many (absent: any short page). */
  readonly limit?: number;
  /** The largest size this pass saw answered in full: one honoured only in earlier runs may have been lowered since. */
  readonly full?: number;
  /**
   * While a short page is read again at its own size: the sizes known before, back once it comes back full; null once
   * they came back this pass (a page cut again keeps its cap: the service lowered its largest).
   */
  readonly capped?: Pick<WindowState, "accepted" | "refused"> | null;
  /** The smallest size refused, or cut (a short answer ending at `cutEnd`, past which a cut holds items); or Infinity. */
  readonly refused: number;
  readonly cutEnd?: number;
  /** The smallest size the service answered with a 400, kept in the checkpoint: no later run of the cycle asks it. */
  readonly rejected?: number;
  readonly maxLimit: number;
  /** The largest size under the cap refused this pass (a least page size): no window of the pass is placed at it or under. */
  readonly least?: number;
  /** Where a window over the cap (planWindow's last resort) brought nothing this pass: none is asked there again. */
  readonly overTried?: number;
  readonly descending?: boolean;
  /** The keys this pass commits (every key when absent), ascending: above `above`, up to `upTo` (inclusive); a key past the far end ends it. */
  readonly domain?: { above: SyncKey | null; upTo: SyncKey | null };
  /** While a window missed the edge: what is known of where it stands. */
  readonly seek?: Seek;
  /** A sweep: the window before was short, and ended at this key (null: empty); a short one that agrees ends the pass. */
  readonly short?: SyncKey | null;
  /** Short reads in a row that disagreed about where the list ends. */
  readonly shortReads?: number;
  /** Windows that sought the edge since the pass last brought an item (a sweep's go on from the run before). */
  readonly misses?: number;
}

/** Where the edge stands, as windows that missed it tell: at or after `low`, before `high`, after `probes` misses. */
export type Seek = NonNullable<SweepCursor["seek"]>;

/** One window: `limit` items from `start`, i.e. page `start / limit + 1`. */
export type WindowPlan = { start: number; limit: number; page: number };

/** A short page's end: the item past it is read at `at`, after `last`; it held `count` items. */
export type ShortEnd = {
  at: number;
  last: SyncKey;
  count: number;
  /** It ends before the end read just before it: only where the item before `at` is not past `last` (goesOn). */
  moved?: boolean;
};

/** What a window proves, given the state before it. */
type WindowVerdict =
  | {
    /** It overlaps what is committed: `keys.slice(fresh.from, fresh.to)` commit. */
    readonly kind: "commit";
    readonly fresh: { readonly from: number; readonly to: number };
    readonly next: WindowState;
    /** The pass is complete. */
    readonly ended: boolean;
    /** The pass stops with its cycle under way: short reads kept disagreeing about where the list ends. */
    readonly halted?: boolean;
    /** A sweep's short page of `count` items before its known end: the end only if no item lies at `at`, after `last`. */
    readonly endsBefore?: ShortEnd;
    /** Page 1 begins after `edge`: nothing at or before it exists now, so all the pass committed is gone from the list. */
    readonly lost?: boolean;
    /** It holds a key past the pass's (a descending head: an item the copy held before the run). */
    readonly reached: boolean;
  }
  | {
    /** It starts after `edge`, so it may have skipped items: read again earlier. */
    readonly kind: "gap";
    readonly next: WindowState;
  };
export type Verdict = Extract<WindowVerdict, { kind: "commit" }>;

/** Short reads in a row, disagreeing about the list's end, after which a sweep stops for this run. */
const MAX_SHORT_READS = 3;
/** The smallest margin: one delete between two windows stays visible. */
export const MIN_MARGIN = 2;
/** The margin of a run's first window: deletes since the last run are unknown. */
export const RESUME_MARGIN = 32;
/** The smallest `maxLimit`: below it every size may divide the offset (lcm(2..25) exceeds any), leaving no window. */
export const MIN_WINDOW = 25;

/**
 * Judges a window of `keys` read at `plan`: one that starts at the head or at or before `edge` commits (a page holds
 * every item between `edge` and its last that existed). @throws {SyncError} (`"unordered"`) For keys out of order.
 */
export function judgeWindow(
  state: WindowState,
  plan: WindowPlan,
  keys: readonly SyncKey[],
): WindowVerdict {
  const sign = state.descending === true ? -1 : 1;
  const order: Order = (a, b) => sign * compareKeys(a, b);
  checkOrder(keys, order, plan);
  const [count, first] = [keys.length, keys[0]];
  const learnt = learnLimit(state, plan, count);
  const after = first === undefined || state.edge === null
    ? undefined
    : order(first, state.edge) > 0;
  if (plan.start !== 0 && after !== false) return gap(learnt, plan);
  const older = state.edge === null ? 0 : countUpTo(keys, state.edge, order);
  const last = keys[count - 1];
  const advanced = last !== undefined && count > older;
  const fresh = inDomain(state, keys, older);
  const short = provesEnd(state, plan.limit, count);
  const { seek: _, short: __, shortReads: ___, ...rest } = learnt;
  const { farEnd, holds } = farEndOf(state, keys, advanced ? last : state.edge);
  // At its last in range, else at the edge; null when empty and begun before the edge's place.
  const end = count === 0 && plan.start < state.offset
    ? null
    : keys[fresh.to - 1] ?? state.edge;
  const [claims, reached] = [short || farEnd, fresh.to < count];
  // A whole window of items before the edge: it stands further on.
  const before = last !== undefined && state.edge !== null &&
    order(last, state.edge) < 0;
  const news = fresh.to > fresh.from;
  const window = { claims, end, holds, reached, short, count, news, before };
  const past = { at: plan.start + count, read: last ?? end }; // past the window's last item
  const { again, reads, ...ends } = readAgain(state, window, past);
  // Read again after a jump, the edge stays at the last key in range.
  const kept = again && farEnd ? fresh.to : count;
  // Shorter at a size not known honoured: perhaps cut and placed by the cut size, so its place tells nothing.
  const cut = count < plan.limit && !short;
  const seek = before && !short
    ? cut ? state.seek : sought(state.seek, { low: past.at })
    : undefined;
  return {
    kind: "commit",
    fresh,
    ...ends,
    halted: reads > MAX_SHORT_READS,
    lost: plan.start === 0 && after === true,
    reached,
    next: {
      ...rest,
      edge: kept > older ? keys[kept - 1]! : state.edge,
      offset: cut ? state.offset + kept - older : plan.start + kept,
      margin: nextMargin(state, plan.start + older, count < plan.limit),
      ...(seek === undefined ? {} : { seek }),
      ...(again && reads <= MAX_SHORT_READS
        ? { short: end, shortReads: reads, ...atMost(rest, short && count) }
        : {}),
    },
  };
}

/**
 * The margin after a window that found the edge at `at` (a short one's place may be the cut's): halved, yet twice the
 * items deleted before the edge since the window before (else a list losing items starts each window past the edge).
 */
function nextMargin(state: WindowState, at: number, short: boolean) {
  const deleted = state.edge === null || short ? 0 : state.offset - at;
  return Math.max(
    MIN_MARGIN,
    Math.ceil(state.margin / 2),
    // At most a quarter of the largest size honoured: a margin no window can keep is met by none.
    Math.min(2 * deleted, RESUME_MARGIN, state.accepted >> 2),
  );
}

/**
 * A short page read again asks at most its own size (from MIN_WINDOW, over `least`, which a lowered largest never is):
 * a largest page lowered since shows as a full page then, not as the same cut agreeing with itself.
 */
function atMost(state: WindowState, count: number | false) {
  if (count === false || count < MIN_WINDOW || count <= (state.least ?? 0)) {
    return {};
  }
  const { accepted, refused, capped = { accepted, refused } } = state;
  return { accepted: count, refused: count + 1, ...(capped && { capped }) };
}

/** A window that starts after the edge: the item after it stands at or before its start now (`state`: its size learnt). */
function gap(state: WindowState, plan: WindowPlan): WindowVerdict {
  return {
    kind: "gap",
    next: {
      ...state,
      offset: Math.min(state.offset, plan.start),
      margin: Math.max(8, state.margin * 2),
      seek: sought(state.seek, { high: plan.start }),
    },
  };
}

/** Whether an ascending sweep's window reached `upTo`, and holds it: one that jumps past it only claims the end. */
function farEndOf(
  state: WindowState,
  keys: readonly SyncKey[],
  edge: SyncKey | null,
): { farEnd: boolean; holds: boolean } {
  const upTo = state.domain?.upTo ?? null;
  const farEnd = state.descending !== true && upTo !== null && edge !== null &&
    compareKeys(edge, upTo) >= 0;
  return {
    farEnd,
    holds: farEnd && keys.some((key) => compareKeys(key, upTo!) === 0),
  };
}

/**
 * Whether a window that claims the end (short, or past the far end) at `end` is read again: a sweep's before the far
 * end it does not hold, a descending head's before it `reached` the copy, or any short page in doubt; the pass ends once
 * a read claims the same end. `reads`: claims in a row that disagreed, bringing nothing new. A sweep's short page short
 * of its far end has ended only if no item lies at `at`, past it (`endsBefore`).
 */
function readAgain(
  state: WindowState,
  window: {
    claims: boolean;
    end: SyncKey | null;
    holds: boolean;
    reached: boolean;
    short: boolean;
    count: number;
    news: boolean;
    before: boolean;
  },
  { at, read }: { at: number; read: SyncKey | null },
): Pick<Verdict, "ended" | "endsBefore"> & { again: boolean; reads: number } {
  const { claims, end } = window;
  const before = state.short;
  const agrees = claims && before !== undefined &&
    (before === null || end === null
      ? before === end
      : compareKeys(before, end) === 0);
  // A short page ending before the end claimed just before: that item went since, or this page was cut; the read past
  // it tells which (else a list losing its last item every request never agrees).
  const moved = window.short && before != null && end !== null &&
    state.domain?.upTo != null && // a sweep's: only its end has that read
    (state.descending === true ? -1 : 1) * compareKeys(end, before) < 0;
  const beforeCopy = state.descending === true &&
    state.domain?.above != null && !window.reached;
  // As many as a cut holds, with news: perhaps cut by a service that lowered its largest page. Wholly before the edge,
  // any from MIN_WINDOW: the end only if the list lost every item from the edge on. One ending at the edge is the end.
  const doubt = window.short && window.count >= MIN_WINDOW &&
    (window.before || window.news && window.count >= (state.limit ?? Infinity));
  const farEnd = (state.domain?.upTo ?? null) !== null || beforeCopy || doubt;
  const again = claims && farEnd && !agrees && !moved && !window.holds;
  // A read that brought new items moved on: counted anew.
  const reads = window.news ? 1 : (state.shortReads ?? 0) + 1;
  const ended = window.holds || (claims && !again) ||
    (state.domain?.upTo == null && window.reached);
  const endsBefore = ended && window.short && !window.holds && end !== null &&
    state.domain?.upTo != null;
  // The item the page ended at (past `end` if it held items after the cycle's last): the read past it shows what follows.
  const last = endsBefore
    ? {
      endsBefore: {
        at,
        last: read ?? end,
        count: window.count,
        ...(moved && { moved }),
      },
    }
    : {};
  return { again, reads: again ? reads : 0, ended, ...last };
}

/**
 * What `seek` knows once a window added `found`. A gap at or before a low bound shows the list shrank before the edge:
 * the search starts over from the gap (that bound would make the walk back linear). A low past a high is kept.
 */
function sought(
  seek: Seek | undefined,
  found: { low?: number; high?: number },
): Seek {
  if (found.high !== undefined && found.high <= (seek?.low ?? -Infinity)) {
    return { high: found.high, probes: 2 };
  }
  const low = Math.max(seek?.low ?? -Infinity, found.low ?? -Infinity);
  const high = Math.min(seek?.high ?? Infinity, found.high ?? Infinity);
  return {
    ...(low === -Infinity ? {} : { low }),
    ...(high === Infinity ? {} : { high }),
    probes: (seek?.probes ?? 0) + 1,
  };
}

/** Which of `keys` (in pass order, the first `older` at or before the edge) the pass commits. */
function inDomain(state: WindowState, keys: readonly SyncKey[], older: number) {
  const { above = null, upTo = null } = state.domain ?? {};
  const isIn = (key: SyncKey) =>
    (above === null || compareKeys(key, above) > 0) &&
    (upTo === null || compareKeys(key, upTo) <= 0);
  // Past the far end in the pass's direction: at or below `above` descending, above `upTo` ascending.
  const isPast = (key: SyncKey) =>
    state.descending === true
      ? above !== null && compareKeys(key, above) <= 0
      : upTo !== null && compareKeys(key, upTo) > 0;
  let from = older, to = keys.length;
  while (from < to && !isIn(keys[from]!) && !isPast(keys[from]!)) from++;
  for (let i = from; i < to; i++) if (!isIn(keys[i]!)) to = i;
  return { from, to };
}

/**
 * Whether `count` items for `limit` prove the end: a size above the service's largest is cut, so only for a size seen
 * honoured (this pass, or with fewer items than the cost bound), or under MIN_WINDOW; else the next window settles it.
 */
function provesEnd(state: WindowState, limit: number, count: number): boolean {
  const honoured = limit <= state.accepted &&
    (count < (state.limit ?? limit) || limit <= (state.full ?? Infinity));
  return count < limit && (honoured || count < MIN_WINDOW);
}

function learnLimit(state: WindowState, plan: WindowPlan, count: number) {
  const { limit } = plan;
  if (count >= limit) {
    // A read again at a short page's size came back full: a cut, or a lowered largest.
    if (state.capped) {
      return { ...state, ...state.capped, full: limit, capped: null };
    }
    // Full at the size a shorter answer to a larger one held, past where the pass stood and that answer ended: a cut,
    // kept like a 400 for the cycle's runs.
    const cut = state.refused === limit + 1 &&
      plan.start + count > Math.max(state.offset, state.cutEnd ?? 0);
    return {
      ...state,
      accepted: Math.max(state.accepted, limit),
      full: Math.max(state.full ?? 0, limit),
      ...(cut && { rejected: state.refused }),
    };
  }
  if (provesEnd(state, limit, count)) return state;
  // Perhaps cut to `count`: sizes up to it are honoured; one honoured before may be no longer, also where a larger ask
  // ended before where the pass stands.
  const lowered = limit <= state.accepted || plan.start + count < state.offset;
  return {
    ...state,
    accepted: lowered ? count : Math.max(state.accepted, count),
    refused: Math.min(state.refused, count + 1),
    cutEnd: plan.start + count,
  };
}

/**
 * The state after the service refused a window of `limit` (a 400). A size honoured before: the service lowered its
 * largest, so what is known honoured is what this pass saw in full under it, or the user's `limit` (the rest halved).
 */
export function refusedWindow(state: WindowState, limit: number): WindowState {
  const { full = 0, limit: honoured = 0 } = state;
  const lowered = state.accepted >= limit;
  const known = lowered
    ? Math.max(full < limit ? full : 0, honoured)
    : state.accepted;
  return {
    ...state,
    accepted: Math.min(known, limit - 1),
    refused: Math.min(state.refused, limit),
    rejected: Math.min(state.rejected ?? Infinity, limit),
  };
}

/** How many of `keys` (in pass order) are at or before `edge`. */
function countUpTo(keys: readonly SyncKey[], edge: SyncKey, order: Order) {
  return firstPast(keys.length, (at) => order(keys[at]!, edge) > 0);
}

/** The first of `length` places at which `past` holds, where it holds from some place on (a binary search). */
export function firstPast(length: number, past: (at: number) => boolean) {
  let low = 0, high = length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (past(middle)) high = middle;
    else low = middle + 1;
  }
  return low;
}
