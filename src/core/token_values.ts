// The token and quota values the provider hands out and the stores keep: here,
// so that the stores need nothing of the provider. ./token exports the types.

import type { QuotaBucket } from "./quota_types.ts";
import { REDACTED, shownAs } from "./_redact.ts";
import { fieldsOf } from "./_check.ts";

/**
 * A token as issued, frozen. Inspection and `JSON.stringify` show `accessToken` as `[redacted]`; a spread,
 * `Object.entries` or `structuredClone` leaves it out (not enumerable); `token.accessToken` still gives it.
 *
 * @example Sending a token, and logging it safely
 * ```ts
 * import { type IssuedToken, requestToken } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const token: IssuedToken = await requestToken({ ...api.environment, ...api.credentials });
 * ok(api.isValidToken(token.accessToken)); // sent as `${token.tokenType} ${token.accessToken}`
 * equal(JSON.parse(JSON.stringify(token)).accessToken, "[redacted]");
 * ```
 */
export interface IssuedToken {
  /** The bearer token for the `Authorization` header. */
  readonly accessToken: string;
  /** Always `"Bearer"`. */
  readonly tokenType: "Bearer";
  /** Lifetime in seconds, as the server said. */
  readonly expiresIn: number;
  /** Epoch ms of expiry, counted from when the request was sent. */
  readonly expiresAt: number;
  /** The quota the answer reported; `[]` when absent or unreadable. */
  readonly quota: readonly QuotaBucket[];
}

/**
 * The quota as last seen, and when.
 *
 * @example How old a quota reading is
 * ```ts
 * import { createTokenProvider, type QuotaSnapshot } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * let time = Date.now();
 * await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials, now: () => time });
 * await provider.getToken();
 * time += 5000;
 * const seen: QuotaSnapshot | undefined = provider.quota;
 * equal(time - seen!.observedAt, 5000);
 * equal(seen!.buckets[0]?.remaining, 9);
 * ```
 */
export interface QuotaSnapshot {
  /** The buckets, in header order. */
  readonly buckets: readonly QuotaBucket[];
  /** Epoch ms (the requesting provider's clock) when the token endpoint reported them. */
  readonly observedAt: number;
}

/** Longest lifetime accepted, in seconds: a year. */
export const MAX_EXPIRES_IN = 31_536_000;

/** Whether `value` has the shape of a token worth using (e.g. read from a store). */
export function isIssuedToken(value: unknown): value is IssuedToken {
  const { accessToken, expiresIn, expiresAt, quota } = fieldsOf(value) ?? {};
  return isAccessToken(accessToken) && typeof expiresIn === "number" &&
    expiresIn >= 1 && expiresIn <= MAX_EXPIRES_IN && isTime(expiresAt) &&
    Array.isArray(quota);
}

/** A finite number: a time as a record or a stored window may hold it. */
export function isTime(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** Visible ASCII only (what an `Authorization` header takes), and not a serialized token's placeholder. */
export function isAccessToken(value: unknown): value is string {
  return typeof value === "string" && value !== REDACTED &&
    /^[\x21-\x7e]+$/.test(value);
}

/** A frozen copy of `fields` that never shows its access token (see {@linkcode IssuedToken}). */
export function issuedToken(fields: IssuedToken): IssuedToken {
  // One built here already is frozen and hidden as it should be: reuse it.
  if (built.has(fields)) return fields;
  const token = {
    tokenType: "Bearer" as const,
    expiresIn: fields.expiresIn,
    expiresAt: fields.expiresAt,
    quota: freezeBuckets(fields.quota),
  } as IssuedToken;
  Object.defineProperty(token, "accessToken", { value: fields.accessToken });
  const view = () => ({ ...storableToken(token), accessToken: REDACTED });
  shownAs(token, "IssuedToken", view);
  built.add(token);
  return Object.freeze(token);
}

/** The tokens {@linkcode issuedToken} made, so that none is built twice. */
const built = new WeakSet<IssuedToken>();

/** A plain copy of `token` for a store, which may serialize it with `JSON.stringify`. */
export function storableToken(token: IssuedToken): IssuedToken {
  const { accessToken, tokenType, expiresIn, expiresAt, quota } = token;
  const buckets = quota.map((bucket) => ({ ...bucket }));
  return { accessToken, tokenType, expiresIn, expiresAt, quota: buckets };
}

/** A frozen snapshot of `buckets`, stamped `observedAt`. */
export function quotaSnapshot(
  buckets: readonly QuotaBucket[],
  observedAt: number,
): QuotaSnapshot {
  return Object.freeze({ buckets: freezeBuckets(buckets), observedAt });
}

function freezeBuckets(buckets: readonly QuotaBucket[]) {
  return Object.freeze(buckets.map((bucket) => Object.freeze({ ...bucket })));
}
