// Internal: the token provider's decisions, as pure functions over its state
// and the time. The provider only carries them out.

import { TokenRequestError } from "./errors.ts";
import { type QuotaBucket, quotaResetAfter } from "./quota.ts";
import {
  isIssuedToken,
  type IssuedToken,
  type QuotaSnapshot,
} from "./_token_value.ts";
import type { TokenRecord } from "./_token_store.ts";
import type { Backoff } from "./_retry.ts";

/** The longest a quota block lasts: a day bucket's reset, plus an hour of slack. */
export const MAX_QUOTA_BLOCK = 25 * 3_600_000;
/** How long a 429 blocks when it says nothing about when the quota resets. */
const QUOTA_FALLBACK_WAIT = 60_000;
const DEFAULT_REFRESH_MARGIN = 5 * 60_000;
/** A token is not handed out this close to expiry: clocks and networks lag. */
const MAX_SKEW_GUARD = 2_000;
/** After a failed background refresh, the old token is served this long before trying again. */
export const BACKGROUND_RETRY_WINDOW = 10_000;
/** The longest a coordinating store may keep a flight waiting for another process. */
const COORDINATION_ALLOWANCE = 60_000;

/** When a token stops being handed out and when its refresh starts. */
export interface TokenTimes {
  readonly usableUntil: number;
  readonly refreshAt: number;
}

/**
 * Refresh ahead of expiry by `refreshMargin` (default five minutes, or a
 * tenth of the lifetime when less), never by more than half the lifetime;
 * stop handing out a token a skew guard (2 s, or a twentieth of the lifetime
 * when less) before it expires.
 */
export function tokenTimes(
  token: IssuedToken,
  refreshMargin: number | undefined,
): TokenTimes {
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

/** What the provider knows when `getToken` is called. */
export interface ProviderState {
  /** Times of the cached token, if there is one. */
  readonly times?: TokenTimes | undefined;
  /** When the running flight is given up on; absent without one. */
  readonly flightDeadline?: number | undefined;
  /** No token request before this (after a 429). */
  readonly blockedUntil?: number | undefined;
  /** No background refresh before this (after one failed). */
  readonly cooldownUntil?: number | undefined;
}

/**
 * What `getToken` does:
 * - `"fresh"`: hand out the cached token;
 * - `"refresh"`: hand it out and refresh in the background;
 * - `"join"`: wait for the running flight;
 * - `"blocked"`: reject with the quota error, send nothing;
 * - `"request"`: start a flight and wait for it.
 */
export type Decision = "fresh" | "refresh" | "join" | "blocked" | "request";

/** Decides what `getToken` does at `now`. */
export function decide(state: ProviderState, now: number): Decision {
  const flying = state.flightDeadline !== undefined &&
    now < state.flightDeadline;
  const blocked = state.blockedUntil !== undefined && now < state.blockedUntil;
  const { times } = state;
  if (times !== undefined && now < times.usableUntil) {
    const cooling = state.cooldownUntil !== undefined &&
      now < state.cooldownUntil;
    return now < times.refreshAt || flying || blocked || cooling
      ? "fresh"
      : "refresh";
  }
  if (flying) return "join";
  return blocked ? "blocked" : "request";
}

/**
 * How long a flight may take before callers give up on it and start another:
 * every attempt timing out, every backoff at its longest, and time for a
 * coordinating store to wait for another process. A runtime that silently
 * drops a flight's work (workerd, when the request that started it ends)
 * therefore traps nobody for longer than the retries allow.
 */
export function flightBudget(
  backoff: Backoff,
  timeout: number,
  coordinating: boolean,
): number {
  const attempts = backoff.retries + 1;
  return attempts * timeout + backoff.retries * backoff.maxDelay +
    (coordinating ? COORDINATION_ALLOWANCE : 0);
}

/**
 * When the quota lets a token request through again: `Retry-After` if given,
 * else the largest reset among exhausted buckets, else the smallest reset,
 * else a minute; never more than {@linkcode MAX_QUOTA_BLOCK} from `now`.
 */
export function quotaRetryAt(
  retryAfter: number | undefined,
  buckets: readonly QuotaBucket[],
  now: number,
): number {
  const resetAfter = quotaResetAfter(buckets);
  const wait = retryAfter ??
    (resetAfter === undefined ? QUOTA_FALLBACK_WAIT : resetAfter * 1000);
  return now + Math.min(wait, MAX_QUOTA_BLOCK);
}

/** Runtimes refuse a request they lack permission for with these; retrying cannot help. */
const PERMISSION_ERRORS = new Set(["NotCapable", "PermissionDenied"]);

/** Whether a failed attempt is worth another: network, timeout, 408 and 5xx. */
export function isRetryable(error: unknown): error is TokenRequestError {
  if (!(error instanceof TokenRequestError)) return false;
  switch (error.reason) {
    case "network":
      return !PERMISSION_ERRORS.has(
        (error.cause as Error | undefined)?.name ?? "",
      );
    case "timeout":
      return true;
    case "status":
      return error.status === 408 || (error.status ?? 0) >= 500;
    default:
      return false;
  }
}

/** Whether a stored record answers the need without a request: a quota block in force, or a token not yet due for refresh. */
export function settles(
  record: TokenRecord,
  now: number,
  refreshMargin: number | undefined,
  rejected: string | undefined,
): boolean {
  if (record.blockedUntil !== undefined && now < record.blockedUntil) {
    return true;
  }
  return isUsableToken(record.token, rejected) &&
    now < tokenTimes(record.token, refreshMargin).refreshAt;
}

/** What the provider knows, as far as a record can add to it. */
export interface Known {
  readonly expiresAt?: number | undefined;
  readonly blockedUntil?: number | undefined;
  readonly quota?: QuotaSnapshot | undefined;
  /** The last token invalidated: never taken back from a store. */
  readonly rejected?: string | undefined;
}

/** What a record adds to what the provider knows. */
export interface RecordNews {
  /** A later token than the provider's. */
  readonly token?: IssuedToken;
  /** The block to keep: the later of both when one is in force; `undefined` lifts it. */
  readonly blockedUntil: number | undefined;
  /** A quota reported later than the provider's, with its own time. */
  readonly quota?: QuotaSnapshot;
}

/**
 * Takes what a record knows that the provider does not: a later token, a
 * quota block still in force, a quota reported since. A later token without
 * a block lifts the provider's block: the quota has reset for whoever got it.
 */
export function recordNews(
  record: TokenRecord,
  known: Known,
  now: number,
): RecordNews {
  const blockInForce = record.blockedUntil !== undefined &&
    now < record.blockedUntil;
  const newer = isUsableToken(record.token, known.rejected) &&
    record.token.expiresAt > (known.expiresAt ?? -Infinity);
  let blockedUntil = known.blockedUntil;
  if (blockInForce) {
    blockedUntil = Math.max(blockedUntil ?? -Infinity, record.blockedUntil!);
  } else if (newer) blockedUntil = undefined;
  const quota = record.quota;
  const newerQuota = quota !== undefined && isNewerQuota(quota, known.quota);
  return {
    blockedUntil,
    ...(newer ? { token: record.token } : {}),
    ...(newerQuota ? { quota } : {}),
  };
}

/** Later, or as late (one clock tick) with other buckets: the same reading is not news. */
function isNewerQuota(
  quota: QuotaSnapshot,
  known: QuotaSnapshot | undefined,
): boolean {
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
