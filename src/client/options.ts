// The options of `createClient`, checked by _config.ts.

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
  /** The environment, from `defineEnvironment`; the client keeps its own checked copy. */
  environment: Environment;
  /** The token provider, for the environment's token URL and audience; or `clientId` and `clientSecret`. */
  tokenProvider?: TokenProvider;
  /** The client id, when the client creates its own provider. */
  clientId?: string;
  /** The client secret, when the client creates its own provider. */
  clientSecret?: string;
  /**
   * The `fetch` for API requests (and the created provider's); always called as a plain function.
   * @default {globalThis.fetch}
   */
  fetch?: typeof fetch;
  /**
   * Time limit of one attempt, in ms: until the headers for `fetch`, until the body is read for a
   * `list` page (and for the created provider's token requests). At most the `rateLimit`'s `hold`
   * (60000 for a KV or Redis fleet limiter): `RangeError` (`option: "timeout"`) above it.
   * @default {30000}
   */
  timeout?: number;
  /**
   * Retries of idempotent requests (see `createClient`), each `list` page on its own; `false` for
   * none. A `Retry-After` longer than `maxRetryAfter` returns the answer to you.
   * @default {{ retries: 2, initialDelay: 500, maxDelay: 10000, maxRetryAfter: 30000 }}
   */
  retry?: RetryOptions | false;
  /**
   * The random source for retry jitter, in [0, 1).
   * @default {Math.random}
   */
  random?: () => number;
  /**
   * The clock, in epoch ms, for every decision (`Retry-After` dates, windows, the created provider).
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * Pacing of API requests: at most `requests` per `interval` ms in any sliding window, waiting for
   * a slot (a 429 too); a `createRateLimiter` limiter to share one limit; `false` for none.
   * @default {{ requests: 900, interval: 300000 }: the service's published limit per IP}
   */
  rateLimit?: RateLimit | RateLimiter | false;
  /**
   * The priority of calls that give none (`RequestInit.priority`, passed on to `fetch`): `"low"` is
   * background, any other live. See docs/rate-limit.md.
   * @default {"auto"}
   */
  priority?: "high" | "low" | "auto";
  /**
   * Called with `api.request` (each attempt), `api.retry`, `api.renewal`, `rate.wait`, `api.list`, and the created
   * provider's events (docs/events.md). Events never hold the secret or a token; what the listener throws is ignored.
   * @default {none: no event is built}
   */
  onEvent?: EventListener;
  /**
   * What each setting is called where it was configured, for messages: `baseUrl` and `pciBaseUrl`
   * for the client's (a host without net permission), the rest for the created provider's `hint`.
   * `configFromEnv` sets the variables' names. Also read beside a `tokenProvider` (the bases' names).
   * @default {the option names}
   */
  settingNames?: ProviderSettings["settingNames"] & {
    readonly baseUrl?: string;
    readonly pciBaseUrl?: string;
  };
}

/**
 * The provider options a client passes on when it creates its own provider; refused with `tokenProvider`.
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
