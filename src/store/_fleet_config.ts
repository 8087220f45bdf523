// What a fleet rate limiter is built from: the store's window (Redis or KV) and the options both stores take; how its
// store failed, as `rate.degraded` says it.

import {
  checkRateLimit,
  checkReserve,
  SERVICE_RATE_LIMIT,
} from "../core/_rate_options.ts";
import { requireFunction, requireOptions } from "../core/_check.ts";
import { steadyClock } from "../core/_clock.ts";
import type { FleetRateLimiterOptions } from "./fleet_options.ts";
import type { Reseed, TakeReply, TakeRequest } from "./_window_rules.ts";
import type { RateDegradedEvent } from "../core/rate_events.ts";

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

/** Why a fleet limiter paces alone, as `rate.degraded` says it. */
export type Cause = Pick<RateDegradedEvent, "reason" | "code">;

/** A store's reply no script of it gives: a failing store (`rate.degraded`'s `reason` `"answer"`). */
export class UnexpectedAnswer extends TypeError {
  override name = "UnexpectedAnswer";
}

/**
 * Codes `rate.degraded` may carry: Redis's error replies' first words and the system's network codes. Only these: a word
 * merely in capitals may be a password or a key (attack r198a F3).
 */
const CODES = new Set(
  `ERR WRONGTYPE NOAUTH WRONGPASS NOPERM READONLY LOADING BUSY MASTERDOWN MISCONF OOM NOSCRIPT EXECABORT CROSSSLOT
  CLUSTERDOWN MOVED ASK TRYAGAIN NOREPLICAS NOPROTO ECONNREFUSED ECONNRESET ECONNABORTED ETIMEDOUT ENOTFOUND EAI_AGAIN
  EPIPE EHOSTUNREACH ENETUNREACH`.split(/\s+/),
);

/**
 * Codes that name a setting to mend rather than an outage to wait out, by the setting: each is said once within a fall
 * (r198a F1: a rotated password went unsaid; r199a F2, F3: a wrong password answers WRONGPASS, then NOAUTH).
 */
const SETTINGS: Readonly<Record<string, string>> = {
  NOAUTH: "credentials",
  WRONGPASS: "credentials",
  NOPERM: "credentials",
  READONLY: "replica",
  MISCONF: "persistence",
  OOM: "memory",
};

/** The setting `cause` names, if any. */
export function settingOf(cause: Cause): string | undefined {
  return cause.code === undefined ? undefined : SETTINGS[cause.code];
}

/**
 * How a store's call failed: never in its own words, which may quote an address with a password; a known code where
 * the error has one, a system's (`ECONNREFUSED`) or the first word of a Redis error reply (`NOAUTH`, `WRONGPASS`).
 */
export function failureOf(error: unknown): Cause {
  if (error instanceof UnexpectedAnswer) return { reason: "answer" };
  const { name, code, message } = Object(error);
  if (name === "TimeoutError") return { reason: "timeout" };
  const words = String(message);
  // Redis refuses an unauthenticated command of more than 10 arguments so (a take has more): a password not sent, as
  // NOAUTH is (r198a F2: node-redis said ERR).
  if (words.startsWith("ERR Protocol error: unauthenticated")) {
    return { reason: "error", code: "NOAUTH" };
  }
  const word = typeof code === "string" ? code : words.split(" ")[0]!;
  return CODES.has(word)
    ? { reason: "error", code: word }
    : { reason: "error" };
}
