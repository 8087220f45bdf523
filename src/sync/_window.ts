// Internal: the decisions of a sync as pure functions over its state: what
// a window that came back proves (where the next one goes: _window_plan.ts). The
// invariant they keep (docs/sync.md): every item with a key up to `edge`
// that existed for the whole run is in the sink, once.

import { SyncError } from "./sync_error.ts";

/** An item's place in the order: its sort value, then its id. */
export interface SyncKey {
  /** The value of the sort field (the id itself when the order is by id). */
  readonly value: string | number;
  /** The item's id. */
  readonly id: string;
}

/** Where a sync stands between windows. */
export interface WindowState {
  /** The key of the last item committed; null before the first. */
  readonly edge: SyncKey | null;
  /** Where the item after `edge` stood when last seen (0 before the first). */
  readonly offset: number;
  /** Items to read before `offset`, so that a shift to the left stays visible. */
  readonly margin: number;
  /** The largest size known to be honoured (0 until a page shows one). */
  readonly accepted: number;
  /** The smallest size refused, or cut; Infinity while none was. */
  readonly refused: number;
  /** The largest size the run asks for. */
  readonly maxLimit: number;
  /** The pass reads the list in descending key order. @default {false} */
  readonly descending?: boolean;
  /** The keys this pass commits (every key when absent). */
  readonly domain?: Domain;
  /**
   * While the edge is looked for (a window missed it): what is known of
   * where it stands. Absent once a window holds it.
   */
  readonly seek?: Seek;
  /** A sweep: the window before was short; another short one ends the pass. */
  readonly short?: boolean;
}

/**
 * Where the edge stands, as far as windows that missed it tell: at or after
 * `low` (a whole window before it held only older items), before `high` (a
 * window starting there began past it, or found the list's end). Probes go
 * out twice as far each time until both are known, then halve the gap: a
 * list that lost or gained `d` items before the edge costs about
 * 2 × log2(d / window) requests, not d / window.
 */
export interface Seek {
  readonly low?: number;
  readonly high?: number;
  /** Windows that missed the edge so far. */
  readonly probes: number;
}

/**
 * The keys a pass commits, in ascending key order: above `above`
 * (exclusive) and up to `upTo` (inclusive). A pass ends once it reads a key
 * past the domain's far end in its direction (above `upTo` ascending, at or
 * below `above` descending): what follows is another pass's.
 */
export interface Domain {
  readonly above: SyncKey | null;
  readonly upTo: SyncKey | null;
}

/** One window: `limit` items from `start`, i.e. page `start / limit + 1`. */
export interface WindowPlan {
  readonly start: number;
  readonly limit: number;
  readonly page: number;
}

/** What a window proves, given the state before it. */
export type WindowVerdict =
  | {
    /** It overlaps what is committed: its newer items can be committed. */
    readonly kind: "commit";
    /** The items to commit: `keys.slice(from, to)`, after the edge and in the domain. */
    readonly fresh: { readonly from: number; readonly to: number };
    /** The state once the window is committed. */
    readonly next: WindowState;
    /** Nothing followed its last item, or it reached the domain's far end: the pass is complete. */
    readonly ended: boolean;
    /** The edge moved: the window read something past what was committed. */
    readonly advanced: boolean;
  }
  | {
    /** It may have skipped items (it starts after `edge`): read again earlier. */
    readonly kind: "gap";
    readonly next: WindowState;
  };

/** The smallest margin: one delete between two windows stays visible. */
export const MIN_MARGIN = 2;
/** The margin of a run's first window: deletes since the last run are unknown. */
export const RESUME_MARGIN = 32;
/**
 * The smallest `maxLimit`: below it, a window that overlaps the edge and
 * reaches past it may not exist (when every size up to it divides the
 * offset; lcm(2..25) exceeds any offset).
 */
export const MIN_WINDOW = 25;

