// Internal: a client's options, checked, and what they make: its own copy
// of the environment, its token provider, its pacing and its 401 ledger.

import type { EventListener } from "../core/events.ts";
import { defineEnvironment, type Environment } from "../core/environment.ts";
import {
  createTokenProvider,
  type RetryOptions,
  type TokenProvider,
  type TokenProviderOptions,
} from "../token/mod.ts";
import { backoffFrom } from "../core/_retry.ts";
import { renewalLedger } from "../token/_ledger.ts";
import { checkNumber, optionError, requireFunction } from "../core/_check.ts";
import {
  createRateLimiter,
  type RateLimit,
  type RateLimiter,
  SERVICE_RATE_LIMIT,
} from "./rate_limit.ts";
import type { SendContext } from "./_exchange.ts";
import { SharedDeadlines } from "../core/_deadlines.ts";

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

const CONTEXT = "Cannot create client";

/** Option names of 0.1 and where they went. */
const RENAMED: Record<string, string> = {
  requestTimeout: "timeout",
  maxRetryAfter: "retry.maxRetryAfter",
};

/** The client's checked options: its own environment and what sending needs. */
export function clientConfig(
  options: ClientOptions,
): { environment: Environment; context: SendContext } {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`${CONTEXT}: expected an options object`);
  }
  for (const [old, now] of Object.entries(RENAMED)) {
    if (old in options) {
      throw optionError(TypeError, CONTEXT, old, `is now '${now}'`);
    }
  }
  const environment = ownEnvironment(options.environment);
  const now = requireFunction(options.now, CONTEXT, "now") ?? Date.now;
  const random = requireFunction(options.random, CONTEXT, "random") ??
    Math.random;
  const timeout = checkNumber(
    options.timeout,
    30_000,
    "positive time in ms, at most 2147483647",
    CONTEXT,
    "timeout",
  );
  const tokenProvider = tokenProviderOf(options, environment);
  return {
    environment,
    context: {
      tokenProvider,
      fetch: requireFunction(options.fetch, CONTEXT, "fetch") ??
        ((input, init) => fetch(input, init)),
      retry: { backoff: backoffFrom(options.retry, CONTEXT), random },
      deadlines: new SharedDeadlines(timeout, now),
      renewAfterUnauthorized: renewalOf(tokenProvider, now),
      rateLimiter: rateLimiterOf(options.rateLimit, now),
      onEvent: requireFunction(options.onEvent, CONTEXT, "onEvent"),
      now,
    },
  };
}

/** A copy made by `defineEnvironment`'s own rules: nobody can move it later. */
function ownEnvironment(environment: Environment): Environment {
  if (typeof environment !== "object" || environment === null) {
    throw new TypeError(
      `${CONTEXT}: 'environment' must come from defineEnvironment()`,
    );
  }
  try {
    return defineEnvironment({ ...environment });
  } catch (error) {
    throw new TypeError(
      `${CONTEXT}: 'environment' breaks the rules of defineEnvironment(): ${
        (error as Error).message
      }`,
    );
  }
}

function tokenProviderOf(
  options: ClientOptions,
  environment: Environment,
): TokenProvider {
  const {
    environment: _,
    rateLimit: _pacing,
    tokenProvider,
    clientId,
    clientSecret,
    ...settings
  } = options;
  const hasCredentials = clientId !== undefined || clientSecret !== undefined;
  if (tokenProvider !== undefined && hasCredentials) {
    throw new TypeError(
      `${CONTEXT}: give either 'tokenProvider' or 'clientId' and 'clientSecret', not both`,
    );
  }
  if (tokenProvider !== undefined) {
    const own = Object.keys(settings).find((key) => !CLIENT_OWN.has(key));
    if (own !== undefined) {
      throw optionError(
        TypeError,
        CONTEXT,
        own,
        "is a provider option: give it to createTokenProvider",
      );
    }
    checkProviderTarget(tokenProvider, environment);
    return tokenProvider;
  }
  if (!hasCredentials) {
    throw new TypeError(
      `${CONTEXT}: 'tokenProvider', or 'clientId' and 'clientSecret', must be given`,
    );
  }
  // Every other option is the provider's too: one vocabulary for both.
  return createTokenProvider({
    ...settings,
    environment,
    clientId: clientId as string,
    clientSecret: clientSecret as string,
  });
}

/** Options the client itself reads, also beside a provider of the caller's. */
const CLIENT_OWN = new Set([
  "fetch",
  "timeout",
  "retry",
  "random",
  "now",
  "rateLimit",
  "onEvent",
]);

/** The client's pacing: a limiter given, one made from a limit, or none. */
function rateLimiterOf(
  rateLimit: ClientOptions["rateLimit"],
  now: () => number,
): RateLimiter | undefined {
  if (rateLimit === false) return undefined;
  if (isRateLimiter(rateLimit)) return rateLimit;
  return createRateLimiter({ ...(rateLimit ?? SERVICE_RATE_LIMIT), now });
}

function isRateLimiter(value: unknown): value is RateLimiter {
  return typeof (value as RateLimiter | undefined)?.take === "function";
}

/**
 * The provider's 401 ledger, shared by every client over it; for a provider
 * of the user's own without one, a ledger of this client's by the same rule.
 */
function renewalOf(
  provider: TokenProvider,
  now: () => number,
): (accessToken: string) => Promise<boolean> {
  if (typeof provider.reportUnauthorized === "function") {
    return (accessToken) => provider.reportUnauthorized!(accessToken);
  }
  return renewalLedger(now, (accessToken) => provider.invalidate(accessToken));
}

/** A production provider in a sandbox client would send its token to sandbox hosts. */
function checkProviderTarget(
  provider: TokenProvider,
  environment: Environment,
): void {
  const target = provider.target;
  if (target === undefined) return;
  if (
    target.tokenUrl !== environment.tokenUrl.href ||
    target.audience !== environment.audience
  ) {
    // Fields for code, the addresses in the message for people.
    throw Object.assign(
      new TypeError(
        `${CONTEXT}: the token provider is for ${target.tokenUrl} (audience ${target.audience}), not this environment's ${environment.tokenUrl.href} (audience ${environment.audience})`,
      ),
      {
        option: "tokenProvider",
        rule: "must be for the environment's token URL and audience",
      },
    );
  }
}
