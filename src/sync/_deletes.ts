// Internal: the mass-delete guard, as pure functions: a cycle's deletes are judged against `maxDeletes` of the copy's
// largest size in the last 24 hours, less what those deleted, so an empty, filtered or foreign list cannot empty the
// copy, at once or by slices. The deletes of a cycle that confirms a refusal are not counted.

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

/** Whether `record` falls in the 24 hours that end at `now`. */
function within(record: DeleteRecord, now: number): boolean {
  return record.at > now - DELETE_WINDOW && record.at <= now;
}

/** The deletes of `history` within the window that ends at `now`. */
export function recentDeletes(
  history: readonly DeleteRecord[] | undefined,
  now: number,
): RecentDeletes {
  let deleted = 0, largest = 0;
  for (const record of history ?? []) {
    if (!within(record, now)) continue;
    deleted += record.deleted;
    largest = Math.max(largest, record.held);
  }
  return { deleted, largest };
}

/**
 * `history` within the window at `record.at`, with `record` added, unless it is `confirmed` (its run answered a refusal:
 * {@linkcode confirms}): the deletes the user confirmed, and the size before them, do not count against later runs.
 * What the 24 hours removed before them still does, so a confirmation lets through what it names, not a fresh share.
 */
export function withDeletes(
  history: readonly DeleteRecord[] | undefined,
  record: DeleteRecord,
  confirmed = false,
): DeleteRecord[] {
  const kept = (history ?? []).filter((old) => within(old, record.at));
  return record.deleted === 0 || confirmed ? kept : [...kept, record];
}

/**
 * Whether a cycle completed at `maxDeletes` confirms the guard's last refusal: at least the share the refusal named.
 * Only an answer to a refusal confirms: a run that raises `maxDeletes` unasked is a wider share, counted over 24 hours
 * like any other, since a standing `maxDeletes: 0.2` looks the same and must not let slices through.
 */
export function confirms(
  refused: SyncCheckpoint["refused"],
  maxDeletes: number,
): boolean {
  return refused !== undefined && maxDeletes >= refused.maxDeletes;
}

/**
 * Whether removing `unseen` of `held` live rows breaks the `maxDeletes` share, counting what the last 24 hours removed
 * (`recent`) against the copy's largest size in them. `maxDeletes` 1 turns the guard off.
 */
export function tooMany(
  unseen: number,
  held: number,
  maxDeletes: number,
  recent?: RecentDeletes,
): boolean {
  const base = Math.max(held, recent?.largest ?? 0);
  return maxDeletes < 1 &&
    unseen > maxDeletes * base - (recent?.deleted ?? 0);
}

/** The refusal of a cycle that would remove `unseen` of `held` rows, naming the `maxDeletes` that would allow it. */
export function tooManyDeletes(
  unseen: number,
  held: number,
  maxDeletes: number,
  what: string,
  recent?: RecentDeletes,
): SyncError {
  const base = Math.max(held, recent?.largest ?? 0, 1);
  const before = recent?.deleted ?? 0;
  const needed = Math.min(1, Math.ceil((unseen + before) / base * 100) / 100);
  const earlier = before === 0 ? "" : ` (after ${before} in the last 24 hours)`;
  return Object.assign(
    new SyncError(
      `Cannot sync into ${what}: the sweep cycle would remove ${unseen} of ${held} rows${earlier}, more than maxDeletes (${maxDeletes}) allows; nothing of the cycle was removed or inserted. If the list really lost them, run again with maxDeletes ${needed} (CLI: --max-deletes ${needed})`,
      "too-many-deletes",
      what,
    ),
    { maxDeletesNeeded: needed },
  );
}
