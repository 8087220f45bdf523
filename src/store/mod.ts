/**
 * Where token providers keep their token: the store contract, for a store
 * of your own, and a store in this process's memory. Shared stores for
 * fleets are `./kv` (Deno KV).
 *
 * @example Two providers sharing one token
 * ```ts
 * import { createMemoryTokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi();
 * const store = createMemoryTokenStore();
 * await createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * await createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * if (api.tokenRequests !== 1) throw new Error("not shared");
 * ```
 *
 * @module
 */

import type { IssuedToken, QuotaSnapshot } from "../core/_token_values.ts";

/**
 * What a {@linkcode TokenStore} keeps for one client: a frozen object.
 *
 * @example A record after a 429
 * ```ts
 * import type { TokenRecord } from "@partner-api/client/store";
 *
 * const blocked: TokenRecord = { blockedUntil: Date.now() + 60_000 };
 * if (blocked.token !== undefined) throw new Error();
 * ```
 */
export interface TokenRecord {
  /** The current token, if any. */
  readonly token?: IssuedToken;
  /** The last quota seen, stamped when the token endpoint reported it. */
  readonly quota?: QuotaSnapshot;
  /** Epoch ms before which no token request may be sent (after a 429). */
  readonly blockedUntil?: number;
}

/**
 * Where a provider keeps its token, so that several providers (or processes,
 * with a shared store) use one token. Keys hold the token endpoint, audience,
 * client id and a digest of the secret, never the secret itself: a provider
 * with another secret never sees a token this one paid for.
 *
 * A provider reads the store at most once per token flight (a cold start, a
 * refresh, a retry after a failed one), never on calls its cache answers.
 * The records a provider hands a store hold plain data, so a store may
 * serialize them with `JSON.stringify`; a token read back as `[redacted]`
 * (a token serialized as it was handed out) counts as no token.
 *
 * A store that fails is treated as empty: reads that throw count as misses,
 * writes that throw are ignored, so a paid-for token is never lost to it and
 * its failure never turns into another token request.
 *
 * @example A store on a Map, as one on Redis would look
 * ```ts
 * import type { TokenRecord, TokenStore } from "@partner-api/client/store";
 *
 * const records = new Map<string, TokenRecord>();
 * const store: TokenStore = {
 *   get: (key) => Promise.resolve(records.get(key)),
 *   set: (key, record) => Promise.resolve(void records.set(key, record)),
 * };
 * await store.set("k", { blockedUntil: 1 });
 * if ((await store.get("k"))?.blockedUntil !== 1) throw new Error();
 * ```
 */
export interface TokenStore {
  /** Reads the record under `key`. */
  get(key: string): Promise<TokenRecord | undefined>;
  /** Replaces the record under `key`. */
  set(key: string, record: TokenRecord): Promise<void>;
  /**
   * Optional: drops the stored token if it is still `accessToken`, in one
   * atomic step, so that a fresh token another process stored meanwhile
   * stays. Called by {@linkcode TokenProvider.invalidate}. Without it, the
   * provider only forgets the token itself and ignores it when it reads it
   * back.
   */
  discard?(key: string, accessToken: string): Promise<void>;
  /**
   * Optional: makes the processes sharing the store send one token request
   * between them. The provider calls it when it needs a new token; it returns
   * a stored record that `settled` accepts (another process's token, or its
   * quota block), or else the record of `request()`, which it stores before
   * letting any other process look. Without it, the provider reads the store,
   * requests when the record does not do, and stores the result with `set`.
   */
  coordinate?(key: string, options: CoordinateOptions): Promise<TokenRecord>;
}

/**
 * What {@linkcode TokenStore.coordinate} is given.
 *
 * @example The simplest coordination: always request
 * ```ts
 * import type { CoordinateOptions, TokenRecord } from "@partner-api/client/store";
 *
 * async function coordinate(_key: string, { settled, request }: CoordinateOptions): Promise<TokenRecord> {
 *   const stored: TokenRecord | undefined = undefined; // read it from the shared store
 *   return stored !== undefined && settled(stored) ? stored : await request();
 * }
 * const record = await coordinate("k", {
 *   settled: () => false,
 *   request: () => Promise.resolve({ blockedUntil: 1 }),
 *   signal: new AbortController().signal,
 *   requestBudget: 110_000,
 * });
 * if (record.blockedUntil !== 1) throw new Error();
 * ```
 */
