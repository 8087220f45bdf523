// Internal: the mass-delete guard every sink applies when a sweep cycle
// completes, so that a service answering an empty or filtered list by
// mistake cannot empty the copy.

import { SyncError } from "./sync_error.ts";

/** Whether removing `deleted` of `held` rows breaks the `maxDeletes` share. */
export function tooMany(
  deleted: number,
  held: number,
  maxDeletes: number,
): boolean {
  return deleted > maxDeletes * held;
}

/** The refusal of a cycle that would remove `deleted` of `held` rows. */
export function tooManyDeletes(
  deleted: number,
  held: number,
  maxDeletes: number,
  what: string,
): SyncError {
  return new SyncError(
    `Cannot sync into ${what}: the sweep cycle would remove ${deleted} of ${held} rows, more than maxDeletes (${maxDeletes}) allows; nothing was removed. If the list really lost them, run again with a larger maxDeletes (CLI: --max-deletes)`,
    "too-many-deletes",
    what,
  );
}
