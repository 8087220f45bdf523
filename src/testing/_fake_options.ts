// The fake service's options and credentials (re-exported by
// fake_service.ts), apart so that its setup can read them.

import type { FakeFault } from "./_fake_http.ts";
import type { FakeRateLimit } from "./_fake_rate.ts";
import type { ListSizes } from "./_list_data.ts";
import type { FakeChurn } from "./_list_churn.ts";

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
