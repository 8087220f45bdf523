// The contract the client paces by, which the fleet limiters keep too.

/**
 * A rate limit: at most `requests` in any sliding window of `interval` ms.
 *
 * @example The service's published limit
 * ```ts
 * import { createRateLimiter, type RateLimit } from "@partner-api/client/client";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const published: RateLimit = { requests: 900, interval: 300_000 };
 * deepStrictEqual(createRateLimiter(published).limit, published);
 * ```
 */
export interface RateLimit {
  /** Requests allowed in any window. */
  readonly requests: number;
  /** The window's length, in ms. */
  readonly interval: number;
}

/**
 * Paces requests; one limiter can be shared by several clients of a process, which then share the limit.
 *
 * @example Two clients sharing one limit
 * ```ts
 * import { createClient, createRateLimiter } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const rateLimit = createRateLimiter({ requests: 2, interval: 60_000 });
 * const a = createClient({ environment: api.environment, ...api.credentials, rateLimit });
 * const b = createClient({ environment: api.environment, ...api.credentials, rateLimit });
 * await (await a.fetch("organizations")).body?.cancel();
 * await (await b.fetch("organizations")).body?.cancel();
 * const third = new AbortController();
 * const waiting = rateLimit.take(third.signal); // the shared window is full: it waits
 * third.abort();
 * await rejects(Promise.resolve(waiting), { name: "AbortError" });
 * ```
 */
export interface RateLimiter {
  /** The limit it keeps. */
  readonly limit: RateLimit;
  /**
   * Takes a slot for one request: its ticket now, else a promise of it in turn (live callers before `"low"` ones, by
   * `RequestInit.priority`, which a limiter of your own may ignore), rejected with the signal's reason if it aborts
   * first. Hand the ticket to {@linkcode RateLimiter.answered}.
   */
  take(
    signal?: AbortSignal,
    priority?: "high" | "low" | "auto",
  ): number | Promise<number>;
  /**
   * Tells the limiter the request of `ticket` was answered (or failed, or was never sent): the service may count a
   * request until its answer, so a slot counts from it, and one never answered stays taken.
   */
  answered(ticket: number): void;
  /**
   * Tells the limiter of a 429: others on the same address count too, so the
   * window is taken as full (for one slot's share of the interval at least).
   */
  refused(): void;
  /**
   * How long a request never answered counts as taken at most, in ms, where a limiter lets it go (a fleet's, so that a
   * process that died does not hold its slots); a client refuses a `timeout` above it. Absent: until answered.
   */
  readonly hold?: number;
}
