// What a fleet rate limiter is built from: the store's window (Redis or KV) and the options both stores take.

import {
  checkRateLimit,
  checkReserve,
  SERVICE_RATE_LIMIT,
} from "../core/_rate_options.ts";
import { requireFunction, requireOptions } from "../core/_check.ts";
import { steadyClock } from "../core/_clock.ts";
import type { FleetRateLimiterOptions } from "./fleet_options.ts";
import type { Reseed, TakeReply, TakeRequest } from "./_window_rules.ts";

/** The fleet's window in a store; a send is named `<holder>:<ticket>`, unanswered until `answer`. */
export interface SharedWindow {
  readonly store: "redis" | "kv";
  /** Takes slots for the sends, in order, as far as the window and the line allow. */
  take(request: TakeRequest): Promise<TakeReply>;
  /** Writes back this process's sends of the last window that the window lacks. */
  reseed(reseed: Reseed): Promise<void>;
  /** The sends were answered: their slots count from now. */
  answer(sends: readonly string[]): Promise<void>;
  /** The service refused a request for its rate: no send for a while. */
  refuse(): Promise<void>;
}

/** What a fleet limiter needs besides its store. */
export type FleetConfig = Readonly<ReturnType<typeof fleetConfig>>;

/** Checks the options both fleet limiters take; `most` bounds `requests`. */
export function fleetConfig(
  options: FleetRateLimiterOptions & { now?: () => number },
  context: string,
  most: number,
) {
  requireOptions(options, context);
  const limit = checkRateLimit(options, context, most, SERVICE_RATE_LIMIT);
  return {
    limit,
    reserve: checkReserve(options.reserve, limit.requests, context),
    // Names this process's sends in the store.
    holder: crypto.randomUUID().slice(0, 13),
    // A clock that never goes back (a step back must not stall callers).
    now: steadyClock(requireFunction(options.now, context, "now")),
    onEvent: requireFunction(options.onEvent, context, "onEvent"),
  };
}
