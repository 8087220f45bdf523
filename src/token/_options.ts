// Internal: the provider's public types, and the checks that turn its
// options into a configuration.

import type { EventListener } from "../core/events.ts";
import { checkNumber, optionError, requireFunction } from "../core/_check.ts";
import type { Environment } from "../core/environment.ts";
import { type Backoff, backoffFrom } from "../core/_retry.ts";
import { tokenEndpoint, type TokenRequestOptions } from "./_endpoint.ts";
import type { IssuedToken, QuotaSnapshot } from "./_value.ts";
import type { TokenStore } from "../store/mod.ts";
import type { TokenEndpoint } from "./_endpoint.ts";

/**
 * Retry policy, for the token provider and the client alike: the provider
 * retries network errors, timeouts, 408 and 5xx answers; the client retries
 * idempotent requests after a network error, a timeout, 408, 429, 500, 502,
 * 503 or 504.
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
   *
   * @default {2}
   */
  retries?: number;
  /**
   * Delay before the first retry in ms; doubles each time, with jitter.
   *
   * @default {500}
   */
  initialDelay?: number;
  /**
   * Longest backoff wait in ms.
   *
   * @default {10000}
   */
  maxDelay?: number;
  /**
   * Longest `Retry-After` waited for, in ms; an answer asking for longer is
   * returned (the client) or ends the retries (the provider).
   *
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
 *   tokenUrl: api.environment.tokenUrl,
 *   audience: api.environment.audience,
 *   clientId: api.credentials.clientId,
 *   clientSecret: api.credentials.clientSecret,
 *   refreshMargin: 60_000,
 *   retry: false,
 * };
 * const provider = createTokenProvider(options); // sends nothing until getToken()
 * await rejects(provider.getToken(), { name: "TokenRequestError", status: 503 });
 * equal(api.tokenRequests, 1);
 * ```
 */
export interface TokenProviderOptions
  extends Omit<TokenRequestOptions, "signal" | "tokenUrl" | "audience"> {
  /**
   * The environment whose token endpoint and audience to use; or give
   * `tokenUrl` and `audience`.
   */
  environment?: Environment;
  /** The OAuth 2.0 token endpoint, when no `environment` is given. */
  tokenUrl?: string | URL;
  /** The `audience`, when no `environment` is given. */
  audience?: string;
  /**
   * Where tokens are kept.
   *
   * @default {none: the token lives in this provider only}
   */
  store?: TokenStore;
  /**
   * How long before expiry, in ms, a new token is fetched in the background
   * while the old one is still served. Never more than half the lifetime.
   *
   * @default {5 minutes, or a tenth of the lifetime when that is less}
   */
  refreshMargin?: number;
  /**
   * Retries of failed token requests, or `false` for none.
   *
   * @default {{ retries: 2, initialDelay: 500, maxDelay: 10000, maxRetryAfter: 30000 }}
   */
  retry?: RetryOptions | false;
  /**
   * Called with every quota the token endpoint reports, e.g. to alert when
   * `remaining` runs low. What it throws is ignored, so that a token already
   * paid for is not lost.
   */
  onQuota?: (quota: QuotaSnapshot) => void;
  /**
   * Called with what the provider does: `token.request` (each request to the
   * token endpoint, retries included), `token.retry` (a request will be sent
   * again, after `delayMs`), `token.refresh` (a background refresh starts)
   * and `quota.blocked` (no request before `retryAt`). Events are
   * frozen and never hold the secret or a token; what the listener throws is
   * ignored. `openTelemetry()` from `./otel` makes one that records spans and
   * metrics.
   *
   * @default {none: no event is built}
   */
  onEvent?: EventListener;
  /**
   * For request-scoped runtimes (Cloudflare Workers: `waitUntil` from
   * `cloudflare:workers`, or a request's `ctx.waitUntil`): background
   * refreshes are handed to it, so that the runtime lets them finish after
   * the request that started them has answered.
   *
   * @default {none: background refreshes run on their own}
   */
  waitUntil?: (promise: Promise<unknown>) => void;
  /**
   * The random source for retry jitter, in [0, 1).
   *
   * @default {Math.random}
   */
  random?: () => number;
  /**
   * Allows a provider in a browser page, where anyone can read the client
   * secret. Never set it for a real secret.
   *
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
 * const options: GetTokenOptions = { signal: caller.signal };
 * const leaving = provider.getToken(options);
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
   * Drops `accessToken` (or the current token when omitted), e.g. after the
   * API answered 401. A provider of `createTokenProvider` goes through the
   * same ledger as {@linkcode TokenProvider.reportUnauthorized}: the first
   * time in an hour (for the whole fleet, with a shared store) the token is
   * dropped and the next {@linkcode TokenProvider.getToken} fetches a new
   * one; every other time in that hour it is kept. A token that was already
   * replaced is left alone.
   */
  invalidate(accessToken?: string): Promise<void>;
  /**
   * The 401 ledger: called by a client when the API answered 401 to a
   * request sent with `accessToken`. Resolves `true` when the request should
   * be sent once more with a fresh token: for the first 401 in an hour (the
   * token is invalidated), or when the token was already replaced. Every
   * other 401 in that hour resolves `false`: the answer is returned and the
   * token kept, since the service never revokes tokens early and a repeated
   * 401 is a scope, path or gateway problem. So a 401 costs at most one
   * token per hour per provider, however many clients share it. Optional for
   * providers of your own: a client then keeps the same ledger itself.
   */
  reportUnauthorized?(accessToken: string): Promise<boolean>;
  /** The last quota the token endpoint reported, if any. */
  readonly quota: QuotaSnapshot | undefined;
  /**
   * The token endpoint and audience the tokens are for (no secret), so that
   * a client can refuse a provider of another environment. Optional for
   * providers of your own.
   */
  readonly target?: TokenTarget;
}

