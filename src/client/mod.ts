/**
 * An authenticated client for the partner API: `fetch` under the API base,
 * `pciFetch` under the card-data base, and `list` for paged lists. Every
 * request carries the provider's bearer token, and the token never leaves
 * the environment's addresses.
 *
 * @example Listing transactions, newest first
 * ```ts
 * import { createClient } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi({ items: { transactions: 120 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * let count = 0;
 * for await (const _ of client.list("transactions", { sortBy: "creationDate", sortDirection: "DESC" })) {
 *   count++;
 * }
 * if (count !== 120 || api.tokenRequests !== 1) throw new Error();
 * ```
 *
 * @module
 */

import { defineEnvironment, type Environment } from "../core/environment.ts";
import {
  createTokenProvider,
  type RetryOptions,
  type TokenProvider,
  type TokenProviderOptions,
} from "../token/mod.ts";
import { backoffFrom } from "../core/_retry.ts";
import { renewalLedger } from "../token/_provider.ts";
import { checkNumber, optionError, requireFunction } from "../core/_check.ts";
import { PathCache } from "./_path.ts";
import { type ListOptions, listUnder } from "./_list.ts";

export type { ListOptions } from "./_list.ts";
import { type SendContext, sendExchange, SharedDeadlines } from "./_send.ts";

/**
 * Options of {@linkcode createClient}.
 *
 * @example A client that shares an existing provider, with a tighter time limit
 * ```ts
 * import { createClient, type ClientOptions } from "@partner-api/client/client";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi();
 * const tokenProvider = createTokenProvider({ ...api.environment, ...api.credentials });
 * const options: ClientOptions = {
 *   environment: api.environment,
 *   tokenProvider,
 *   timeout: 10_000,
 *   retry: { retries: 4 },
 * };
 * if (createClient(options).tokenProvider !== tokenProvider) throw new Error();
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
}

/**
 * The provider options a client passes on when it creates its own provider
 * (from `clientId` and `clientSecret`); with `tokenProvider` they are refused.
 *
 * @example A client for a token server that takes form bodies only
 * ```ts
 * import type { ProviderSettings } from "@partner-api/client/client";
 *
 * const settings: ProviderSettings = { bodyFormat: "form", refreshMargin: 60_000 };
 * if (settings.bodyFormat !== "form") throw new Error();
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
>;

/**
 * A client bound to one environment and one token provider.
 *
 * @example Passing a client to code that needs the API
 * ```ts
 * import { createClient, type PartnerClient } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * async function countOrganizations(client: PartnerClient): Promise<number> {
 *   let count = 0;
 *   for await (const _ of client.list("organizations")) count++;
 *   return count;
 * }
 * await using api = await startFakePartnerApi({ items: { organizations: 3 } });
 * if (await countOrganizations(createClient({ environment: api.environment, ...api.credentials })) !== 3) {
 *   throw new Error();
 * }
 * ```
 */
export interface PartnerClient {
  /** The provider whose tokens the client sends. */
  readonly tokenProvider: TokenProvider;
  /**
   * Sends a request under the API base (`"x"` and `"/x"` both mean
   * `{baseUrl}x`) with the bearer token, retrying idempotent requests.
   * Rejects with `TypeError` for an address outside the base, before
   * anything is sent; with `ApiError` (`status` 0, the failure as `cause`)
   * when no answer arrives after the retries; with the signal's reason when
   * the caller aborts.
   */
  fetch(path: string | URL, init?: RequestInit): Promise<Response>;
  /** Like {@linkcode PartnerClient.fetch}, under the card-data (PCI) base. */
  pciFetch(path: string | URL, init?: RequestInit): Promise<Response>;
  /**
   * Iterates over a paged list under the API base.
   *
   * @throws {TypeError} At once, for a path outside the base or bad options.
   * @throws {ApiError} While iterating, for a page answered with an error, a
   * page that is not JSON or holds no items, or no answer after the retries.
   */
  list<T = unknown>(
    path: string,
    options?: ListOptions<T>,
  ): AsyncIterableIterator<T>;
}

const CONTEXT = "Cannot create client";

/**
 * Creates a client for one environment. It sends every request with
 * `Authorization: Bearer <token>` (replacing any the caller set), keeps the
 * caller's other headers, and:
 *
 * - refuses addresses outside the environment's bases before sending,
 *   encoded separators (`%2F`, `%5C`) and climbing paths included;
 * - gives every attempt `timeout` and retries idempotent requests after a
 *   network error, a timeout, 408, 429, 500, 502, 503 or 504, with backoff
 *   and jitter, honouring `Retry-After` up to `retry.maxRetryAfter`;
 * - on a 401 asks the provider's ledger: the first 401 in an hour (per
 *   provider, whatever the client, path or base) invalidates that token and
 *   the request is sent once more with a fresh one, when its body can be
 *   sent again; every other 401 in that hour is returned as it is and the
 *   token kept, so a path that always answers 401 cannot drain the quota;
 * - follows redirects only for GET and HEAD and only under the same base.
 *
 * @param options Environment, token provider or credentials, time limit,
 * retries and `fetch`.
 * @returns The client.
 * @throws {TypeError} When the environment breaks the rules of
 * `defineEnvironment`, the provider is for another token URL or audience, or
 * neither or both of a provider and credentials are given.
 * @throws {RangeError} When a time limit or retry option is out of range.
 *
 * @example Reading card data from the PCI origin
 * ```ts
 * import { createClient } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi();
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const response = await client.pciFetch("cards/ch_000001");
 * const card = await response.json();
 * if (card.cardholderID !== "ch_000001") throw new Error();
 * ```
 */
export function createClient(options: ClientOptions): PartnerClient {
  const { environment, context } = clientConfig(options);
  const fetchUnder = (base: URL, what: string) => {
    const paths = new PathCache(base, what);
    return (path: string | URL, init: RequestInit = {}): Promise<Response> => {
      try {
        return sendExchange(context, {
          base,
          url: paths.resolve(path),
          init,
          context: what,
          finish: (response) => response,
        });
      } catch (error) {
        // A bad address is a rejection, like every other failure of fetch.
        return Promise.reject(error);
      }
    };
  };
  return {
    tokenProvider: context.tokenProvider,
    fetch: fetchUnder(environment.baseUrl, "Cannot fetch"),
    pciFetch: fetchUnder(environment.pciBaseUrl, "Cannot fetch card data"),
    list: <T>(path: string, listOptions: ListOptions<T> = {}) =>
      listUnder(context, environment.baseUrl, path, listOptions),
  };
}

/** Option names of 0.1 and where they went. */
const RENAMED: Record<string, string> = {
  requestTimeout: "timeout",
  maxRetryAfter: "retry.maxRetryAfter",
};

/** The client's checked options: its own environment and what sending needs. */
function clientConfig(
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
    "positive finite number",
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
      ownFetch: options.fetch === undefined,
      retry: { backoff: backoffFrom(options.retry, CONTEXT), random },
      deadlines: new SharedDeadlines(timeout, now),
      renewAfterUnauthorized: renewalOf(tokenProvider, now),
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
const CLIENT_OWN = new Set(["fetch", "timeout", "retry", "random", "now"]);

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
    throw new TypeError(
      `${CONTEXT}: the token provider is for ${target.tokenUrl} (audience ${target.audience}), not this environment's ${environment.tokenUrl.href} (audience ${environment.audience})`,
    );
  }
}
