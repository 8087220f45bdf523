// Internal: the fake's rate limit on API requests, as the service has one:
// past `requests` in any window of `interval` ms it answers 429 with the
// service's own body. Only requests it lets through count, each from its
// arrival. Its window arithmetic is its own (a ring of arrival times), not
// the client's limiter: a bug in one cannot hide behind the other.

import { checkNumber } from "../core/_check.ts";
import { json } from "./_fake_http.ts";
import type { FakeRateLimit } from "./fake_options.ts";

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
    "positive whole time in ms, at most 2147483647",
    context,
    "apiRateLimit.interval",
  );
  const arrivals = arrivalRing(requests);
  const span = interval % 60_000 === 0
    ? `${interval / 60_000} minute${interval === 60_000 ? "" : "s"}`
    : `${interval / 1000} seconds`;
  const body = {
    error: `Sending more than ${requests} requests in ${span} is not allowed`,
  };
  return () => {
    const at = now();
    // Full when the oldest of the last `requests` arrivals is still in the
    // window (a window holds the arrivals after `at - interval`).
    if (arrivals.full() && arrivals.oldest() > at - interval) {
      return json(429, body);
    }
    arrivals.add(at);
    return undefined;
  };
}

/** The latest `size` arrival times, oldest first. */
function arrivalRing(size: number) {
  const times = new Float64Array(size);
  let next = 0;
  let count = 0;
  return {
    full: () => count === size,
    oldest: () => times[count === size ? next : 0]!,
    add(time: number) {
      times[next] = time;
      next = (next + 1) % size;
      count = Math.min(count + 1, size);
    },
  };
}
