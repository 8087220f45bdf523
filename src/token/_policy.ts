// Internal: the token provider's decisions, pure functions over its state and the time.

import { TokenRequestError } from "../core/errors.ts";
import { type QuotaBucket, quotaResetAfter } from "../core/quota.ts";
import {
  isIssuedToken,
  type IssuedToken,
  type QuotaSnapshot,
  storableToken,
} from "../core/token_values.ts";
import type {
  TokenFailure,
  TokenRecord,
  TokenRenewal,
} from "../store/types.ts";
import { laterOf } from "../store/token_access.ts";
import { isPermissionError } from "../core/_cause.ts";
import { type Backoff, isRetryStatus } from "../core/_attempt_loop.ts";

/** The longest a quota block lasts: a day bucket's reset, plus an hour of slack. */
export const MAX_QUOTA_BLOCK = 25 * 3_600_000;
/** How long a 429 blocks when it says nothing about when the quota resets. */
const QUOTA_FALLBACK_WAIT = 60_000;
const DEFAULT_REFRESH_MARGIN = 5 * 60_000;
/** A token is not handed out this close to expiry: clocks and networks lag. */
const MAX_SKEW_GUARD = 2_000;
/** The first cooldown after a failure (not the quota): a refusal would recur, and may count. */
export const FIRST_COOLDOWN = 10_000;
/** The longest cooldown that escalation reaches (a server's `Retry-After` may ask for more). */
export const MAX_COOLDOWN = 15 * 60_000;
/** Slack for a coordinating store's own reads and writes within a flight. */
const COORDINATION_ALLOWANCE = 60_000;

/** When a token stops being handed out and when its refresh starts. */
export type TokenTimes = Readonly<ReturnType<typeof tokenTimes>>;

/** The token a provider holds, with its times. */
export interface CachedToken {
  readonly token: IssuedToken;
  readonly times: TokenTimes;
  /** One settled promise per token keeps the warm path allocation-free. */
  readonly ready: Promise<IssuedToken>;
  /** Its expiry on this wall clock: the token's, or earlier while the wall clock stands stepped back (a token after it is newer). */
  readonly expiresAt: number;
  /** Its expiry on the steady clock, which no step of the wall clock moves (for its own request, from its attempt's sending). */
  readonly steadyExpiresAt: number;
}

/** How far a cached token's expiry may stand from where the clocks put it before its times move, in ms (their drift). */
const STEP_SLACK = 1_000;

/**
 * `cached` with its times at the earlier of its expiries on the `wall` clock (a host suspended, which the steady clock
 * misses) and the `steady` one (a wall clock stepped back meanwhile); itself when that is where they stand.
 */
export function timesAfterStep(
  cached: CachedToken,
  wall: number,
  steady: number,
): CachedToken {
  const steadyExpiry = cached.steadyExpiresAt + wall - steady;
  const expiresAt = Math.min(cached.token.expiresAt, steadyExpiry);
  const shift = expiresAt - cached.expiresAt;
  if (Math.abs(shift) <= STEP_SLACK) return cached;
  const { usableUntil, refreshAt } = cached.times;
  const times = {
    usableUntil: usableUntil + shift,
    refreshAt: refreshAt + shift,
  };
  return { ...cached, times, expiresAt };
}

/**
 * `record` with the token a provider holds (`cached`) at its expiry there: moved back by a step back of the wall
 * clock, which the stored copy does not know (it would read as newer, and be handed out expired).
 */
export function seenHere(
  record: TokenRecord,
  cached: CachedToken | undefined,
): TokenRecord {
  const stored = record.token;
  // The same issuance only: a token handed out again (an endpoint caching tokens) has a lifetime of its own, which
  // these times hid (every call after the first lifetime failed 'malformed').
  const same = cached !== undefined && stored !== undefined &&
    stored.accessToken === cached.token.accessToken &&
    stored.expiresAt === cached.token.expiresAt;
  if (!same || cached.expiresAt === stored.expiresAt) return record;
  // A plain copy: one built by issuedToken() keeps its access token out of a spread.
  const token = { ...storableToken(stored), expiresAt: cached.expiresAt };
  return { ...record, token };
}

