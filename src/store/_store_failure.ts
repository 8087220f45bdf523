// How a fleet limiter's store failed, as `rate.degraded` says it, and when losses of its window make it a failing one.

import type { RateDegradedEvent } from "../core/rate_events.ts";

/** Windows a store may lose within an interval, no grant since, before it counts as failing (else callers stall). */
export const MOST_LOSSES = 5;

/** A run of lost windows: how many since the first, within an interval of it, with no grant since (0: none). */
export interface Losses {
  readonly losses: number;
  readonly since: number;
}

/** `run` with one more loss at `now` (a new run once an interval passed since its first); failing past MOST_LOSSES. */
export function countLoss(run: Losses, now: number, interval: number) {
  const fresh = run.losses === 0 || now - run.since >= interval;
  const next = fresh
    ? { losses: 1, since: now }
    : { ...run, losses: run.losses + 1 };
  return { run: next, failing: next.losses > MOST_LOSSES };
}

/** Why a fleet limiter paces alone, as `rate.degraded` says it. */
export type Cause = Pick<RateDegradedEvent, "reason" | "code">;

/** A store's reply no script of it gives: a failing store (`rate.degraded`'s `reason` `"answer"`). */
export class UnexpectedAnswer extends TypeError {
  override name = "UnexpectedAnswer";
}

/** Codes `rate.degraded` may carry (Redis's error words, network codes); only these: a word in capitals may be a password. */
const CODES = new Set(
  `ERR WRONGTYPE NOAUTH WRONGPASS NOPERM READONLY LOADING BUSY MASTERDOWN MISCONF OOM NOSCRIPT EXECABORT CROSSSLOT
  CLUSTERDOWN MOVED ASK TRYAGAIN NOREPLICAS NOPROTO ECONNREFUSED ECONNRESET ECONNABORTED ETIMEDOUT ENOTFOUND EAI_AGAIN
  EPIPE EHOSTUNREACH ENETUNREACH`.split(/\s+/),
);

/** Codes that name a setting to mend rather than an outage to wait out, by the setting: each is said once within a fall. */
const SETTINGS: Readonly<Record<string, string>> = {
  NOAUTH: "credentials",
  WRONGPASS: "credentials",
  NOPERM: "credentials",
  READONLY: "replica",
  MISCONF: "persistence",
  OOM: "memory",
};

/**
 * Whether `cause` is said: at a fall's start (not `degraded`), or within one, a setting to mend it has not said yet
 * (`said`, the settings it said since the fall began); and the setting it names, if any.
 */
export function toSay(
  degraded: boolean,
  said: ReadonlySet<string>,
  cause: Cause,
): { say: boolean; setting?: string } {
  const setting = cause.code === undefined ? undefined : SETTINGS[cause.code];
  const news = setting !== undefined && !said.has(setting);
  return {
    say: !degraded || news,
    ...setting === undefined ? {} : { setting },
  };
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
  // Redis refuses an unauthenticated command of more than 10 arguments so (a take has more): a password not sent.
  if (words.startsWith("ERR Protocol error: unauthenticated")) {
    return { reason: "error", code: "NOAUTH" };
  }
  const word = typeof code === "string" ? code : words.split(" ")[0]!;
  return CODES.has(word)
    ? { reason: "error", code: word }
    : { reason: "error" };
}
