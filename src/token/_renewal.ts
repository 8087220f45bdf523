// Internal: the 401 ledger, kept by each provider of this module (and by a
// client for a hand-written provider without one).

import { onUnauthorized } from "./_policy.ts";

/**
 * A 401 ledger over any provider: the first 401 in an hour (of `now`)
 * invalidates its token and answers `true` (retry once with a fresh one);
 * every other one in that hour answers `false` (return the 401, keep the
 * token). Providers of this module keep one each; a client keeps its own
 * for a hand-written provider without `reportUnauthorized`.
 */
export function renewalLedger(
  now: () => number,
  invalidate: (accessToken: string) => Promise<void>,
): (accessToken: string) => Promise<boolean> {
  let renewedAt: number | undefined;
  return async (accessToken) => {
    const at = now();
    if (onUnauthorized(renewedAt, at) === "keep") return false;
    renewedAt = at;
    await invalidate(accessToken);
    return true;
  };
}
