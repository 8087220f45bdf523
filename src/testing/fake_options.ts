// What a fake is told: its options, credentials and scripts (faults, rate limit, churn, list sizes).

/**
 * Options of `createFakePartnerService` (and of `startFakePartnerApi`, which serves one).
 *
 * @example A fake with a tight quota and slow pages
 * ```ts
 * import { type FakePartnerServiceOptions, startFakePartnerApi } from "@partner-api/client/testing";
 * import { requestToken } from "@partner-api/client/token";
 * import { equal } from "node:assert/strict";
 *
 * const options: FakePartnerServiceOptions = { quota: { perHour: 3 }, latency: 5, tokenLifetime: 60_000 };
 * await using api = await startFakePartnerApi(options);
 * const token = await requestToken({ ...api.environment, ...api.credentials });
 * equal(token.quota[0]?.remaining, 2);
 * equal(token.expiresIn, 60);
 * ```
 */
export interface FakePartnerServiceOptions {
  /**
   * Lifetime of issued tokens, in ms like every duration of the fake (`expires_in`: whole seconds, at least 1, and a
   * token is valid that long at least): whole, at most 2,147,483,647 (24.8 days) like every time option.
   * @default {86400000}
   */
  tokenLifetime?: number;
  /**
   * Token requests allowed per UTC hour and per UTC day.
   * @default {{ perHour: 1000, perDay: 10000 }}
   */
  quota?: { perHour?: number; perDay?: number };
  /**
   * The fake's clock in epoch ms, for token expiry, quota and data: at start each list's newest item
   * is 3 minutes old, the rest spread over the 300 days before; later items are dated by it too.
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * Whether the token endpoint's 429 carries `Retry-After` (the real service is not known to; `apiRateLimit`'s never).
   * @default {false}
   */
  retryAfter?: boolean;
  /**
   * Faults for the first token requests, in order.
   * @default {[]}
   */
  faults?: readonly FakeFault[];
  /**
   * Generated items per list.
   * @default {{ organizations: 25, transactions: 500, cardholders: 120 }}
   */
  items?: Partial<ListSizes>;
  /**
   * Seed of the generated data, an integer: the same seed gives the same items.
   * @default {1}
   */
  seed?: number;
  /**
   * Milliseconds each API request (list or card data) takes to answer.
   * @default {0}
   */
  latency?: number;
  /**
   * A rate limit on API requests, as the service's (900 per 5 minutes per IP): past it, 429 with the
   * service's body and no `Retry-After`.
   * @default {none}
   */
  apiRateLimit?: FakeRateLimit;
  /**
   * How a list page is sent: `"object"` as `{ <list name>: [...], page, limit }`, `"array"` bare.
   * @default {"object"}
   */
  listEnvelope?: "object" | "array";
  /**
   * Fixed credentials, e.g. to keep a `.env` valid across restarts.
   * @default {random ones: fake-client-… and fake-secret-…}
   */
  credentials?: Partial<FakeCredentials>;
  /**
   * Body formats the token endpoint accepts (the service specifies JSON; most OAuth servers take forms).
   * @default {["json", "form"]}
   */
  tokenBodyFormats?: readonly ("json" | "form")[];
  /**
   * How each list changes on every request for it (from the seed, so a run repeats): offset drift.
   * @default {no change}
   */
  churn?: FakeChurn;
  /**
   * The largest `limit` a list accepts (the real service's is unknown).
   * @default {1000}
   */
  maxLimit?: number;
  /**
   * A `limit` above `maxLimit`: `"refuse"` with a 400, or `"cut"` the page to `maxLimit` items
   * (offsets then follow the cut size), as some services do.
   * @default {"refuse"}
   */
  beyondMaxLimit?: "refuse" | "cut";
}

/**
 * Credentials the fake accepts: a frozen object.
 *
 * @example Spreading the credentials into options
 * ```ts
 * import { type FakeCredentials, startFakePartnerApi } from "@partner-api/client/testing";
 * import { requestToken } from "@partner-api/client/token";
 * import { ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const credentials: FakeCredentials = api.credentials;
 * const token = await requestToken({ ...api.environment, ...credentials });
 * ok(api.isValidToken(token.accessToken));
 * ```
 */
export interface FakeCredentials {
  /** The client id. */
  readonly clientId: string;
  /** The client secret. */
  readonly clientSecret: string;
}

