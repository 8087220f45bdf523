// Internal: the checked limit of a fleet limiter's options.

import type { RateLimit } from "../core/rate_limiter.ts";
import { checkNumber, optionError } from "../core/_check.ts";

/**
 * The limit of a fleet limiter's options: the service's by default.
 *
 * @throws {RangeError} When `requests` is not a positive integer up to
 * `most`, or `interval` not one up to 2,147,483,647 ms (what a timer can
 * wait: a longer window would make every wait fire at once).
 */
export function checkFleetLimit(
  options: { requests?: number; interval?: number },
  context: string,
  most: number,
): RateLimit {
  const requests = checkNumber(
    options.requests,
    900,
    "positive integer",
    context,
    "requests",
  );
  const interval = checkNumber(
    options.interval,
    300_000,
    "positive whole time in ms, at most 2147483647",
    context,
    "interval",
  );
  if (requests > most) {
    throw optionError(
      RangeError,
      context,
      "requests",
      `must be at most ${most}`,
      String(requests),
    );
  }
  return Object.freeze({ requests, interval });
}
