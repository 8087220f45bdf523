// The rate limiters' events: one of the three families of PartnerApiEvent.

/**
 * A request waited for a slot in the rate window before it went out.
 *
 * @example A request held for the rate window
 * ```ts
 * import { createClient, type RateWaitEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok } from "node:assert/strict";
 *
 * const waits: RateWaitEvent[] = [];
 * await using api = await startFakePartnerApi();
 * api.injectApiFaults({ kind: "delay", ms: 30 }); // the first answer takes 30 ms
 * const rateLimit = { requests: 1, interval: 1 }; // one at a time: a slot is free 1 ms after an answer
 * const client = createClient({ environment: api.environment, ...api.credentials, rateLimit,
 *   onEvent: (event) => event.type === "rate.wait" && waits.push(event) });
 * const responses = await Promise.all([client.fetch("organizations"), client.fetch("organizations")]);
 * await Promise.all(responses.map((response) => response.body?.cancel()));
 * equal(waits.length, 1); // the second request waited for the first's answer
 * ok(waits[0]!.delayMs > 0);
 * ```
 */
export interface RateWaitEvent {
  /** Tells events apart. */
  readonly type: "rate.wait";
  /** How long it waited, in ms. */
  readonly delayMs: number;
  /** The request's priority: `"low"` waited as background, behind live requests and the reserve. */
  readonly priority: "high" | "low" | "auto";
}

/**
 * A fleet rate limiter lost its store (failed, too slow, or the window gone): until it answers again, this process
 * paces alone at its last known share of the limit (half before the store ever answered), never the whole.
 *
 * @example The process paces alone while Redis is away
 * ```ts
 * import type { RateDegradedEvent } from "@partner-api/client";
 * import { createRedisRateLimiter } from "@partner-api/client/redis";
 * import { equal } from "node:assert/strict";
 *
 * const degraded: RateDegradedEvent[] = [];
 * await using limiter = createRedisRateLimiter({
 *   command: () => Promise.reject(new Error("NOAUTH Authentication required.")), requests: 10, interval: 1000,
 *   onEvent: (event) => event.type === "rate.degraded" && degraded.push(event) });
 * limiter.answered(await limiter.take());
 * // Redis never said how many share it: half the limit, never the whole; and why it failed, by its code.
 * const { store, requests, reason, code } = degraded[0]!;
 * equal(`${store} ${requests} ${reason} ${code}`, "redis 5 error NOAUTH");
 * ```
 */
export interface RateDegradedEvent {
  /** Tells events apart. */
  readonly type: "rate.degraded";
  /** The store that failed, as its limiter names it: `"redis"`, `"kv"`, or your own limiter's name. */
  readonly store: string;
  /** This process's share: requests it sends alone in any window. */
  readonly requests: number;
  /** The window's length, in ms. */
  readonly interval: number;
  /** Epoch ms (of the `now` clock) when the store is asked again. */
  readonly retryAt: number;
  /**
   * Why: `"timeout"` (no answer within its time: a store down, paused or away, as Redis clients that queue commands
   * while they reconnect show an outage), `"error"` (it failed: see `code`), `"answer"` (it answered as no script of
   * the limiter would), `"lost"` (the window came back empty while it could hold this process's sends, or was lost again and
   * again: a restart without persistence, an eviction, `FLUSHALL`). Said once per fall, and again once for each setting to mend
   * that a code names within it (credentials, a replica, persistence, memory).
   */
  readonly reason: "timeout" | "error" | "answer" | "lost";
  /**
   * With `"error"`, a known code where the error has one: the first word of a Redis error reply (`NOAUTH`,
   * `WRONGPASS`, `NOPERM`: a setting to mend, not an outage to wait out; `OOM`, `READONLY`, `LOADING`) or a system's
   * network code a client passes on (`ECONNREFUSED`). Never the error's own words, nor any other word.
   */
  readonly code?: string;
}

/**
 * A fleet rate limiter takes from its store again after `rate.degraded`, having written back what it sent meanwhile.
 *
 * @example A line per change of pace
 * ```ts
 * import { createClient, type PartnerApiEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const lines: string[] = [];
 * const onEvent = (event: PartnerApiEvent) => {
 *   if (event.type === "rate.degraded") lines.push(`${event.store}: alone, ${event.requests} per window`);
 *   if (event.type === "rate.restored") lines.push(`${event.store}: the fleet's window again`);
 * };
 * await using api = await startFakePartnerApi({ items: { organizations: 2 } });
 * const client = createClient({ environment: api.environment, ...api.credentials, onEvent });
 * await Array.fromAsync(client.list("organizations"));
 * deepStrictEqual(lines, []); // a client's own limiter never changes pace
 * ```
 */
export interface RateRestoredEvent {
  /** Tells events apart. */
  readonly type: "rate.restored";
  /** The store that answers again, named as in {@linkcode RateDegradedEvent.store}. */
  readonly store: string;
}
