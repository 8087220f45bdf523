// The store contract: the record a token provider keeps and the store it keeps it in.

import type { IssuedToken, QuotaSnapshot } from "../core/token_values.ts";
import type { TokenFailureReason } from "../core/errors.ts";

/**
 * What a {@linkcode TokenStore} keeps for one client: a frozen object.
 *
 * @example A record after a 429
 * ```ts
 * import type { TokenRecord, TokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { ok, rejects } from "node:assert/strict";
 *
 * const records = new Map<string, TokenRecord>();
 * const store: TokenStore = { get: (k) => Promise.resolve(records.get(k)), set: (k, r) => Promise.resolve(void records.set(k, r)) };
 * await using api = await startFakePartnerApi({ quota: { perHour: 1 } });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials, store });
 * await provider.invalidate((await provider.getToken()).accessToken); // the hour's only token
 * await rejects(provider.getToken(), { name: "QuotaExceededError" });
 * const [record] = records.values();
 * ok(record!.blockedUntil! > Date.now()); // every provider on the store waits for it
 * ```
 */
export interface TokenRecord {
  /** The current token, if any. */
  readonly token?: IssuedToken;
  /** The last quota seen, stamped when the token endpoint reported it. */
  readonly quota?: QuotaSnapshot;
  /** Epoch ms before which no token request may be sent (after a 429). */
  readonly blockedUntil?: number;
  /** The last failed token request (but for the quota): the fleet sends nothing before `until`. */
  readonly failure?: TokenFailure;
  /** The fleet's last 401 renewal: at most one an hour, for the whole fleet. */
  readonly renewal?: TokenRenewal;
}

/**
 * A failed token request as a {@linkcode TokenRecord} keeps it: every process of a fleet keeps its cooldown.
 *
 * @example A cooldown after a malformed answer
 * ```ts
 * import type { TokenRecord, TokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok, rejects } from "node:assert/strict";
 *
 * const records = new Map<string, TokenRecord>();
 * const store: TokenStore = { get: (k) => Promise.resolve(records.get(k)), set: (k, r) => Promise.resolve(void records.set(k, r)) };
 * await using api = await startFakePartnerApi({ faults: [{ kind: "body", body: "{}" }] });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials, store, retry: false });
 * await rejects(provider.getToken(), { reason: "malformed" });
 * const failure = [...records.values()][0]?.failure;
 * equal(`${failure?.reason} ${failure?.failures}`, "malformed 1");
 * ok(failure!.until > Date.now()); // no provider on the store asks before
 * ```
 */
export interface TokenFailure {
  /** Epoch ms before which no token request may be sent. */
  readonly until: number;
  /** Failures in a row: the cooldown doubles with each (10 s up to 15 min). */
  readonly failures: number;
  /** Why the last request failed. */
  readonly reason: Exclude<TokenFailureReason, "quota">;
  /** The token endpoint's status, when it answered. */
  readonly status?: number;
  /** The OAuth `error` code it answered, e.g. `invalid_client`. */
  readonly code?: string;
  /**
   * After a 400 or 415: how the refused request was sent (`bodyFormat` and `clientAuthentication`, e.g. `"json body"`).
   * Such a refusal is about the way it was asked, so a provider that sends another way is not held by its cooldown;
   * absent once two ways were refused in a row (the cooldown then holds every way).
   */
  readonly sentAs?: string;
}

/**
 * A 401 renewal as a {@linkcode TokenRecord} keeps it: the fleet renews at most once an hour.
 *
 * @example The ledger after a renewal
 * ```ts
 * import type { TokenRecord, TokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, notEqual } from "node:assert/strict";
 *
 * const records = new Map<string, TokenRecord>();
 * const store: TokenStore = { get: (k) => Promise.resolve(records.get(k)), set: (k, r) => Promise.resolve(void records.set(k, r)) };
 * await using api = await startFakePartnerApi();
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials, store });
 * const rejected = await provider.getToken();
 * equal(await provider.reportUnauthorized?.(rejected.accessToken), true); // the API said 401: renew
 * const renewal = [...records.values()][0]?.renewal;
 * equal(renewal?.expiresAt, rejected.expiresAt);
 * notEqual(renewal?.token, rejected.accessToken); // a fingerprint, not the token
 * ```
 */
