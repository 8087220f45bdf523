// The token and quota values the token provider hands out and the stores
// keep: here, beside the quota types, so that the stores need nothing of the
// token provider (the provider needs the stores).

import type { QuotaBucket } from "./quota.ts";

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
