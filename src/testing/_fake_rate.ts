// Internal: the fake's rate limit on API requests, as the service has one:
// past `requests` in any window of `interval` ms it answers 429 with the
// service's own body. Only answered requests count.

import { emptyWindow, recordSend, slotWait } from "../client/rate_limit.ts";
import { checkNumber } from "../core/_check.ts";
import { json } from "./_fake_http.ts";

/**
 * The limit the fake enforces on API requests.
 *
 * @example The service's published limit, scaled down for a test
 * ```ts
 * import type { FakeRateLimit } from "@partner-api/client/testing";
 *
 * const limit: FakeRateLimit = { requests: 90, interval: 3000 };
 * if (limit.interval !== 3000) throw new Error();
 * ```
 */
export interface FakeRateLimit {
  /** Requests allowed in any window. */
  readonly requests: number;
  /** The window's length, in ms. */
  readonly interval: number;
}

/**
 * A gate for API requests: `undefined` to let one through (it is counted),
 * or the 429 answer. Without a limit every request goes through.
 */
export function rateGate(
  limit: FakeRateLimit | undefined,
  now: () => number,
  context: string,
): () => Response | undefined {
  if (limit === undefined) return () => undefined;
  const requests = checkNumber(
    limit.requests,
    0,
    "positive integer",
    context,
    "apiRateLimit.requests",
  );
  const interval = checkNumber(
    limit.interval,
    0,
    "positive integer",
    context,
    "apiRateLimit.interval",
  );
  const window = emptyWindow(requests);
  const span = interval % 60_000 === 0
    ? `${interval / 60_000} minute${interval === 60_000 ? "" : "s"}`
    : `${interval / 1000} seconds`;
  const body = {
    error: `Sending more than ${requests} requests in ${span} is not allowed`,
  };
  return () => {
    const at = now();
    if (slotWait(window, interval, at) > 0) return json(429, body);
    recordSend(window, at);
    return undefined;
  };
}
