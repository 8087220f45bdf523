// Internal: the one check of a rate limit's options, for every limiter.

import type { RateLimit } from "./rate_limiter.ts";
import { checkAtMost, checkNumber, type NumberRule, oneOf } from "./_check.ts";

/** A request's priority, as Fetch's `RequestInit.priority` has it: "low" is background. */
export type RatePriority = "high" | "low" | "auto";

/** The service's published limit: 900 requests per 5 minutes per IP. */
export const SERVICE_RATE_LIMIT: RateLimit = /* @__PURE__ */ Object.freeze({
  requests: 900,
  interval: 300_000,
});

/** The most `requests` a window keeps one time each for (8 MB): 2 ** 40 failed to allocate, naming no option. */
export const MOST_WINDOW_REQUESTS = 1_000_000;

/** What a rate limit's fields must be, for every limiter and the fake's alike. */
export const RATE_RULES = {
  requests: "positive integer",
  interval: "positive whole time in ms, at most 2147483647",
} as const satisfies Record<keyof RateLimit, NumberRule>;

/** A rate limit's option names, for the checks of one given inside other options. */
export const RATE_LIMIT_OPTIONS: readonly string[] = Object.keys(RATE_RULES);

/** The checked `{ requests, interval }` (or `defaults`): `requests` to `most`, `interval` to a timer's most (callers would spin). */
export function checkRateLimit(
  options: { requests?: number | undefined; interval?: number | undefined },
  context: string,
  most: number,
  defaults?: RateLimit,
): RateLimit {
  const check = (name: keyof RateLimit): number => {
    const rule = RATE_RULES[name];
    return checkNumber(options[name], defaults?.[name], rule, context, name);
  };
  const requests = check("requests");
  const interval = check("interval");
  checkAtMost(requests, most, context, "requests");
  return Object.freeze({ requests, interval });
}

/** The checked `reserve`, slots background requests leave to live ones ({@linkcode defaultReserve}). */
export function checkReserve(
  value: number | undefined,
  requests: number,
  context: string,
): number {
  const fallback = defaultReserve(requests), rule = "non-negative integer";
  const reserve = checkNumber(value, fallback, rule, context, "reserve");
  return checkAtMost(reserve, requests - 1, context, "reserve");
}

/** The default `reserve`: a tenth of the limit, at least 1, never the whole (background requests would never go). */
function defaultReserve(requests: number): number {
  return Math.min(requests - 1, Math.max(1, Math.ceil(requests / 10)));
}

/** Sends a request of `priority` may find in a window before it waits, in every limiter: the limit, less the reserve if `"low"`. */
export function rateShare(
  limit: RateLimit,
  priority: RatePriority | undefined,
  reserve: number = defaultReserve(limit.requests),
): number {
  return priority === "low" ? limit.requests - reserve : limit.requests;
}

/** The priorities Fetch knows. */
export const PRIORITIES: readonly RatePriority[] = ["high", "low", "auto"];

/** The checked `priority` option (Fetch's `RequestInit.priority`), or `fallback`. */
export function checkPriority<F extends RatePriority | undefined>(
  value: unknown,
  fallback: F,
  context: string,
): RatePriority | F {
  if (value === undefined) return fallback;
  return oneOf(value, PRIORITIES, context, "priority");
}