/**
 * A scripted misbehaviour for one request, in order: `status` answers it with an error body (the token endpoint's an
 * OAuth error with its quota header, the API's `{"error":"injected","message":...}`), and `Retry-After`: `retryAfter`,
 * whole seconds up to 2,147,483, if given; `delay` waits `ms`, then answers; `drop` cuts a 200 mid-body;
 * `body` answers 200 (or `status`) with exactly this body. `headers` are set last.
 *
 * @example A flaky token endpoint
 * ```ts
 * import { type FakeFault, startFakePartnerApi } from "@partner-api/client/testing";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { equal } from "node:assert/strict";
 *
 * const faults: FakeFault[] = [{ kind: "drop" }, { kind: "status", status: 503 }];
 * await using api = await startFakePartnerApi({ faults });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials, retry: { initialDelay: 1 } });
 * await provider.getToken(); // retried past both faults
 * equal(api.tokenRequests, 3);
 * ```
 */
export type FakeFault =
  | {
    readonly kind: "status";
    readonly status: number;
    readonly retryAfter?: number;
    readonly headers?: Readonly<Record<string, string>>;
  }
  | { readonly kind: "delay"; readonly ms: number }
  | { readonly kind: "drop" }
  | {
    readonly kind: "body";
    readonly body: string;
    readonly status?: number;
    readonly headers?: Readonly<Record<string, string>>;
  };

/**
 * The limit the fake enforces on API requests.
 *
 * @example The service's published limit, scaled down for a test
 * ```ts
 * import { type FakeRateLimit, startFakePartnerApi } from "@partner-api/client/testing";
 * import { createClient } from "@partner-api/client/client";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const limit: FakeRateLimit = { requests: 2, interval: 60_000 }; // the service: 900 in 5 minutes
 * await using api = await startFakePartnerApi({ apiRateLimit: limit });
 * // No pacing and no retry: the fake's 429 comes back.
 * const client = createClient({ environment: api.environment, ...api.credentials, rateLimit: false, retry: false });
 * const statuses: number[] = [];
 * for (let i = 0; i < 3; i++) {
 *   const response = await client.fetch("organizations");
 *   await response.body?.cancel();
 *   statuses.push(response.status);
 * }
 * deepStrictEqual(statuses, [200, 200, 429]);
 * ```
 */
export interface FakeRateLimit {
  /** Requests allowed in any window: a positive integer, at most 1,000,000 (as a limiter's). */
  readonly requests: number;
  /** The window's length, in ms. */
  readonly interval: number;
}

/**
 * How a fake list changes on each request for it, before it is answered.
 *
 * @example Items added, inserted, removed and changed on every request
 * ```ts
 * import { type FakeChurn, startFakePartnerApi } from "@partner-api/client/testing";
 * import { createClient } from "@partner-api/client/client";
 * import { equal, ok } from "node:assert/strict";
 *
 * type Transaction = { revision?: number };
 * const churn: FakeChurn = { append: 1, insertAnywhere: 1, remove: 1, update: 1 };
 * await using api = await startFakePartnerApi({ items: { transactions: 3 }, churn });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const page = async () => (await (await client.fetch("transactions")).json()).transactions as Transaction[];
 * equal((await page()).length, 4); // 3 + 1 + 1 - 1
 * const second = await page();
 * equal(second.length, 5);
 * ok(second.some((t) => t.revision !== undefined)); // changed in place
 * ```
 */
export interface FakeChurn {
  /**
   * Items added at the end of every order new items end (ids, newest creation dates: up to the fake's clock, as by
   * `insertTransactions`).
   * @default {0}
   */
  append?: number;
  /**
   * Items inserted at random places of every order (an id between others, a random creation date).
   * @default {0}
   */
  insertAnywhere?: number;
  /**
   * Random items removed.
   * @default {0}
   */
  remove?: number;
  /**
   * Random items changed in place: `revision` counts up from 1, `updatedAt` is the fake's clock, a
   * transaction's `amount` changes; the id and `creationDate` stay.
   * @default {0}
   */
  update?: number;
}

/**
 * Counts of generated items per list.
 *
 * @example A small fake
 * ```ts
 * import { type ListSizes, startFakePartnerApi } from "@partner-api/client/testing";
 * import { createClient } from "@partner-api/client/client";
 * import { equal } from "node:assert/strict";
 *
 * const items: ListSizes = { organizations: 2, transactions: 10, cardholders: 1 };
 * await using api = await startFakePartnerApi({ items });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * equal((await Array.fromAsync(client.list("transactions"))).length, 10);
 * ```
 */
export interface ListSizes {
  /** Items of `organizations`. */
  organizations: number;
  /** Items of `transactions`. */
  transactions: number;
  /** Items of `cardholders`. */
  cardholders: number;
}
