// Internal: what a provider believes of a record read from a store.

import type { TokenFailure, TokenRecord, TokenRenewal } from "./types.ts";
import { isIssuedToken, type QuotaSnapshot } from "../core/token_values.ts";

/** How far the clocks of a fleet's processes may differ, in ms. */
const FLEET_CLOCK_SLACK = 5 * 60_000;

/**
 * The parts of a stored record a provider may act on: each of the right
 * shape, a token whose expiry its own lifetime allows (not "valid until
 * 2200"), a renewal that has happened. Anything else was damaged, written
 * by another version or forged: it counts as absent, and the next write
 * replaces it. Blocks and cooldowns are clamped where they are taken.
 */
export function trustedRecord(
  value: unknown,
  now: number,
): TokenRecord | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { token, quota, blockedUntil, failure, renewal } = value as Record<
    string,
    unknown
  >;
  const latest = now + FLEET_CLOCK_SLACK;
  return {
    ...(isIssuedToken(token) &&
        token.expiresAt <= latest + token.expiresIn * 1000
      ? { token }
      : {}),
    ...(isQuotaSnapshot(quota) ? { quota } : {}),
    ...(isTime(blockedUntil) ? { blockedUntil } : {}),
    ...(isFailure(failure) ? { failure } : {}),
    ...(isRenewal(renewal) && renewal.at <= latest ? { renewal } : {}),
  };
}

function isTime(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

function isQuotaSnapshot(value: unknown): value is QuotaSnapshot {
  if (typeof value !== "object" || value === null) return false;
  const { buckets, observedAt } = value as Record<string, unknown>;
  return isTime(observedAt) && Array.isArray(buckets) &&
    buckets.every((bucket) =>
      typeof bucket === "object" && bucket !== null &&
      typeof bucket.bucket === "string" && isTime(bucket.limit) &&
      isTime(bucket.remaining) && isTime(bucket.resetAfter)
    );
}

const FAILURE_REASONS = new Set(["network", "timeout", "status", "malformed"]);

function isFailure(value: unknown): value is TokenFailure {
  if (typeof value !== "object" || value === null) return false;
  const { until, failures, reason, status, code } = value as Record<
    string,
    unknown
  >;
  return isTime(until) && isTime(failures) && failures >= 1 &&
    FAILURE_REASONS.has(reason as string) &&
    (status === undefined || isTime(status)) &&
    (code === undefined || typeof code === "string");
}

function isRenewal(value: unknown): value is TokenRenewal {
  if (typeof value !== "object" || value === null) return false;
  const { at, expiresAt, token } = value as Record<string, unknown>;
  return isTime(at) && isTime(expiresAt) && typeof token === "string";
}
