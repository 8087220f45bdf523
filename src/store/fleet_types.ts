// Types ./kv and ./redis name, homed elsewhere: each entry passes `deno doc --lint` alone.

export type * from "../core/events.ts";
export type { TokenFailureReason } from "../core/error_types.ts";
export type { QuotaBucket } from "../core/quota_types.ts";
export type { RateLimit, RateLimiter } from "../core/rate_limiter.ts";
export type { IssuedToken, QuotaSnapshot } from "../core/token_values.ts";
export type * from "./types.ts";
export type * from "./fleet_options.ts";
