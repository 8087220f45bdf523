// Internal: whether a sweep's short page, short of the cycle's known end, ends the list or was cut: the item past it.

import { ApiError } from "../core/errors.ts";
import { compareKeys } from "./_key_order.ts";
import {
  MIN_WINDOW,
  type ShortEnd,
  type SyncKey,
  type WindowPlan,
  type WindowState,
} from "./_window.ts";

/** How a pass reads one page's keys, and its order (1 ascending, -1 descending). */
export interface PageRead {
  readonly sign: number;
  readonly keysOf: (plan: WindowPlan) => Promise<SyncKey[]>;
}

/**
 * Whether a sweep's short page, ending short of the cycle's known end, was cut: the item past it comes after its last
 * and (ascending) not after the cycle's last item, `upTo`. One after `upTo` came since the cycle began if the page's
 * last still stands just before it; else deletes before the page moved the read past items of the cycle, and the page
 * is taken as cut. One at or before the page's last is the list shifted by inserts: each read again goes twice as far
 * (a list still shifting after four reads is taken at its word). Read past maxDuration (at most 5 reads): stopped, it
 * would begin again each run, the cycle never end.
 */
export async function goesOn(
  read: PageRead,
  { at, last, count, moved }: ShortEnd,
  { domain, accepted, full = 0 }: WindowState,
  limit: number,
): Promise<boolean> {
  const upTo = domain?.upTo ?? null;
  const { sign } = read;
  // Sizes: one item; where refused (a least page size), one less than `limit`, never `limit` (the short page's own
  // address answers as it did, a cut or a cache alike); one more only where known honoured (past the largest, cut).
  const larger = limit < Math.max(accepted, full) ? [limit + 1] : [];
  const sizes = [...new Set([1, limit - 1, ...larger])].filter((n) => n > 0);
  const keyAt = (at: number) => keyOnPage(read, { at, last, count }, sizes);
  const inCycle = (key: SyncKey) =>
    sign < 0 || upTo === null || compareKeys(key, upTo) <= 0;
  for (let step = 1; step <= 8; step *= 2, at += step / 2) {
    const key = await keyAt(at);
    if (key === null) return true; // no word on the end: a cut, nothing removed
    if (key === undefined) {
      // Nothing at `at` at one size: asked at the next too (an item there past `last`, in the cycle: a cut), else a
      // page of one answered empty (cut again, or stale) would end the cycle, every row past it gone.
      const again = await secondLook(read, { at, last, count }, sizes);
      if (again && sign * compareKeys(again, last) > 0 && inCycle(again)) {
        return true;
      }
      return moved === true && await misplaced(keyAt, at, last, sign);
    }
    if (sign * compareKeys(key, last) <= 0) continue;
    if (inCycle(key)) return true;
    const before = await keyAt(at - 1);
    return before == null || compareKeys(before, last) !== 0;
  }
  return false;
}

/** The key at `at` at the next of `sizes`, if any: none where that read says nothing (ends before `at`) or is refused. */
async function secondLook(read: PageRead, past: ShortEnd, sizes: number[]) {
  if (sizes.length < 2) return undefined;
  try {
    return await keyOnPage(read, past, sizes.slice(1)) ?? undefined;
  } catch (error) {
    if (sizeRefusal(error) || notFound(error)) return undefined;
    throw error;
  }
}

/**
 * Whether a page that ended before the end read just before it, with no item past it at `at`, stood elsewhere than
 * asked: no item just before `at`, or one past its `last`; one at or before `last` is the list's end, its last gone.
 */
async function misplaced(
  keyAt: (at: number) => Promise<SyncKey | null | undefined>,
  at: number,
  last: SyncKey,
  sign: number,
) {
  const before = await keyAt(at - 1);
  return before == null || sign * compareKeys(before, last) > 0;
}

/**
 * The key of the item at `at`, if any, on the page holding it at the first of `sizes` the service takes (one less where
 * that page begins as a short page of 25 or more did); a refused size leaves `sizes`, the last ends the run. `null`, no
 * word: a page ending before the short page's last, or right past it with `count` items (25 or more: no cut holds fewer).
 */
async function keyOnPage(read: PageRead, past: ShortEnd, sizes: number[]) {
  const { at, count } = past;
  let spared = false;
  while (true) {
    const { limit, page, start } = placed(past, sizes[0]!);
    try {
      const keys = await read.keysOf({ start, limit, page });
      const [n, ends] = [keys.length, start + keys.length];
      const cut = ends <= at && n > 0 &&
        (ends < at || (n === count && count >= MIN_WINDOW));
      return cut ? null : keys[at - start];
    } catch (error) {
      // A 404 for a page beginning at `at` may say the list ends there (Django REST Framework's "Invalid page"): the
      // next size is asked, as after a refusal, or, at the last, once one whose page begins before `at`. No 404 alone.
      const gone = start === at && notFound(error);
      if (!gone && !sizeRefusal(error)) throw error;
      const last = sizes.length === 1;
      const spare: number = gone && last && !spared
        ? spareSize(past, limit)
        : 0;
      if (spare === 0 && last) throw error;
      if (spare > 0) spared = sizes.unshift(spare) > 0;
      else sizes.shift();
    }
  }
}

/** Where `keyOnPage` reads the item at `at` at `size`. */
function placed({ at, count }: ShortEnd, size: number): WindowPlan {
  const begins = Math.floor(at / size) * size;
  // Under MIN_WINDOW items, the short page's start answering as many is the end (no cut holds fewer): read there.
  const shift = begins === at - count && count >= MIN_WINDOW;
  const limit = shift ? Math.max(1, size - 1) : size;
  const page = Math.floor(at / limit) + 1;
  return { limit, page, start: (page - 1) * limit };
}

/** The largest size under `size` whose page holding `at` begins before it (none: 0). */
function spareSize(past: ShortEnd, size: number): number {
  for (let spare = size - 1; spare >= 2; spare--) {
    if (placed(past, spare).start < past.at) return spare;
  }
  return 0;
}

/** Whether `error` is a 404: past page 1, a page past the list's end on some services. */
export const notFound = (error: unknown): error is ApiError =>
  error instanceof ApiError && error.status === 404;

/** Whether `error` is what a service answers a page size it refuses. */
export const sizeRefusal = (error: unknown): error is ApiError =>
  error instanceof ApiError && [400, 403, 413, 422].includes(error.status);
