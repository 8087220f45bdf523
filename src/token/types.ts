// The token part's public types. Exported by ./token.

import type { EventListener } from "../core/events.ts";
import type { Environment } from "../core/environment.ts";
import type { IssuedToken, QuotaSnapshot } from "../core/token_values.ts";
import type { TokenStore } from "../store/types.ts";

/**
 * Options of {@linkcode requestToken}.
 *
 * @example A token server that takes form bodies only
 * ```ts
 * import { requestToken, type TokenRequestOptions } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ tokenBodyFormats: ["form"] });
 * const options: TokenRequestOptions = { ...api.environment, ...api.credentials, bodyFormat: "form" };
 * ok(api.isValidToken((await requestToken(options)).accessToken));
 * ```
 */
export interface TokenRequestOptions {
  /** The OAuth 2.0 token endpoint (https, or http on loopback). */
  tokenUrl: string | URL;
  /** The `audience` of the environment. */
  audience: string;
  /** The client id. */
  clientId: string;
  /** The client secret; it never appears in errors or logs. */
  clientSecret: string;
  /**
   * The `fetch` to send the request with; always called as a plain function.
   * @default {globalThis.fetch}
   */
  fetch?: typeof fetch;
  /** Aborts the request; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * The clock in epoch ms, for every decision; a reading not a finite number is refused (`TypeError`, `option: "now"`).
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * The name of the header carrying the quota; one `Headers` refuses is refused (`TypeError`, `option: "quotaHeader"`).
   * @default {"Idp-Client-Quota-Limit"}
   */
  quotaHeader?: string;
  /**
   * How the four fields are sent: `"json"` as the service specifies, or `"form"` (`application/x-www-form-urlencoded`,
   * RFC 6749 4.4.2) for other servers.
   * @default {"json"}
   */
  bodyFormat?: "json" | "form";
  /**
   * Time limit of one attempt in ms, until the whole answer is read.
   * @default {30000}
   */
  timeout?: number;
  /**
   * How the client authenticates: `"body"` sends `client_id` and `client_secret` in the body, as the service specifies;
   * `"basic"` as HTTP Basic only (each form-encoded first, RFC 6749 2.3.1), for servers that take nothing else.
   * @default {"body"}
   */
  clientAuthentication?: "body" | "basic";
  /**
   * Each setting's name where it was configured, for a failed request's `hint`: `configFromEnv` sets the variables'.
   * @default {the option names}
   */
  settingNames?: {
    readonly clientId?: string;
    readonly clientSecret?: string;
    readonly audience?: string;
    readonly tokenUrl?: string;
    readonly bodyFormat?: string;
    readonly clientAuthentication?: string;
  };
}

/**
 * Retry policy of the token provider (network errors, timeouts, 408, 500, 502, 503, 504) and the client (idempotent
 * requests: network errors, timeouts, 408, 429, 500, 502, 503, 504).
 *
 * @example Retrying harder at start-up
 * ```ts
 * import { createTokenProvider, type RetryOptions } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const unavailable = { kind: "status", status: 503 } as const;
 * await using api = await startFakePartnerApi({ faults: [unavailable, unavailable, unavailable] });
 * const retry: RetryOptions = { retries: 5, initialDelay: 1, maxDelay: 10 };
 * await createTokenProvider({ ...api.environment, ...api.credentials, retry }).getToken();
 * equal(api.tokenRequests, 4); // three refused, the fourth answered
 * ```
 */
export interface RetryOptions {
  /**
   * Retries after the first attempt.
   * @default {2}
   */
  retries?: number;
  /**
   * Delay before the first retry in ms; doubles each time, with jitter.
   * @default {500}
   */
  initialDelay?: number;
  /**
   * Longest backoff wait in ms.
   * @default {10000}
   */
  maxDelay?: number;
  /**
   * Longest `Retry-After` waited for, in ms; an answer asking more is returned (client) or ends the retries (provider).
   * @default {30000}
   */
  maxRetryAfter?: number;
}

/**
 * Options of {@linkcode createTokenProvider}.
 *
 * @example A provider with a shorter margin and no retries
 * ```ts
 * import { createTokenProvider, type TokenProviderOptions } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ faults: [{ kind: "status", status: 503 }] });
 * const options: TokenProviderOptions = {
 *   ...api.environment, ...api.credentials, refreshMargin: 60_000, retry: false,
 * };
 * const provider = createTokenProvider(options); // sends nothing until getToken()
 * await rejects(provider.getToken(), { name: "TokenRequestError", status: 503 });
 * equal(api.tokenRequests, 1);
 * ```
 */