/**
 * Refresh ahead of expiry by `refreshMargin`, never more than half the lifetime; stop handing out a token a skew guard
 * (2 s, or a twentieth of the lifetime when less) before it expires.
 */
export function tokenTimes(
  token: IssuedToken,
  refreshMargin: number | undefined,
) {
  const lifetime = token.expiresIn * 1000;
  const usableUntil = token.expiresAt - Math.min(MAX_SKEW_GUARD, lifetime / 20);
  const margin = Math.min(
    refreshMargin ?? Math.min(DEFAULT_REFRESH_MARGIN, lifetime / 10),
    lifetime / 2,
  );
  return {
    usableUntil,
    refreshAt: Math.min(usableUntil, token.expiresAt - margin),
  };
}

/** What `getToken` does, by what the provider knows when it is called: `"refresh"` serves the cached token meanwhile; `"blocked"`, `"failed"` send nothing. */
export function decide(
  { times, flightDeadline, blockedUntil, failedUntil }: {
    readonly times?: TokenTimes | undefined;
    /** When the running flight is given up on; absent without one. */
    readonly flightDeadline?: number | undefined;
    /** The quota block's end (after a 429). */
    readonly blockedUntil?: number | undefined;
    /** The cooldown's end (after a failure that was not the quota). */
    readonly failedUntil?: number | undefined;
  },
  now: number,
): "fresh" | "refresh" | "join" | "blocked" | "failed" | "request" {
  const flying = now < (flightDeadline ?? -Infinity);
  const blocked = now < (blockedUntil ?? -Infinity);
  const failed = now < (failedUntil ?? -Infinity);
  if (times !== undefined && now < times.usableUntil) {
    return now < times.refreshAt || flying || blocked || failed
      ? "fresh"
      : "refresh";
  }
  if (flying) return "join";
  if (blocked) return "blocked";
  return failed ? "failed" : "request";
}

/** A failed token request's cooldown, as the provider and the token record keep it: `failures` in a row, each within {@linkcode MAX_COOLDOWN} of the last cooldown's end. */
export type Cooldown = Pick<TokenFailure, "until" | "failures">;

/**
 * The cooldown after a failure at `now`: 10 s, doubling up to 15 minutes; again 10 s over 15 minutes after the last one
 * ended (a passing fault must not leave a long cooldown). A 5xx's or 403's `Retry-After` above `maxRetryAfter` sets it
 * when longer, at most {@linkcode MAX_QUOTA_BLOCK}.
 */
export function cooldownAfter(
  previous: Cooldown | undefined,
  retryAfter: number | undefined,
  maxRetryAfter: number,
  now: number,
): Cooldown {
  const failures = previous !== undefined && now - previous.until < MAX_COOLDOWN
    ? Math.min(previous.failures + 1, 32)
    : 1;
  const doubled = FIRST_COOLDOWN * 2 ** (failures - 1);
  const escalated = Math.min(doubled, MAX_COOLDOWN);
  const asked = retryAfter !== undefined && retryAfter > maxRetryAfter
    ? Math.min(retryAfter, MAX_QUOTA_BLOCK)
    : 0;
  return { until: now + Math.max(escalated, asked), failures };
}

/** The longest one token request may take with its retries: every attempt and wait at its longest. */
export function requestBudget(backoff: Backoff, timeout: number): number {
  const longestWait = Math.max(backoff.maxDelay, backoff.maxRetryAfter);
  return (backoff.retries + 1) * timeout + backoff.retries * longestWait;
}

/**
 * How long a flight may take before callers give up on it: one request with its retries, after (with a coordinating
 * store) a wait for another process's and some slack. So a runtime that drops a flight's work (workerd) traps nobody.
 */
export function flightBudget(
  backoff: Backoff,
  timeout: number,
  coordinating: boolean,
): number {
  const request = requestBudget(backoff, timeout);
  return coordinating ? 2 * request + COORDINATION_ALLOWANCE : request;
}

/**
 * When a token request may pass again after a 429: the later of `Retry-After` and the exhausted buckets' reset, or
 * either alone, else a minute; from {@linkcode FIRST_COOLDOWN} (a 429 asking no wait was asked again at the callers'
 * rate) to {@linkcode MAX_QUOTA_BLOCK}.
 */