/** Orders two sort values: numbers by value, anything else as strings. */
export function compareValues(a: string | number, b: string | number): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const x = String(a), y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Orders two keys: by sort value, then by id. */
export function compareKeys(a: SyncKey, b: SyncKey): number {
  return compareValues(a.value, b.value) || compareValues(a.id, b.id);
}

/**
 * Judges a window of `keys` read at `plan`. It may be committed when it
 * starts at the head of the list or at or before `edge`: a page is a
 * contiguous run of the list as it stood when it was read, so it then holds
 * every item between `edge` and its last item that existed at that moment
 * (and so every one that existed for the whole run).
 *
 * @throws {SyncError} (`"unordered"`) When the keys do not ascend.
 */
export function judgeWindow(
  state: WindowState,
  plan: WindowPlan,
  keys: readonly SyncKey[],
): WindowVerdict {
  const order = passOrder(state);
  checkOrder(keys, order, plan);
  const count = keys.length;
  const learnt = learnLimit(state, plan.limit, count);
  const first = keys[0];
  const overlaps = plan.start === 0 ||
    (first !== undefined && state.edge !== null &&
      order(first, state.edge) <= 0);
  if (!overlaps) {
    // The window began after every item up to the edge: the item after
    // the edge stands at or before its start now.
    return {
      kind: "gap",
      next: {
        ...learnt,
        offset: Math.min(state.offset, plan.start),
        margin: Math.max(8, state.margin * 2),
        seek: sought(state.seek, { high: plan.start }),
      },
    };
  }
  const older = state.edge === null ? 0 : countUpTo(keys, state.edge, order);
  const last = keys[count - 1];
  const advanced = last !== undefined && count > older;
  const fresh = inDomain(state, keys, older);
  const edge = advanced ? last : state.edge;
  const short = provesEnd(state, plan.limit, count);
  const { seek: _, short: __, ...rest } = learnt;
  // Inside a sweep the end is known (its domain's far end): a short page
  // that brought news is read again, and ends the pass only when that read
  // is short too (a list still growing there is followed no further).
  const again = short && advanced && sweeping(state) && !state.short;
  // A whole window of items before the edge: it stands further on.
  const before = last !== undefined && state.edge !== null &&
    order(last, state.edge) < 0;
  const seek = before && !short
    ? sought(state.seek, { low: plan.start + count })
    : undefined;
  return {
    kind: "commit",
    fresh,
    advanced,
    ended: (short && !again) || fresh.to < count || reachedFarEnd(state, edge),
    next: {
      ...rest,
      edge,
      offset: plan.start + count,
      margin: Math.max(MIN_MARGIN, Math.ceil(state.margin / 2)),
      ...(seek === undefined ? {} : { seek }),
      ...(again ? { short: true } : {}),
    },
  };
}

/** What `seek` knows once a window added `found`. */
function sought(
  seek: Seek | undefined,
  found: { low?: number; high?: number },
): Seek {
  const low = Math.max(seek?.low ?? -Infinity, found.low ?? -Infinity);
  const high = Math.min(seek?.high ?? Infinity, found.high ?? Infinity);
  return {
    ...(low === -Infinity ? {} : { low }),
    ...(high === Infinity ? {} : { high }),
    probes: (seek?.probes ?? 0) + 1,
  };
}

/**
 * @throws {SyncError} (`"unordered"`) When `keys` break `order`. Equal keys
 * are the same item twice (kept once, by its last occurrence).
 */
function checkOrder(
  keys: readonly SyncKey[],
  order: (a: SyncKey, b: SyncKey) => number,
  plan: WindowPlan,
): void {
  const at = keys.findIndex((key, i) => i > 0 && order(keys[i - 1]!, key) > 0);
  if (at < 0) return;
  throw new SyncError(
    `Cannot sync: the list is not in the asked order: '${
      keys[at]!.id
    }' came after '${
      keys[at - 1]!.id
    }' (page ${plan.page}, limit ${plan.limit})`,
    "unordered",
  );
}

