// The types the fleet entries (./kv, ./redis) name in their signatures,
// each homed in another entry: both entries re-export them from here, so
// that each passes `deno doc --lint` alone, as JSR users meet it.

export type * from "../core/events.ts";
export type { TokenFailureReason } from "../core/error_types.ts";
export type { QuotaBucket } from "../core/quota_types.ts";
export type { RateLimit, RateLimiter } from "../core/rate_limiter.ts";
export type { IssuedToken, QuotaSnapshot } from "../core/token_values.ts";
export type * from "./types.ts";
export type { FleetStoreOptions } from "./fleet_options.ts";
