// The options of `createClient`: the public declarations of the client's
// configuration, checked by _config.ts. Re-exported by "./client".

import type { EventListener } from "../core/events.ts";
import type { Environment } from "../core/environment.ts";
import type {
  RetryOptions,
  TokenProvider,
  TokenProviderOptions,
} from "../token/mod.ts";
import type { RateLimit, RateLimiter } from "../core/rate_limiter.ts";

/**
 * Options of `createClient`.
 *
 * @example A client that shares an existing provider, with a tighter time limit
 * ```ts
 * import { type ClientOptions, createClient } from "@partner-api/client/client";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const tokenProvider = createTokenProvider({ ...api.environment, ...api.credentials });
 * await tokenProvider.getToken();
 * const options: ClientOptions = {
 *   environment: api.environment,
 *   tokenProvider,
 *   timeout: 10_000,
 *   retry: { retries: 4 },
 * };
 * const response = await createClient(options).fetch("organizations");
 * await response.body?.cancel();
 * equal(response.status, 200);
 * equal(api.tokenRequests, 1); // the client sent the provider's token
 * ```
 */
export interface ClientOptions extends ProviderSettings {
  /**
   * The environment, from `defineEnvironment`. The client checks it by the
   * same rules and keeps its own copy: changing the object afterwards
   * changes nothing the client sends.
   */
  environment: Environment;
  /**
   * The token provider to use (its token URL and audience must be the
   * environment's); or give `clientId` and `clientSecret`.
   */
  tokenProvider?: TokenProvider;
  /** The client id, when the client creates its own provider. */
  clientId?: string;
  /** The client secret, when the client creates its own provider. */
  clientSecret?: string;
  /**
   * The `fetch` for API requests (and token requests of the provider the
   * client creates); always called as a plain function.
   *
   * @default {globalThis.fetch}
   */
  fetch?: typeof fetch;
  /**
   * Time limit of one attempt, in ms: for `fetch` and `pciFetch` until the
   * answer's headers arrive, for a `list` page until its body is read (and
   * of each token request, for the provider the client creates).
   *
   * @default {30000}
   */
  timeout?: number;
  /**
   * Retries of idempotent requests (GET, HEAD, OPTIONS, PUT, DELETE) after a
   * network error, a timeout, 408, 429, 500, 502, 503 or 504; `false` for
   * none. Each page of a `list` retries on its own. A `Retry-After` longer
   * than `maxRetryAfter` returns the answer to you.
   *
   * @default {{ retries: 2, initialDelay: 500, maxDelay: 10000, maxRetryAfter: 30000 }}
   */
  retry?: RetryOptions | false;
  /**
   * The random source for retry jitter, in [0, 1).
   *
   * @default {Math.random}
   */
  random?: () => number;
  /**
   * The clock, in epoch ms, for every decision: `Retry-After` dates, time
   * windows, and the provider the client creates.
   *
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * Pacing of API requests: at most `requests` per `interval` ms in any
   * sliding window, waiting (not failing) for a free slot; a limiter from
   * `createRateLimiter` to share one limit between clients; `false` for none.
   * A 429 from the API also waits for the window to have room.
   *
   * @default {{ requests: 900, interval: 300000 }: the service's published limit per IP}
   */
  rateLimit?: RateLimit | RateLimiter | false;
  /**
   * The priority of the client's calls that give none of their own
   * (Fetch's `RequestInit.priority`, passed on to `fetch`): `"low"` makes
   * them background, which the rate limiter sends only when nothing else
   * waits and its window keeps `reserve` slots free; any other value is
   * live. A call's `init.priority` (or a list's `priority`) overrides it.
   *
   * @default {"auto"}
   */
  priority?: "high" | "low" | "auto";
  /**
   * Called with what the client does: `api.request` (each attempt),
   * `api.retry`, `api.renewal` (a 401, sent again with a newer token),
   * `rate.wait` and `api.list` (a crawl ended); and, for the provider the
   * client creates, its `token.request`, `token.retry`, `token.refresh` and
   * `quota.blocked`. Events are frozen and never hold the secret or a token;
   * what the listener throws is ignored.
   *
   * @default {none: no event is built}
   */
  onEvent?: EventListener;
}

/**
 * The provider options a client passes on when it creates its own provider
 * (from `clientId` and `clientSecret`); with `tokenProvider` they are refused.
 *
 * @example A client for a token server that takes form bodies only
 * ```ts
 * import { createClient, type ProviderSettings } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ tokenBodyFormats: ["form"] });
 * const settings: ProviderSettings = { bodyFormat: "form", refreshMargin: 60_000 };
 * const client = createClient({ environment: api.environment, ...api.credentials, ...settings });
 * const response = await client.fetch("organizations");
 * await response.body?.cancel();
 * equal(response.status, 200);
 * ```
 */
export type ProviderSettings = Omit<
  TokenProviderOptions,
  | "tokenUrl"
  | "audience"
  | "environment"
  | "clientId"
  | "clientSecret"
  | "fetch"
  | "timeout"
  | "retry"
  | "random"
  | "now"
  | "onEvent"
>;
