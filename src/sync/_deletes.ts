// Internal: the mass-delete guard: a cycle may remove `maxDeletes` of the copy's largest size in 24 hours less what
// they removed, so no empty, filtered or foreign list empties the copy, at once or by slices.

import { SyncError } from "./sync_error.ts";
import type { SyncCheckpoint, SyncWriteContext } from "./sink.ts";

/** How far back deletes count against `maxDeletes`: 24 hours. */
const DELETE_WINDOW = 86_400_000;

/** A completed cycle's deletes: when (epoch ms), how many, of how many live rows. */
export type DeleteRecord = NonNullable<SyncCheckpoint["deletions"]>[number];
/** What the last 24 hours removed, and the largest size the copy had in them. */
export type RecentDeletes = NonNullable<
  NonNullable<SyncWriteContext["endsCycle"]>["recent"]
>;

/** Whether `record` counts at `now`: in the 24 hours before it, or after it (a clock stepped back forgets no delete). */
function within(record: DeleteRecord, now: number): boolean {
  return record.at > now - DELETE_WINDOW;
}

/**
 * What a run at `now` dates its deletes by: the latest time `checkpoint` holds up to 24 hours ahead of `now`, if after
 * it, so a run on a clock behind dates them on the right clock's day. Past 24 hours ahead, `now` (a clock once years
 * ahead would hold every cycle back for years). Deletes are counted on the run's own clock: counted on this one, a
 * host ahead's time aged the right clock's day away.
 */
export function guardClock(checkpoint: Partial<SyncCheckpoint>, now: number) {
  const { verifiedAt, sweep, refused, deletions = [], guardTime } = checkpoint;
  const times = [verifiedAt, sweep?.startedAt, refused?.at, guardTime];
  const known = [...times, ...deletions.map((record) => record.at)];
  const ahead = now + DELETE_WINDOW;
  const usable = (time?: number): time is number => time! < ahead;
  return Math.max(now, ...known.filter(usable));
}

/** Added to the 24 hours' deletes by a cycle that went uncounted: past any share (it may have spent the day's whole). */
const SPENT = 2 ** 52;

/** What the records of the 24 hours before `now` removed (`vouched`: a confirming run is judged without uncounted ones). */
export function recentDeletes(
  history: readonly DeleteRecord[] | undefined,
  now: number,
  vouched = false,
): RecentDeletes {
  let deleted = 0, largest = 0, spent = false;
  for (const record of history ?? []) {
    if (!within(record, now)) continue;
    deleted += record.deleted;
    spent ||= record.uncounted === true && !vouched;
    // A size dated past the next 24 hours (a clock once far ahead) is no base: it would hold for good as the copy shrinks.
    if (record.at < now + DELETE_WINDOW) {
      largest = Math.max(largest, record.held);
    }
  }
  return { deleted: deleted + (spent ? SPENT : 0), largest };
}

/** The share of the copy's largest size a run may remove in 24 hours unless told otherwise (`maxDeletes`). */
export const DEFAULT_MAX_DELETES = 0.1;

/**
 * `history` that counts at `now` (the run's clock), with `record` added unless `confirmed` past the default share
 * (deletes the user confirmed do not count later; those before them do: a confirmation lets through what it names, not
 * a fresh share). A confirmation the default share lets through forgives nothing (else slices pass at the default).
 */
export function withDeletes(
  history: readonly DeleteRecord[] | undefined,
  record: DeleteRecord,
  confirmed = false,
  now = record.at,
): DeleteRecord[] {
  // Kept a day longer than they count at `now`, or at the newest one's date: a run on a clock days ahead erases no day.
  const newest = Math.max(...(history ?? []).map((old) => old.at));
  const since = Math.min(now, newest) - DELETE_WINDOW;
  // One dated after `record` keeps its date (moved to a clock behind, it would leave the right clock's day); a
  // confirmation moves it (a clock once years ahead would hold every cycle back until then).
  const kept = (history ?? [])
    .filter((old) => within(old, since))
    .map((old) =>
      confirmed && old.at > record.at ? { ...old, at: record.at } : old
    );
  const none = record.deleted === 0 && record.uncounted !== true;
  // Judged on the record's date (on a clock behind, the day before would weigh as spent). Uncounted, nothing is
  // forgiven: the run stopped before its sink counted, or the sink counts none.
  const forgiven = confirmed && record.uncounted !== true &&
    tooMany(
      record.deleted,
      record.held,
      DEFAULT_MAX_DELETES,
      recentDeletes(history, record.at, true),
    );
  return none || forgiven ? kept : [...kept, record];
}