/**
 * Where a provider's tokens come from and whom they are for.
 *
 * @example Checking a provider belongs to an environment
 * ```ts
 * import { createTokenProvider, type TokenTarget } from "@partner-api/client/token";
 * import { defineEnvironment } from "@partner-api/client/environment";
 * import { equal } from "node:assert/strict";
 *
 * const environment = defineEnvironment({
 *   baseUrl: "https://api.partner.example/api/",
 *   pciBaseUrl: "https://pci.partner.example/api/",
 *   tokenUrl: "https://idp.partner.example/oauth/token",
 *   audience: "https://api.partner.example",
 * });
 * const provider = createTokenProvider({ environment, clientId: "my-client", clientSecret: "s3cret" });
 * const target: TokenTarget | undefined = provider.target;
 * equal(target?.tokenUrl, environment.tokenUrl.href);
 * equal(target?.audience, environment.audience);
 * ```
 */
export interface TokenTarget {
  /** The token endpoint's address, as `URL.href`. */
  readonly tokenUrl: string;
  /** The audience tokens are requested for. */
  readonly audience: string;
}

/** A provider's checked options. */
export interface ProviderConfig {
  readonly endpoint: TokenEndpoint;
  readonly store: TokenStore | undefined;
  readonly backoff: Backoff;
  readonly refreshMargin: number | undefined;
  readonly random: () => number;
  readonly onQuota: ((quota: QuotaSnapshot) => void) | undefined;
  readonly onEvent: EventListener | undefined;
  readonly waitUntil: ((promise: Promise<unknown>) => void) | undefined;
}

const CONTEXT = "Cannot create token provider";

/**
 * Checks every option at once.
 *
 * @throws {TypeError} For a bad address, field or function, or in a browser
 * page without `dangerouslyAllowBrowser`.
 * @throws {RangeError} For a duration or count out of range.
 */
export function providerConfig(options: TokenProviderOptions): ProviderConfig {
  const endpoint = tokenEndpoint(withTarget(options), CONTEXT);
  if (isBrowserPage() && options.dangerouslyAllowBrowser !== true) {
    // In a browser page anyone can read the secret: tokens belong to a backend.
    throw optionError(
      TypeError,
      CONTEXT,
      "dangerouslyAllowBrowser",
      "must be true to run in what looks like a browser page, where anyone can read the client secret (request tokens from a backend)",
    );
  }
  return {
    endpoint,
    store: options.store,
    backoff: backoffFrom(options.retry, CONTEXT),
    refreshMargin: options.refreshMargin === undefined
      ? undefined
      : checkNumber(
        options.refreshMargin,
        0,
        "non-negative time in ms, at most 2147483647",
        CONTEXT,
        "refreshMargin",
      ),
    random: requireFunction(options.random, CONTEXT, "random") ?? Math.random,
    onQuota: requireFunction(options.onQuota, CONTEXT, "onQuota"),
    onEvent: requireFunction(options.onEvent, CONTEXT, "onEvent"),
    waitUntil: requireFunction(options.waitUntil, CONTEXT, "waitUntil"),
  };
}

/** `tokenUrl` and `audience` from the environment, or as given; not both. */
function withTarget(
  options: TokenProviderOptions,
): Omit<TokenRequestOptions, "signal"> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`${CONTEXT}: expected an options object`);
  }
  const { environment, ...rest } = options;
  if (environment === undefined) {
    return rest as Omit<TokenRequestOptions, "signal">;
  }
  if (rest.tokenUrl !== undefined || rest.audience !== undefined) {
    throw optionError(
      TypeError,
      CONTEXT,
      "environment",
      "must not come with 'tokenUrl' or 'audience'",
    );
  }
  return {
    ...rest,
    tokenUrl: environment.tokenUrl,
    audience: environment.audience,
  };
}

function isBrowserPage(): boolean {
  return "document" in globalThis && !("Deno" in globalThis) &&
    !("process" in globalThis);
}
