/**
 * What the fleet stores (`./kv`, `./redis`) share: the lease, the waiting,
 * the encryption at rest and the clock.
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
   * How long a lease lasts without renewal, in ms: a holder that dies
   * blocks the others this long at most.
   *
   * @default {10000}
   */
  leaseDuration?: number;
  /**
   * How long a process waits for another's token, in ms, before it sends a
   * request of its own; never less than the holder's request may take with
   * its retries (150 s with the provider's defaults).
   *
   * @default {45000}
   */
  maxWait?: number;
  /**
   * How often, at most, a waiting process looks for the token, in ms (after
   * 1 ms at first, then twice as long each time).
   *
   * @default {50}
   */
  pollInterval?: number;
  /**
   * An AES-GCM `CryptoKey` to seal records at rest with; every process of
   * the fleet needs the same one (a record it cannot open counts as
   * absent). Typed through `crypto.subtle`, not the DOM's `CryptoKey`, for
   * projects with @types/node alone.
   *
   * @default {a key derived (HKDF) from the client secret}
   */
  encryptionKey?: Awaited<ReturnType<typeof crypto.subtle.importKey>>;
  /**
   * Names this process in the leases it takes (e.g. host and pid).
   *
   * @default {a random UUID}
   */
  holderId?: string;
  /**
   * The clock for lease and record deadlines, in epoch ms: the providers'.
   *
   * @default {Date.now}
   */
  now?: () => number;
}