/**
 * When a cycle's end counts its 24 hours: at `now`; confirming `refused`, as late as it counted them (a clock stepped
 * back since counted deletes it had not, refusing its share). No cap: a refusal far ahead named a share counted there.
 */
export function countedAt(
  refused: SyncCheckpoint["refused"],
  maxDeletes: number,
  now: number,
): number {
  return confirms(refused, maxDeletes) ? Math.max(now, refused!.at) : now;
}

/**
 * Whether `maxDeletes` confirms the last refusal (at least its share). Only an answer to one confirms: raised unasked,
 * like a standing `maxDeletes: 0.2`, it is a wider share counted over 24 hours, letting no slices through.
 */
export function confirms(
  refused: SyncCheckpoint["refused"],
  maxDeletes: number,
): boolean {
  return refused !== undefined && maxDeletes >= refused.maxDeletes;
}

/** Whether removing `unseen` of `held` rows breaks `maxDeletes` (1: off), with `recent`'s deletes and largest size. */
export function tooMany(
  unseen: number,
  held: number,
  maxDeletes: number,
  recent?: RecentDeletes,
): boolean {
  const base = Math.max(held, recent?.largest ?? 0);
  // A cycle that removes nothing adds nothing to the 24 hours, whatever they removed before.
  return maxDeletes < 1 && unseen > 0 &&
    unseen > Math.floor(maxDeletes * base * LENIENT) - (recent?.deleted ?? 0);
}

/** Rows allowed are `maxDeletes × base` rounded up when floating point just misses it: 0.57 × 100 is 56.99… */
export const LENIENT = 1 + 2 ** -40;

/** Refuses a cycle's end that removes `unseen` of `held` rows past its guard (`ends`). @throws {SyncError} (`"too-many-deletes"`) */
export function guardCycleEnd(
  unseen: number,
  held: number,
  ends: NonNullable<SyncWriteContext["endsCycle"]>,
  what: string,
): void {
  const { maxDeletes, recent } = ends;
  if (!tooMany(unseen, held, maxDeletes, recent)) return;
  throw tooManyDeletes(unseen, held, maxDeletes, what, recent);
}

const UNCOUNTED =
  ", after a cycle in the last 24 hours whose run stopped before counting its deletes (the guard takes the day's share as spent until 24 hours pass; a run at the share named confirms its own cycle only)";

/** The refusal of a cycle removing `unseen` of `held` rows, naming the `maxDeletes` that allows it (`partial`: so far). */
export function tooManyDeletes(
  unseen: number,
  held: number,
  maxDeletes: number,
  what: string,
  recent?: RecentDeletes,
  partial = false,
): SyncError {
  const base = Math.max(held, recent?.largest ?? 0, 1);
  const spent = (recent?.deleted ?? 0) >= SPENT;
  const before = (recent?.deleted ?? 0) - (spent ? SPENT : 0);
  // Times 100 first: whole until divided (7 / 100 × 100 is 7.000…1, which named 0.08).
  const share = Math.ceil((unseen + before) * 100 / base) / 100;
  // Over an uncounted cycle, the next hundredth above the run's share at least: else a default run confirms unasked.
  const above = (Math.floor(maxDeletes * 100 + 1e-9) + 1) / 100;
  const needed = Math.min(1, spent ? Math.max(share, above) : share);
  const earlier =
    (before === 0 ? "" : ` (after ${before} in the last 24 hours)`) +
    (spent ? UNCOUNTED : "");
  const part = partial
    ? " in the part of the cycle read so far, by this run and those before it (the rest of the cycle may find more gone: then the run that confirms names the whole share, once)"
    : "";
  return deletesRefused(
    `the sweep cycle would remove ${unseen} of ${held} rows${earlier}${part}, more than maxDeletes (${maxDeletes}) allows; nothing of the cycle was removed or inserted`,
    what,
    needed,
  );
}

/**
 * A `"too-many-deletes"` refusal of `what`, because of `why`, naming the share (`needed`) that lets it through, with
 * the whole sweep its confirmation needs (one ending mid-cycle confirms nothing yet).
 */
export function deletesRefused(
  why: string,
  what: string,
  needed: number,
): SyncError {
  const message =
    `Cannot sync into ${what}: ${why}. If the list really lost them, run again with maxDeletes ${needed} and sweep: Infinity (CLI: --sweep all --max-deletes ${needed})`;
  const error = new SyncError(message, "too-many-deletes", what);
  return Object.assign(error, { maxDeletesNeeded: needed });
}