/** Whether the pass is a sweep: it covers keys up to a known last one. */
function sweeping(state: WindowState): boolean {
  return (state.domain?.upTo ?? null) !== null;
}

/** The pass's order: ascending keys, or descending. */
export function passOrder(
  state: Pick<WindowState, "descending">,
): (a: SyncKey, b: SyncKey) => number {
  return state.descending === true ? (a, b) => compareKeys(b, a) : compareKeys;
}

/**
 * Which of `keys` (in pass order, the first `older` at or before the edge)
 * the pass commits: a contiguous run, from the first in the domain to the
 * last before its far end.
 */
function inDomain(
  state: WindowState,
  keys: readonly SyncKey[],
  older: number,
): { from: number; to: number } {
  const { above = null, upTo = null } = state.domain ?? {};
  const isIn = (key: SyncKey) =>
    (above === null || compareKeys(key, above) > 0) &&
    (upTo === null || compareKeys(key, upTo) <= 0);
  let from = older;
  let to = keys.length;
  // Before the domain (in pass order): newer than `upTo` read descending.
  while (from < to && !isIn(keys[from]!) && !isPastFarEnd(state, keys[from]!)) {
    from++;
  }
  for (let i = from; i < to; i++) {
    if (!isIn(keys[i]!)) to = i;
  }
  return { from, to };
}

/** Whether the pass committed the last key of its domain (ascending, up to `upTo`). */
function reachedFarEnd(state: WindowState, edge: SyncKey | null): boolean {
  const upTo = state.domain?.upTo ?? null;
  return state.descending !== true && upTo !== null && edge !== null &&
    compareKeys(edge, upTo) >= 0;
}

/** Whether `key` lies past the domain's far end in the pass's direction. */
function isPastFarEnd(state: WindowState, key: SyncKey): boolean {
  const { above = null, upTo = null } = state.domain ?? {};
  return state.descending === true
    ? above !== null && compareKeys(key, above) <= 0
    : upTo !== null && compareKeys(key, upTo) > 0;
}

/**
 * Whether a window of `count` items for `limit` proves the end of the list.
 * A service either refuses a size above its largest (400) or cuts the page
 * to it, and nothing says which. A short answer proves the end when its
 * size is known to be honoured (a full page of that size or larger came
 * back, now or in an earlier run), or when it is shorter than MIN_WINDOW (no
 * service is taken to cut pages that small: the same floor as `maxLimit`'s).
 * The user's `limit` proves nothing: a service may cut below it. Otherwise
 * the next window asks at most `count`, a size honoured either way, and
 * settles it.
 */
export function provesEnd(
  state: WindowState,
  limit: number,
  count: number,
): boolean {
  return count < limit && (limit <= state.accepted || count < MIN_WINDOW);
}

/** What an answer of `count` items for `limit` says of the sizes honoured. */
function learnLimit(
  state: WindowState,
  limit: number,
  count: number,
): WindowState {
  if (count >= limit) {
    return { ...state, accepted: Math.max(state.accepted, limit) };
  }
  if (provesEnd(state, limit, count)) return state;
  // Perhaps cut to `count`: sizes up to it are honoured whichever it was.
  return {
    ...state,
    accepted: Math.max(state.accepted, count),
    refused: Math.min(state.refused, count + 1),
  };
}

/** The state after the service refused a window of `limit` (a 400). */
export function refusedWindow(state: WindowState, limit: number): WindowState {
  return { ...state, refused: Math.min(state.refused, limit) };
}

/** How many of `keys` (in pass order) are at or before `edge`. */
function countUpTo(
  keys: readonly SyncKey[],
  edge: SyncKey,
  order: (a: SyncKey, b: SyncKey) => number,
): number {
  let low = 0, high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (order(keys[middle]!, edge) <= 0) low = middle + 1;
    else high = middle;
  }
  return low;
}
