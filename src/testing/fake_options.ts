// What a fake is told: the service's options and credentials, and the
// scripts they take (faults, a rate limit, churn, list sizes). Public
// (re-exported by ./testing); the fake's internal files read them from here.

/**
 * Options of {@linkcode createFakePartnerService} (and of
 * `startFakePartnerApi`, which serves one).
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
   * Lifetime of issued tokens, in ms, like every duration of the fake; the
   * answer's `expires_in` is it in whole seconds (at least 1).
   *
   * @default {86400000}
   */
  tokenLifetime?: number;
  /**
   * Token requests allowed per UTC hour and per UTC day.
   *
   * @default {{ perHour: 1000, perDay: 10000 }}
   */
  quota?: { perHour?: number; perDay?: number };
  /**
   * The fake's clock in epoch ms: token expiry and quota windows follow it,
   * and so do its data: read when the fake starts, it places each list's
   * newest item a few minutes (3) before it, and the others back over the
   * 300 days before that, so "the last 24 hours" of a list holds about
   * 1/300 of it. Items added later (`insertTransactions`, `churn.append`)
   * are dated by it too.
   *
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * Whether a 429 carries `Retry-After` (the real service is not known to).
   *
   * @default {false}
   */
  retryAfter?: boolean;
  /**
   * Faults for the first token requests, in order.
   *
   * @default {[]}
   */
  faults?: readonly FakeFault[];
  /**
   * Generated items per list.
   *
   * @default {{ organizations: 25, transactions: 500, cardholders: 120 }}
   */
  items?: Partial<ListSizes>;
  /**
   * Seed of the generated data: the same seed gives the same items.
   *
   * @default {1}
   */
  seed?: number;
  /**
   * Milliseconds each API request (list or card data) takes to answer.
   *
   * @default {0}
   */
  latency?: number;
  /**
   * A rate limit on API requests, as the service has (900 per 5 minutes per
   * IP): past it, 429 with the service's body, e.g. `{"error":"Sending more
   * than 900 requests in 5 minutes is not allowed"}`, and no `Retry-After`.
   *
   * @default {none}
   */
  apiRateLimit?: FakeRateLimit;
  /**
   * How a list page is sent: `"object"` as `{ <list name>: [...], page,
   * limit }`, `"array"` as a bare JSON array.
   *
   * @default {"object"}
   */
  listEnvelope?: "object" | "array";
  /**
   * Fixed credentials, e.g. to keep a `.env` valid across restarts.
   *
   * @default {random ones: fake-client-… and fake-secret-…}
   */
  credentials?: Partial<FakeCredentials>;
  /**
   * Body formats the token endpoint accepts: JSON, as the service specifies,
   * and form-encoded, as most OAuth servers do. Restrict it to test what a
   * client sends.
   *
   * @default {["json", "form"]}
   */
  tokenBodyFormats?: readonly ("json" | "form")[];
  /**
   * How each list changes on every request for it, before it is answered
   * (from the seed, so a run repeats): to rehearse offset drift.
   *
   * @default {no change}
   */
  churn?: FakeChurn;
  /**
   * The largest `limit` a list accepts; a larger one is a 400, as the
   * real service's largest is unknown.
   *
   * @default {1000}
   */
  maxLimit?: number;
  /**
   * What a list does with a `limit` above `maxLimit`: `"refuse"` it with a
   * 400, or `"cut"` the page to `maxLimit` items (offsets then follow the
   * cut size), as some services do.
   *
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
 * A scripted misbehaviour, applied to one request in the order given: token
 * faults to token requests, API faults to API requests (lists and card data).
 *
 * - `status`: answers with that status and an OAuth error body, optionally
 *   with `Retry-After`.
 * - `delay`: waits `ms` milliseconds, then answers normally.
 * - `drop`: starts a 200 answer and cuts the connection mid-body.
 * - `body`: answers 200 (or `status`) with exactly this body, e.g. broken JSON.
 *
 * `headers` are set last, over the quota header if they name it.
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
 * const client = createClient({
 *   environment: api.environment,
 *   ...api.credentials,
 *   rateLimit: false, // no pacing and no retry: the fake's 429 comes back
 *   retry: false,
 * });
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
  /** Requests allowed in any window. */
  readonly requests: number;
  /** The window's length, in ms. */
  readonly interval: number;
}

/**
 * How a fake list changes on each request for it, before it is answered.
 *
 * @example One item added at the end, one inserted and one removed anywhere, per page
 * ```ts
 * import { type FakeChurn, startFakePartnerApi } from "@partner-api/client/testing";
 * import { createClient } from "@partner-api/client/client";
 * import { equal } from "node:assert/strict";
 *
 * const churn: FakeChurn = { append: 1, insertAnywhere: 1, remove: 1 };
 * await using api = await startFakePartnerApi({ items: { transactions: 3 }, churn });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const count = async () => (await (await client.fetch("transactions")).json()).transactions.length;
 * equal(await count(), 4); // 3 + 1 + 1 - 1
 * equal(await count(), 5);
 * ```
 *
 * @example Two items changed in place per page, as transactions settle
 * ```ts
 * import { type FakeChurn, startFakePartnerApi } from "@partner-api/client/testing";
 * import { createClient } from "@partner-api/client/client";
 * import { equal } from "node:assert/strict";
 *
 * type Transaction = { transactionID: string; revision?: number };
 * const churn: FakeChurn = { update: 2 };
 * await using api = await startFakePartnerApi({ items: { transactions: 10 }, churn });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const page = async () => (await (await client.fetch("transactions")).json()).transactions as Transaction[];
 * equal((await page()).filter((t) => t.revision !== undefined).length, 2);
 * equal((await page()).length, 10); // no item added or removed
 * ```
 */
export interface FakeChurn {
  /**
   * Items added at the end of every order that new items end (ids, and
   * creation dates newer than any other).
   *
   * @default {0}
   */
  append?: number;
  /**
   * Items inserted at random places of every order (an id between existing
   * ones, a random creation date).
   *
   * @default {0}
   */
  insertAnywhere?: number;
  /**
   * Random items removed.
   *
   * @default {0}
   */
  remove?: number;
  /**
   * Random items changed in place: `revision` counts up (from 1),
   * `updatedAt` is the fake's clock, and a transaction's `amount` changes
   * (so an order by amount moves); the id and `creationDate` stay.
   *
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