export interface TokenRenewal {
  /** When the fleet renewed, in epoch ms. */
  readonly at: number;
  /** When the token it renewed expired (epoch ms): it tells that token's age. */
  readonly expiresAt: number;
  /** A fingerprint of the token it renewed (not the token). */
  readonly token: string;
}

/**
 * Where providers (or processes, with a shared store) keep one token. Keys hold a digest of the secret,
 * never the secret: another secret never sees this one's token. Records are plain data (a token read
 * back as `[redacted]` counts as none); a failing store counts as empty and loses no paid-for token, and so does a
 * `get`, `set` or `update` that does not answer within 5 s, an `update` that resolves without calling its change, and
 * a `coordinate` that resolves with a record neither `settled` accepts nor `request()` brought.
 *
 * @example A store on a Map, as one on Redis would look
 * ```ts
 * import type { TokenRecord, TokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const records = new Map<string, TokenRecord>();
 * const store: TokenStore = {
 *   get: (key) => Promise.resolve(records.get(key)),
 *   set: (key, record) => Promise.resolve(void records.set(key, record)),
 * };
 * await using api = await startFakePartnerApi();
 * const token = await createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * const [key] = records.keys();
 * equal(key!.includes(api.credentials.clientSecret), false); // a digest of the secret, never the secret
 * equal(records.get(key!)?.token?.accessToken, token.accessToken);
 * ```
 */
export interface TokenStore {
  /** Reads the record under `key`. */
  get(key: string): Promise<TokenRecord | undefined>;
  /** Replaces the record under `key`. */
  set(key: string, record: TokenRecord): Promise<void>;
  /**
   * Optional: replaces the record under `key` with `change(record)` atomically (`change` runs again
   * after another's write); resolves with the stored record. `undefined` writes nothing.
   */
  update?(
    key: string,
    change: (record: TokenRecord | undefined) => TokenRecord | undefined,
  ): Promise<TokenRecord | undefined>;
  /**
   * Optional: one token request for all processes sharing the store: a stored record `settled`
   * accepts, or else `request()`'s, stored before any other process may look.
   */
  coordinate?(key: string, options: CoordinateOptions): Promise<TokenRecord>;
}

/**
 * What {@linkcode TokenStore.coordinate} is given.
 *
 * @example Coordinating through a Map
 * ```ts
 * import type { CoordinateOptions, TokenRecord, TokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const records = new Map<string, TokenRecord>();
 * const store: TokenStore = {
 *   get: (k) => Promise.resolve(records.get(k)), set: (k, r) => Promise.resolve(void records.set(k, r)),
 *   async coordinate(key: string, { settled, request }: CoordinateOptions): Promise<TokenRecord> {
 *     const stored = records.get(key);
 *     if (stored !== undefined && settled(stored)) return stored; // another's token will do
 *     const record = await request(); // a real store holds a lease meanwhile
 *     records.set(key, record);
 *     return record;
 *   },
 * };
 * await using api = await startFakePartnerApi();
 * await createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * await createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * equal(api.tokenRequests, 1);
 * ```
 */
export interface CoordinateOptions {
  /** Whether a record answers the need: a token fresh enough, or a quota block in force. */
  settled(record: TokenRecord): boolean;
  /** Sends one token request (with retries): the token's record, or after a 429 the quota block's. */
  request(): Promise<TokenRecord>;
  /** Aborts when the flight is given up on (callers that leave do not abort it). */
  signal: AbortSignal;
  /** The longest one token request may take with retries, in ms: a waiter waits at least this long. */
  requestBudget: number;
}
