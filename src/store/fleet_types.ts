// The types the fleet entries (./kv, ./redis) name in their
// signatures, each defined and documented in its own entry: both entries
// re-export them from here, so that each reads whole on its own (JSR,
// deno doc --lint).

export type * from "../core/events.ts";
export type { QuotaBucket } from "../core/quota.ts";
export type { TokenFailureReason } from "../core/errors.ts";
export type { IssuedToken, QuotaSnapshot } from "../core/token_values.ts";
export type {
  CoordinateOptions,
  FleetStoreOptions,
  TokenFailure,
  TokenRecord,
  TokenRenewal,
  TokenStore,
} from "./mod.ts";
export type { RateLimit, RateLimiter } from "../core/rate_limiter.ts";
