// The fake's rate limit on API requests, as the service's: 429 past `requests` per `interval` ms.
// Its window arithmetic is its own, not the client's limiter's: a bug in one cannot hide the other.

import {
  checkAtMost,
  checkNumber,
  requireKnownOptions,
} from "../core/_check.ts";
import {
  MOST_WINDOW_REQUESTS,
  RATE_LIMIT_OPTIONS,
  RATE_RULES,
} from "../core/_rate_options.ts";
import { json } from "./_fake_http.ts";
import type { FakeRateLimit } from "./fake_options.ts";

/** A gate for API requests: `undefined` to let one through (counted), or the 429; no limit, no gate. */
export function rateGate(
  limit: FakeRateLimit | undefined,
  now: () => number,
  context: string,
): () => Response | undefined {
  if (limit === undefined) return () => undefined;
  requireKnownOptions(limit, RATE_LIMIT_OPTIONS, context, "apiRateLimit");
  const check = (field: keyof FakeRateLimit) => {
    const option = `apiRateLimit.${field}`;
    const rule = RATE_RULES[field];
    return checkNumber(limit[field], undefined, rule, context, option);
  };
  // At most the client limiter's own bound.
  const requests = checkAtMost(
    check("requests"),
    MOST_WINDOW_REQUESTS,
    context,
    "apiRateLimit.requests",
  );
  const interval = check("interval");
  // The last `requests` arrivals, a ring: the slot at `next` holds the oldest (-Infinity: none yet).
  const arrivals = new Float64Array(requests).fill(-Infinity);
  let next = 0;
  const span = interval % 60_000 === 0
    ? `${interval / 60_000} minute${interval === 60_000 ? "" : "s"}`
    : `${interval / 1000} second${interval === 1000 ? "" : "s"}`;
  const body = {
    error: `Sending more than ${requests} requests in ${span} is not allowed`,
  };
  return () => {
    const at = now();
    // Full when the oldest of the last `requests` arrivals is still after `at - interval`.
    if (arrivals[next]! > at - interval) return json(429, body);
    arrivals[next] = at;
    next = (next + 1) % requests;
    return undefined;
  };
}
