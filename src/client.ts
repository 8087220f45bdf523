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

import { defineEnvironment, type Environment } from "./environment.ts";
import type { PaginateOptions } from "./paginate.ts";
import {
  createTokenProvider,
  type RetryOptions,
  type TokenProvider,
} from "./token.ts";
import { backoffFrom } from "./_retry.ts";
import { renewalLedger } from "./_token_provider.ts";
import { checkNumber, requireFunction } from "./_check.ts";
import { PathCache } from "./_path.ts";
import { listUnder } from "./_api_list.ts";
import {
  type SendContext,
  sendExchange,
  SharedDeadlines,
} from "./_api_send.ts";

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
 *   requestTimeout: 10_000,
 *   retry: { retries: 4 },
 * };
 * if (createClient(options).tokenProvider !== tokenProvider) throw new Error();
 * ```
 */
export interface ClientOptions {
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
   * The `fetch` for API and token requests; always called as a plain function.
   *
   * @default {globalThis.fetch}
   */
  fetch?: typeof fetch;
  /**
   * Time limit of one attempt, in ms: for `fetch` and `pciFetch` until the
   * answer's headers arrive, for a `list` page until its body is read.
   *
   * @default {30000}
   */
  requestTimeout?: number;
  /**
   * Retries of idempotent requests (GET, HEAD, OPTIONS, PUT, DELETE) after a
   * network error, a timeout, 408, 429, 500, 502, 503 or 504; `false` for
   * none. Each page of a `list` retries on its own.
   *
   * @default {{ retries: 2, initialDelay: 500, maxDelay: 10000 }}
   */
  retry?: RetryOptions | false;
  /**
   * Longest `Retry-After` to wait for, in ms; an answer asking for longer is
   * returned to you.
   *
   * @default {30000}
   */
  maxRetryAfter?: number;
  /**
   * The clock, in epoch ms, for `Retry-After` dates (and for the provider the
   * client creates).
   *
   * @default {Date.now}
   */
  now?: () => number;
}

/**
 * Options of {@linkcode PartnerClient.list}.
 *
 * @example Filters and a custom envelope
 * ```ts
 * import type { ListOptions } from "@partner-api/client/client";
 *
 * type Organization = { organizationID: string };
 * const options: ListOptions<Organization> = {
 *   query: { country: "DE" },
 *   items: (body) => (body as { data: Organization[] }).data,
 * };
 * if (options.items?.({ data: [] }).length !== 0) throw new Error();
 * ```
 */
export interface ListOptions<T> extends PaginateOptions<T> {
  /**
   * Picks the items out of a page's JSON body.
   *
   * @default {the body if it is an array, else its only array-valued property}
   */
  items?: (body: unknown) => readonly T[];
  /** Further query parameters, e.g. filters; not `limit`, `page` or sort. */
  query?: Record<string, string>;
}

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
 * - gives every attempt `requestTimeout` and retries idempotent requests
 *   after a network error, a timeout, 408, 429, 500, 502, 503 or 504, with
 *   backoff and jitter, honouring `Retry-After` up to `maxRetryAfter`;
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

/** The client's checked options: its own environment and what sending needs. */
function clientConfig(
  options: ClientOptions,
): { environment: Environment; context: SendContext } {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`${CONTEXT}: expected an options object`);
  }
  const environment = ownEnvironment(options.environment);
  const now = requireFunction(options.now, CONTEXT, "now") ?? Date.now;
  const tokenProvider = tokenProviderOf(options, environment, now);
  return {
    environment,
    context: {
      tokenProvider,
      fetch: requireFunction(options.fetch, CONTEXT, "fetch") ??
        ((input, init) => fetch(input, init)),
      ownFetch: options.fetch === undefined,
      retry: {
        backoff: backoffFrom(options.retry, CONTEXT),
        maxRetryAfter: checkNumber(
          options.maxRetryAfter,
          30_000,
          "non-negative finite number",
          CONTEXT,
          "maxRetryAfter",
        ),
        random: Math.random,
      },
      deadlines: new SharedDeadlines(checkNumber(
        options.requestTimeout,
        30_000,
        "positive finite number",
        CONTEXT,
        "requestTimeout",
      )),
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
  now: () => number,
): TokenProvider {
  const { tokenProvider, clientId, clientSecret } = options;
  const hasCredentials = clientId !== undefined || clientSecret !== undefined;
  if (tokenProvider !== undefined && hasCredentials) {
    throw new TypeError(
      `${CONTEXT}: give either 'tokenProvider' or 'clientId' and 'clientSecret', not both`,
    );
  }
  if (tokenProvider !== undefined) {
    checkProviderTarget(tokenProvider, environment);
    return tokenProvider;
  }
  if (!hasCredentials) {
    throw new TypeError(
      `${CONTEXT}: 'tokenProvider', or 'clientId' and 'clientSecret', must be given`,
    );
  }
  return createTokenProvider({
    ...environment,
    clientId: clientId as string,
    clientSecret: clientSecret as string,
    now,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
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
    throw new TypeError(
      `${CONTEXT}: the token provider is for ${target.tokenUrl} (audience ${target.audience}), not this environment's ${environment.tokenUrl.href} (audience ${environment.audience})`,
    );
  }
}
