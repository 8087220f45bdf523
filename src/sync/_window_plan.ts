// Internal: where the next window of a pass goes, as pure functions over its
// state: overlapping the edge by the margin and reaching furthest past it,
// or, while the edge is looked for, a probe further out or halfway between
// what earlier windows bracketed. What a window proves is _window.ts's.

import type { Seek, WindowPlan, WindowState } from "./_window.ts";

/** The largest size the next window may ask for. */
export function windowCap(state: WindowState): number {
  if (state.refused === Infinity) return state.maxLimit;
  return Math.max(
    state.accepted,
    Math.min(state.maxLimit, Math.floor((state.accepted + state.refused) / 2)),
  );
}

/**
 * The window that overlaps the item before `offset` by at least `margin + 1`
 * items and reaches furthest past it. A page size `limit` places a window
 * only at a multiple of `limit`, so every size up to `cap` is tried. When
 * the margin leaves no window that reaches past `offset`, the margin is
 * dropped; when no size does (every size up to `cap` divides `offset`,
 * which takes a cap under 25), the largest window is read and the run
 * moves only if the list does.
 */
export function planWindow(
  offset: number,
  margin: number,
  cap: number,
): WindowPlan {
  if (offset <= 0) return { start: 0, limit: cap, page: 1 };
  return reaching(offset, offset - 1 - margin, cap) ??
    reaching(offset, offset - 1, cap) ??
    placed(cap, Math.floor((offset - 1) / cap));
}

/** The furthest-reaching window starting at or before `target` and past `offset`. */
function reaching(
  offset: number,
  target: number,
  cap: number,
): WindowPlan | undefined {
  const from = Math.max(0, target);
  let best: WindowPlan | undefined;
  let bestEnd = offset;
  for (let limit = cap; limit >= 1; limit--) {
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

function placed(limit: number, index: number): WindowPlan {
  return { start: index * limit, limit, page: index + 1 };
}

/** The first window after `state`, overlapping its edge by its margin. */
export function nextWindow(state: WindowState): WindowPlan {
  const cap = windowCap(state);
  const probe = state.seek === undefined ? undefined : probeAt(state.seek, cap);
  if (probe !== undefined) return placed(cap, Math.floor(probe / cap));
  return planWindow(state.edge === null ? 0 : state.offset, state.margin, cap);
}

/**
 * Where the next probe for the edge starts: further out each time until the
 * edge is bracketed, then halfway; undefined once the bracket fits in a
 * window (the ordinary plan then reads it, overlapping its low end).
 */
export function probeAt(seek: Seek, cap: number): number | undefined {
  const { low, high, probes } = seek;
  // One miss is the ordinary drift a margin covers: the plan steps back by
  // it (or on by a window). From the second, probes go out.
  if (probes < 2) return undefined;
  const reach = cap * 2 ** (probes - 2);
  if (high === undefined) return low === undefined ? undefined : low + reach;
  if (low === undefined) return Math.max(0, high - reach);
  if (high - low <= cap) return undefined;
  return Math.floor((low + high) / 2);
}

/**
 * The window after `plan` if the list does not move: the pipeline's guess,
 * checked like any window when it comes back.
 */
export function followingWindow(
  plan: WindowPlan,
  state: WindowState,
): WindowPlan {
  return planWindow(plan.start + plan.limit, state.margin, windowCap(state));
}
