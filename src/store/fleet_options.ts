import type { EventListener } from "../core/events.ts";

/**
 * What the fleet stores (`./kv`, `./redis`) share: the lease, the waiting, the sealing and the clock.
 *
 * @example Settings for a fleet of short-lived functions
 * ```ts
 * import type { FleetStoreOptions } from "@partner-api/client/store";
 * import { createKvTokenStore } from "@partner-api/client/kv";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { ok, throws } from "node:assert/strict";
 *
 * const options: FleetStoreOptions = { leaseDuration: 5000, maxWait: 20_000 };
 * using kv = await Deno.openKv(":memory:");
 * await using api = await startFakePartnerApi();
 * const store = createKvTokenStore(kv, options);
 * const token = await createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * ok(api.isValidToken(token.accessToken));
 * throws(() => createKvTokenStore(kv, { leaseDuration: 0 }), { name: "RangeError", option: "leaseDuration" });
 * ```
 */
export interface FleetStoreOptions {
  /**
   * How long a lease lasts without renewal, in ms: the longest a dead holder blocks the others.
   * @default {10000}
   */
  leaseDuration?: number;
  /**
   * How long a process waits for another's token before requesting its own, in ms; never less than
   * the holder's request may take with retries (150 s with the provider's defaults).
   * @default {45000}
   */
  maxWait?: number;
  /**
   * How often, at most, a waiting process looks for the token, in ms (first after 1 ms, then doubling).
   * @default {50}
   */
  pollInterval?: number;
  /**
   * An AES-GCM `CryptoKey` to seal records at rest with, the same in every process (a record it
   * cannot open counts as absent). Typed through `crypto.subtle` for projects with @types/node alone.
   * @default {a key derived (HKDF) from the client secret}
   */
  encryptionKey?: Awaited<ReturnType<typeof crypto.subtle.importKey>>;
  /**
   * Names this process in the leases it takes (e.g. host and pid).
   * @default {a random UUID}
   */
  holderId?: string;
  /**
   * The clock for lease and record deadlines, in epoch ms: the providers'.
   * @default {Date.now}
   */
  now?: () => number;
}

/**
 * What the fleet rate limiters (`./kv`, `./redis`) share: the limit, the reserve and the events.
 *
 * @example One limit, checked alike by either limiter
 * ```ts
 * import { createKvRateLimiter, type FleetRateLimiterOptions } from "@partner-api/client/kv";
 * import { createRedisRateLimiter } from "@partner-api/client/redis";
 * import { throws } from "node:assert/strict";
 *
 * const limit: FleetRateLimiterOptions = { requests: 90, interval: 3000, reserve: 90 }; // at most requests - 1
 * using kv = await Deno.openKv(":memory:");
 * throws(() => createKvRateLimiter(kv, limit), { name: "RangeError", option: "reserve" });
 * throws(() => createRedisRateLimiter({ ...limit, command: () => Promise.resolve(null) }), { name: "RangeError", option: "reserve" });
 * ```
 */
export interface FleetRateLimiterOptions {
  /**
   * Requests the whole fleet may send in any window; every process sharing the prefix gives the same.
   * @default {900}
   */
  requests?: number;
  /**
   * The window's length, in ms.
   * @default {300000}
   */
  interval?: number;
  /** Receives `rate.degraded` when the store (KV, Redis) fails or lost the window, then `rate.restored`. */
  onEvent?: EventListener;
  /**
   * Slots of any window a background request (`priority: "low"`) leaves free for live ones, across
   * the fleet; from 0 to `requests - 1`, the same in every process. See docs/rate-limit.md.
   * @default {max(1, ⌈requests / 10⌉), at most requests - 1}
   */
  reserve?: number;
}
