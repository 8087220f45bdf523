// Internal: where a pass's next window goes, as pure functions over its state: overlapping the edge by the margin and
// reaching furthest, at a size the service is known to honour, or probing for an edge that moved.

import {
  MIN_MARGIN,
  MIN_WINDOW,
  type Seek,
  type WindowPlan,
  type WindowState,
} from "./_window.ts";

/** The largest size the next window may ask for. */
export function windowCap(state: WindowState): number {
  if (state.refused === Infinity) return state.maxLimit;
  // Never past maxLimit; never under MIN_WINDOW (past a length every smaller size divides, no window of those overlaps
  // the edge and reads on); nor under the user's `limit` for a refusal above it: the service honours that size.
  const { accepted, refused, limit = 0 } = state;
  const low = refused > limit ? Math.max(accepted, limit) : accepted;
  const cap = Math.max(low, Math.floor((low + refused) / 2), MIN_WINDOW);
  return Math.min(state.maxLimit, cap);
}

/** The first window after `state`, overlapping its edge by its margin. */
export function nextWindow(state: WindowState): WindowPlan {
  const cap = windowCap(state);
  const probe = state.seek === undefined ? undefined : probeAt(state.seek, cap);
  if (probe !== undefined) return placed(cap, Math.floor(probe / cap));
  const offset = state.edge === null ? 0 : state.offset;
  return planAt(offset, state, cap);
}

/** The window after `plan` if the list does not move: the pipeline's guess. */
export function followingWindow(plan: WindowPlan, state: WindowState) {
  return planAt(plan.start + plan.limit, state, windowCap(state));
}

/** `planWindow` at `offset`, its last resort up to the largest size no 400 refused this cycle (`cap` where one read none). */
function planAt(offset: number, state: WindowState, cap: number) {
  const unrefused = Math.min(state.maxLimit, (state.rejected ?? Infinity) - 1);
  const most = state.overTried === offset ? cap : unrefused;
  return planWindow(offset, state.margin, cap, state.least, most);
}

/**
 * The window overlapping the item before `offset` by `margin + 1` items or more that reaches furthest (any size up to
 * `cap`); else by MIN_MARGIN + 1 (one overlapping by a single item misses after any delete); else without margin; else
 * the largest. No size at `least` or under while one over it reads on; where none does, one over `cap` up to `most`: a
 * size the service may cut, where one it refused would end the run.
 */
export function planWindow(
  offset: number,
  margin: number,
  cap: number,
  least = 0,
  most = cap,
): WindowPlan {
  if (offset <= 0) return { start: 0, limit: cap, page: 1 };
  const reach = (target: number) => reaching(offset, target, cap, least);
  return reach(offset - 1 - margin) ?? reach(offset - 1 - MIN_MARGIN) ??
    reach(offset - 1) ??
    // No size over `least` reads on: one over the cap, else one refused (its 400 ends the run).
    (least > 0
      ? over(offset, cap, most) ?? planWindow(offset, margin, cap)
      : placed(cap, Math.floor((offset - 1) / cap)));
}

/** The furthest-reaching window starting at or before `target` and past `offset`, of a size over `least`. */
function reaching(offset: number, target: number, cap: number, least: number) {
  const from = Math.max(0, target);
  let best: WindowPlan | undefined, bestEnd = offset;
  for (let limit = cap; limit > least; limit--) {
    const index = Math.floor(from / limit);
    const end = (index + 1) * limit;
    // Ties go to the smaller page: the same items for fewer bytes.
    if (end > bestEnd || (end === bestEnd && best !== undefined)) {
      best = placed(limit, index);
      bestEnd = end;
    }
  }
  return best;
}

/**
 * The smallest size over `cap`, up to `most`, whose page holding the item before `offset` holds fewer than MIN_WINDOW
 * items up to it: read on past it, or (the list ends there) proving the end by its count, whatever the size.
 */
function over(offset: number, cap: number, most: number) {
  for (let limit = cap + 1; limit <= most; limit++) {
    const index = Math.floor((offset - 1) / limit);
    if (offset - index * limit < MIN_WINDOW) return placed(limit, index);
  }
  return undefined;
}

function placed(limit: number, index: number): WindowPlan {
  return { start: index * limit, limit, page: index + 1 };
}

/**
 * Where the next probe for the edge starts, from the second miss (one is the drift a margin covers): twice as far each
 * time until bracketed, then halfway (~2 × log2(d / window) requests for `d` lost); undefined once a window fits.
 */
export function probeAt(seek: Seek, cap: number): number | undefined {
  const { low, high, probes } = seek;
  if (probes < 2) return undefined;
  const reach = cap * 2 ** Math.min(probes - 2, 30); // pages stay safe integers past any list's length
  if (high === undefined) return low === undefined ? undefined : low + reach;
  if (low === undefined) return Math.max(0, high - reach);
  if (high - low <= cap) return undefined;
  return Math.floor((low + high) / 2);
}