export function quotaRetryAt(
  retryAfter: number | undefined,
  buckets: readonly QuotaBucket[],
  now: number,
): number {
  const resetAfter = quotaResetAfter(buckets);
  const reset = resetAfter === undefined ? undefined : resetAfter * 1000;
  let wait: number;
  if (retryAfter === undefined) wait = reset ?? QUOTA_FALLBACK_WAIT;
  else if (buckets.some((bucket) => bucket.remaining === 0)) {
    wait = Math.max(retryAfter, reset!);
  } else wait = retryAfter;
  return now + Math.min(Math.max(wait, FIRST_COOLDOWN), MAX_QUOTA_BLOCK);
}

/** Whether a failed attempt is worth another: network, timeout, or a retry status but 429 (the quota). */
export function isRetryable(error: unknown): error is TokenRequestError {
  if (!(error instanceof TokenRequestError)) return false;
  switch (error.reason) {
    case "network":
      return !isPermissionError(error.cause);
    case "timeout":
      return true;
    case "status":
      return error.status !== 429 && isRetryStatus(error.status ?? 0);
    default:
      return false;
  }
}

/** Whether a stored record answers without a request: a block or cooldown in force, or a token not yet due. */
export function settles(
  record: TokenRecord,
  now: number,
  refreshMargin: number | undefined,
  rejected: string | undefined,
): boolean {
  if (now < (record.blockedUntil ?? -Infinity)) return true;
  if (now < (record.failure?.until ?? -Infinity)) return true;
  return isUsableToken(record.token, rejected) &&
    now < tokenTimes(record.token, refreshMargin).refreshAt;
}

/**
 * What a record knows beyond `known`: a later token, a block still in force, a newer quota. A later token without a
 * block lifts the provider's block: the quota has reset for whoever got it.
 */
export function newerFromRecord(
  record: TokenRecord,
  known: {
    readonly expiresAt?: number | undefined;
    readonly blockedUntil?: number | undefined;
    readonly quota?: QuotaSnapshot | undefined;
    /** The last token invalidated: never taken back from a store. */
    readonly rejected?: string | undefined;
    readonly failure?: TokenFailure | undefined;
    readonly renewal?: TokenRenewal | undefined;
  },
  now: number,
) {
  const newer = isUsableToken(record.token, known.rejected) &&
    record.token.expiresAt > (known.expiresAt ?? -Infinity);
  let blockedUntil = known.blockedUntil;
  if (now < (record.blockedUntil ?? -Infinity)) {
    // Another process's (or version's) block is clamped too: at most 25 h from now.
    const stored = Math.min(record.blockedUntil!, now + MAX_QUOTA_BLOCK);
    blockedUntil = Math.max(blockedUntil ?? -Infinity, stored);
  } else if (newer) blockedUntil = undefined;
  const quota = record.quota;
  const newerQuota = quota !== undefined && isNewerQuota(quota, known.quota);
  return {
    blockedUntil,
    failure: laterFailure(record.failure, known.failure, newer, now),
    renewal: laterOf(known.renewal, record.renewal, ({ at }) => at),
    ...(newer ? { token: record.token } : {}),
    ...(newerQuota ? { quota } : {}),
  };
}

/** The cooldown a record leaves in force; another process's success ends ours. */
function laterFailure(
  stored: TokenFailure | undefined,
  known: TokenFailure | undefined,
  newerToken: boolean,
  now: number,
): TokenFailure | undefined {
  if (stored === undefined) return newerToken ? undefined : known;
  if (laterOf(known, stored, ({ until }) => until) === known) return known;
  // Clamped like a block: a record may come from another clock or version.
  return { ...stored, until: Math.min(stored.until, now + MAX_QUOTA_BLOCK) };
}

/** Later, or as late (one clock tick) with other buckets: the same reading is not news. */
function isNewerQuota(quota: QuotaSnapshot, known: QuotaSnapshot | undefined) {
  if (known === undefined || quota.observedAt > known.observedAt) return true;
  return quota.observedAt === known.observedAt &&
    JSON.stringify(quota.buckets) !== JSON.stringify(known.buckets);
}

function isUsableToken(
  token: unknown,
  rejected: string | undefined,
): token is IssuedToken {
  return isIssuedToken(token) && token.accessToken !== rejected;
}