export interface CoordinateOptions {
  /** Whether a record answers the need: a token fresh enough, or a quota block in force. */
  settled(record: TokenRecord): boolean;
  /**
   * Sends one token request (with the provider's retries). Resolves with the
   * token's record, or after a 429 with a record of the quota block.
   */
  request(): Promise<TokenRecord>;
  /** Aborts when nobody waits for the token any more. */
  signal: AbortSignal;
  /**
   * The longest one token request may take with its retries and backoff, in
   * ms. A process waiting for another's request waits at least this long
   * before sending its own: a slow token endpoint must not make every
   * waiting process send a request.
   */
  requestBudget: number;
}

/**
 * Creates a token store that lives in this process's memory. A provider
 * without a store keeps its token to itself; pass one store to several
 * providers to share their token.
 *
 * @returns An empty store.
 *
 * @example Two providers sharing one token
 * ```ts
 * import { createMemoryTokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi();
 * const store = createMemoryTokenStore();
 * const options = { ...api.environment, ...api.credentials, store };
 * await createTokenProvider(options).getToken();
 * await createTokenProvider(options).getToken();
 * if (api.tokenRequests !== 1) throw new Error("not shared");
 * ```
 */
export function createMemoryTokenStore(): TokenStore {
  const records = new Map<string, TokenRecord>();
  return {
    get: (key) => Promise.resolve(records.get(key)),
    set: (key, record) => {
      records.set(key, Object.freeze({ ...record }));
      return Promise.resolve();
    },
    discard: (key, accessToken) => {
      const { token, ...rest } = records.get(key) ?? {};
      if (token?.accessToken === accessToken) records.set(key, rest);
      return Promise.resolve();
    },
  };
}

/**
 * What the fleet stores (`./kv`, `./redis`) share: the lease, the waiting,
 * the encryption at rest and the clock.
 *
 * @example Settings for a fleet of short-lived functions
 * ```ts
 * import type { FleetStoreOptions } from "@partner-api/client/store";
 *
 * const options: FleetStoreOptions = { leaseDuration: 5000, maxWait: 20_000 };
 * if (options.leaseDuration !== 5000) throw new Error();
 * ```
 */
export interface FleetStoreOptions {
  /**
   * How long a lease lasts without renewal, in ms. The holder renews it while
   * its request runs; a holder that dies blocks the others this long at most.
   *
   * @default {10000}
   */
  leaseDuration?: number;
  /**
   * How long a process waits for another's token, in ms, before it sends a
   * request of its own (a token endpoint that takes this long is stuck). It
   * always waits at least as long as the holder's request may take with its
   * retries and backoff (110 s with the provider's defaults), so a slow
   * token endpoint does not make every waiting process send a request.
   *
   * @default {45000}
   */
  maxWait?: number;
  /**
   * How often, at most, a waiting process looks for the token, in ms. It
   * looks again after 1 ms at first, then twice as long each time, up to
   * this.
   *
   * @default {50}
   */
  pollInterval?: number;
  /**
   * An AES-GCM key (`crypto.subtle.generateKey({ name: "AES-GCM", length:
   * 256 }, false, ["encrypt", "decrypt"])`) to encrypt records at rest.
   * Every process of the fleet needs the same key; a record it cannot
   * decrypt counts as absent.
   */
  encryptionKey?: CryptoKey;
  /**
   * Names this process in the leases it takes, e.g. a host name and pid, so
   * that an operator can see who holds one.
   *
   * @default {a random UUID}
   */
  holderId?: string;
  /**
   * The clock for lease and record deadlines, in epoch ms. Give it the same
   * clock as the providers that use the store.
   *
   * @default {Date.now}
   */
  now?: () => number;
}
