// The one failure kind of a sync that is neither the service's (ApiError)
// nor the caller's (TypeError, RangeError): a list that cannot be copied.

import { PartnerApiError } from "../core/errors.ts";

/**
 * Why a list cannot be copied:
 *
 * - `"missing-id"`: an item has no id (the `id` field is absent, or is
 *   neither a string nor a finite number), so it cannot be told apart;
 * - `"unordered"`: items came out of the asked order (or without the sort
 *   field), so no window can prove what lies between two others.
 *
 * @example Telling the two apart
 * ```ts
 * import type { SyncErrorReason } from "@partner-api/client/sync";
 *
 * const advice: Record<SyncErrorReason, string> = {
 *   "missing-id": "pass the right 'id'",
 *   unordered: "sort by a field the service orders by",
 * };
 * if (advice.unordered === "") throw new Error();
 * ```
 */
export type SyncErrorReason = "missing-id" | "unordered";

/**
 * A sync stopped because of the list itself: nothing past the last good
 * batch was written, and the checkpoint stays at that batch.
 *
 * @example Reading the reason
 * ```ts
 * import { SyncError } from "@partner-api/client/sync";
 *
 * const error = new SyncError("no id", "missing-id");
 * if (error.reason !== "missing-id" || error.name !== "SyncError") throw new Error();
 * ```
 */
export class SyncError extends PartnerApiError {
  /** Why the list cannot be copied. */
  declare readonly reason: SyncErrorReason;

  /**
   * Creates the error.
   *
   * @param message What is wrong, and where.
   * @param reason Why the list cannot be copied.
   */
  constructor(message: string, reason: SyncErrorReason) {
    super(message, reason);
    this.name = "SyncError";
  }
}