export interface TokenProviderOptions
  extends Omit<TokenRequestOptions, "signal" | "tokenUrl" | "audience"> {
  /** The environment whose token endpoint and audience to use; or give `tokenUrl` and `audience`. */
  environment?: Environment;
  /** The OAuth 2.0 token endpoint, when no `environment` is given. */
  tokenUrl?: string | URL;
  /** The `audience`, when no `environment` is given. */
  audience?: string;
  /**
   * Where tokens are kept.
   * @default {none: the token lives in this provider only}
   */
  store?: TokenStore;
  /**
   * Ms before expiry when a new token is fetched in the background (the old one still served); at most half its life.
   * @default {5 minutes, or a tenth of the lifetime when that is less}
   */
  refreshMargin?: number;
  /**
   * Retries of failed token requests, or `false` for none.
   * @default {{ retries: 2, initialDelay: 500, maxDelay: 10000, maxRetryAfter: 30000 }}
   */
  retry?: RetryOptions | false;
  /**
   * Called with every quota the token endpoint reports (e.g. to alert when low); what it throws is ignored, so that a
   * token already paid for is not lost.
   */
  onQuota?: (quota: QuotaSnapshot) => void;
  /**
   * Called with the provider's events (`token.request`, `token.retry`, `token.refresh`, `quota.blocked`), which never
   * hold the secret or a token; what it throws is ignored. `openTelemetry()` from `./otel` makes one.
   * @default {none: no event is built}
   */
  onEvent?: EventListener;
  /**
   * For request-scoped runtimes (Cloudflare Workers' `waitUntil`): background refreshes are handed to it, so that they
   * finish after the request answered.
   * @default {none: background refreshes run on their own}
   */
  waitUntil?: (promise: Promise<unknown>) => void;
  /**
   * The random source for retry jitter, in [0, 1).
   * @default {Math.random}
   */
  random?: () => number;
  /**
   * Allows a provider in a browser page, where anyone can read the client secret. Never set it for a real secret.
   * @default {false}
   */
  dangerouslyAllowBrowser?: boolean;
}

/**
 * Options of {@linkcode TokenProvider.getToken}.
 *
 * @example Giving up when the caller does
 * ```ts
 * import { createTokenProvider, type GetTokenOptions } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ faults: [{ kind: "delay", ms: 50 }] });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials });
 * const caller = new AbortController();
 * const leaving = provider.getToken({ signal: caller.signal } satisfies GetTokenOptions);
 * caller.abort();
 * await rejects(leaving, { name: "AbortError" });
 * await provider.getToken(); // the request the first caller left goes on: this one joins it
 * equal(api.tokenRequests, 1);
 * ```
 */
export interface GetTokenOptions {
  /** Stops waiting; the token request goes on all the same, and its token is kept for the next caller. */
  signal?: AbortSignal;
}

/**
 * A cache of one client's token. Holds no secret that inspection can see.
 *
 * @example Renewing a token the API rejected
 * ```ts
 * import { createTokenProvider, type TokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, notEqual } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const provider: TokenProvider = createTokenProvider({ ...api.environment, ...api.credentials });
 * const first = await provider.getToken();
 * await provider.invalidate(first.accessToken); // e.g. after a 401
 * notEqual((await provider.getToken()).accessToken, first.accessToken);
 * equal(api.tokenRequests, 2);
 * ```
 */
export interface TokenProvider {
  /**
   * A token that is valid now: the cached one, or a new one.
   *
   * @throws {QuotaExceededError} When a new token is needed before the quota resets.
   * @throws {TokenRequestError} When the token request fails.
   */
  getToken(options?: GetTokenOptions): Promise<IssuedToken>;
  /**
   * Drops `accessToken` (or the current token), e.g. after a 401; `createTokenProvider`'s providers go through the
   * ledger of {@linkcode TokenProvider.reportUnauthorized} and leave a replaced token alone. A client awaits a promise.
   */
  invalidate(accessToken?: string): void | Promise<void>;
  /**
   * The 401 ledger, called by a client when the API answered 401 to `accessToken`: `true` (send once more with a fresh
   * token) for the first 401 in an hour, fleet-wide with a shared store, or when the token was already replaced; else
   * `false` (the answer is returned, the token kept): the service never revokes tokens early, so a repeated 401 is a
   * scope, path or gateway problem. Optional: a client keeps the same ledger for a provider without it.
   */
  reportUnauthorized?(accessToken: string): Promise<boolean>;
  /** The last quota the token endpoint reported, if any. */
  readonly quota: QuotaSnapshot | undefined;
  /**
   * The token endpoint and audience the tokens are for (no secret), so that a client can refuse a provider of another
   * environment. Optional.
   */
  readonly target?: TokenTarget;
}

/**
 * Where a provider's tokens come from and whom they are for.
 *
 * @example Checking a provider belongs to an environment
 * ```ts
 * import { createTokenProvider, type TokenTarget } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const { environment } = api;
 * const target: TokenTarget | undefined = createTokenProvider({ environment, ...api.credentials }).target;
 * deepStrictEqual(target, { tokenUrl: environment.tokenUrl.href, audience: environment.audience });
 * ```
 */
export interface TokenTarget {
  /** The token endpoint's address, as `URL.href`. */
  readonly tokenUrl: string;
  /** The audience tokens are requested for. */
  readonly audience: string;
}
