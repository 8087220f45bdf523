// Internal: the token as handed out, and the quota as last seen. Both are
// frozen plain objects; the token hides its secret part from inspection and
// from JSON.

import type { QuotaBucket } from "../core/quota.ts";

/**
 * A token as issued: a frozen object. When inspected (`console.log`,
 * `Deno.inspect`, `node:util` `inspect`) or serialized with `JSON.stringify`
 * (as structured loggers do), it shows `accessToken` as `[redacted]`; a
 * spread, `Object.entries` or `structuredClone` leaves it out (it is not
 * enumerable); reading `token.accessToken` still gives the token.
 *
 * @example Sending a token
 * ```ts
 * import type { IssuedToken } from "@partner-api/client/token";
 *
 * function authorization(token: IssuedToken): string {
 *   return `${token.tokenType} ${token.accessToken}`;
 * }
 * const token: IssuedToken = { accessToken: "abc", tokenType: "Bearer", expiresIn: 60, expiresAt: 0, quota: [] };
 * if (authorization(token) !== "Bearer abc") throw new Error();
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
 * import type { QuotaSnapshot } from "@partner-api/client/token";
 *
 * const seen: QuotaSnapshot = { buckets: [], observedAt: Date.now() - 5000 };
 * if (Date.now() - seen.observedAt < 5000) throw new Error();
 * ```
 */
export interface QuotaSnapshot {
  /** The buckets, in header order. */
  readonly buckets: readonly QuotaBucket[];
  /**
   * Epoch ms (from the clock of the provider that made the request) when the
   * token endpoint reported them; kept as is when read back from a store.
   */
  readonly observedAt: number;
}

const REDACTED = "[redacted]";
const INSPECT_DENO = Symbol.for("Deno.customInspect");
const INSPECT_NODE = Symbol.for("nodejs.util.inspect.custom");

type Inspect = (value: unknown, options?: unknown) => string;

/** Longest lifetime accepted, in seconds: a year. */
export const MAX_EXPIRES_IN = 31_536_000;

function redactedView(token: IssuedToken): Record<string, unknown> {
  const { tokenType, expiresIn, expiresAt, quota } = token;
  return { accessToken: REDACTED, tokenType, expiresIn, expiresAt, quota };
}

/**
 * A frozen copy of `fields` that never shows its access token: the token is
 * a non-enumerable property, so a spread, `Object.entries`,
 * `structuredClone` and `JSON.stringify` leave it out, while
 * `token.accessToken` still reads it.
 */
export function issuedToken(fields: IssuedToken): IssuedToken {
  const token = {
    tokenType: "Bearer" as const,
    expiresIn: fields.expiresIn,
    expiresAt: fields.expiresAt,
    quota: freezeBuckets(fields.quota),
  } as IssuedToken;
  Object.defineProperties(token, {
    accessToken: { value: fields.accessToken },
    toJSON: { value: () => redactedView(token) },
    [INSPECT_DENO]: {
      value: (inspect: Inspect, options: unknown) =>
        `IssuedToken ${inspect(redactedView(token), options)}`,
    },
    [INSPECT_NODE]: {
      value: (_depth: number, options: unknown, inspect: Inspect) =>
        `IssuedToken ${inspect(redactedView(token), options)}`,
    },
  });
  return Object.freeze(token);
}

/**
 * Whether `value` has the shape of a token worth using (e.g. read from a
 * store another version of this module wrote). The access token must be
 * visible ASCII: anything else cannot go in an `Authorization` header.
 */
export function isIssuedToken(value: unknown): value is IssuedToken {
  if (typeof value !== "object" || value === null) return false;
  const token = value as Record<string, unknown>;
  return isAccessToken(token.accessToken) &&
    typeof token.expiresIn === "number" && token.expiresIn >= 1 &&
    token.expiresIn <= MAX_EXPIRES_IN &&
    typeof token.expiresAt === "number" && Number.isFinite(token.expiresAt) &&
    Array.isArray(token.quota);
}

/**
 * Visible ASCII only (RFC 6750 allows less; RFC 6749 no more), and not the
 * placeholder a serialized token shows: a store that kept one of those holds
 * no token.
 */
export function isAccessToken(value: unknown): value is string {
  return typeof value === "string" && value !== REDACTED &&
    /^[\x21-\x7e]+$/.test(value);
}

/**
 * A plain copy of `token` for a store: its data properties only, so that a
 * store may serialize it with `JSON.stringify` (which shows a handed-out
 * token as `[redacted]`).
 */
export function storableToken(token: IssuedToken): IssuedToken {
  return {
    accessToken: token.accessToken,
    tokenType: token.tokenType,
    expiresIn: token.expiresIn,
    expiresAt: token.expiresAt,
    quota: token.quota.map((bucket) => ({ ...bucket })),
  };
}

/** A frozen snapshot of `buckets`, stamped `observedAt`. */
export function quotaSnapshot(
  buckets: readonly QuotaBucket[],
  observedAt: number,
): QuotaSnapshot {
  return Object.freeze({ buckets: freezeBuckets(buckets), observedAt });
}

function freezeBuckets(
  buckets: readonly QuotaBucket[],
): readonly QuotaBucket[] {
  return Object.freeze(buckets.map((bucket) => Object.freeze({ ...bucket })));
}
