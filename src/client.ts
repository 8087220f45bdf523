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

import type { Environment } from "./environment.ts";
import { ApiError, type ApiErrorInit, TokenRequestError } from "./errors.ts";
import {
  pageSearchParams,
  paginate,
  type PaginateOptions,
} from "./paginate.ts";
import { createTokenProvider, type TokenProvider } from "./token.ts";
import { delay, retryAfterMs } from "./_retry.ts";
import { displayUrl } from "./_url.ts";
import { redact } from "./_redact.ts";
import { checkNumber } from "./_check.ts";

/**
 * Options of {@linkcode createClient}.
 *
 * @example A client that shares an existing provider
 * ```ts
 * import { createClient, type ClientOptions } from "@partner-api/client/client";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi();
 * const tokenProvider = createTokenProvider({ ...api.environment, ...api.credentials });
 * const options: ClientOptions = { environment: api.environment, tokenProvider, rateLimitRetries: 0 };
 * if (createClient(options).tokenProvider !== tokenProvider) throw new Error();
 * ```
 */
export interface ClientOptions {
  /** The environment, from `defineEnvironment`. */
  environment: Environment;
  /** The token provider to use; or give `clientId` and `clientSecret`. */
  tokenProvider?: TokenProvider;
  /** The client id, when the client creates its own provider. */
  clientId?: string;
  /** The client secret, when the client creates its own provider. */
  clientSecret?: string;
  /**
   * The `fetch` for API and token requests.
   *
   * @default {globalThis.fetch}
   */
  fetch?: typeof fetch;
  /**
   * Retries of an idempotent request answered 429 with `Retry-After`.
   *
   * @default {2}
   */
  rateLimitRetries?: number;
  /**
   * Longest `Retry-After` to wait for, in ms; a longer one is returned to you.
   *
   * @default {30000}
   */
  maxRetryAfter?: number;
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
   * `{baseUrl}x`) with the bearer token. Rejects with `TypeError` for an
   * address outside the base, before anything is sent.
   */
  fetch(path: string | URL, init?: RequestInit): Promise<Response>;
  /** Like {@linkcode PartnerClient.fetch}, under the card-data (PCI) base. */
  pciFetch(path: string | URL, init?: RequestInit): Promise<Response>;
  /**
   * Iterates over a paged list under the API base.
   *
   * @throws {TypeError} At once, for a path outside the base or bad options.
   * @throws {ApiError} While iterating, for a page answered with an error.
   */
  list<T = unknown>(
    path: string,
    options?: ListOptions<T>,
  ): AsyncIterableIterator<T>;
}

const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);
const MAX_REDIRECTS = 5;
const EXCERPT_LENGTH = 300;
const PAGE_PARAMETERS = ["limit", "page", "sortBy", "sortDirection"];
const CONTEXT = "Cannot create client";

/**
 * Resolves `path` under `base`, refusing anything outside it: another
 * origin, a path that climbs out, or user info.
 */
function resolveUnder(base: URL, path: string | URL, context: string): URL {
  let url: URL;
  if (path instanceof URL) {
    url = new URL(path.href);
  } else if (typeof path === "string") {
    url = /^[a-z][a-z\d+.-]*:/i.test(path)
      ? new URL(path)
      : new URL(path.replace(/^[/\\]+/, ""), base);
  } else {
    throw new TypeError(
      `${context}: 'path' must be a string or URL: received ${typeof path}`,
    );
  }
  if (!isUnder(url, base)) {
    throw new TypeError(
      `${context}: ${
        displayUrl(url)
      } is outside ${base.href}; the token is only sent under it`,
    );
  }
  return url;
}

function isUnder(url: URL, base: URL): boolean {
  return url.origin === base.origin && url.username === "" &&
    url.password === "" && url.pathname.startsWith(base.pathname);
}

function tokenProviderOf(options: ClientOptions): TokenProvider {
  const { tokenProvider, clientId, clientSecret } = options;
  const hasCredentials = clientId !== undefined || clientSecret !== undefined;
  if (tokenProvider !== undefined && hasCredentials) {
    throw new TypeError(
      `${CONTEXT}: give either 'tokenProvider' or 'clientId' and 'clientSecret', not both`,
    );
  }
  if (tokenProvider !== undefined) return tokenProvider;
  if (!hasCredentials) {
    throw new TypeError(
      `${CONTEXT}: 'tokenProvider', or 'clientId' and 'clientSecret', must be given`,
    );
  }
  return createTokenProvider({
    ...options.environment,
    clientId: clientId as string,
    clientSecret: clientSecret as string,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
}

function checkEnvironment(environment: Environment): void {
  const isUrl = (value: unknown) => value instanceof URL;
  if (
    typeof environment !== "object" || environment === null ||
    !isUrl(environment.baseUrl) || !isUrl(environment.pciBaseUrl) ||
    !isUrl(environment.tokenUrl)
  ) {
    throw new TypeError(
      `${CONTEXT}: 'environment' must come from defineEnvironment()`,
    );
  }
}

function checkQuery(query: unknown): Record<string, string> {
  if (query === undefined) return {};
  if (typeof query !== "object" || query === null) {
    throw new TypeError("Cannot list: 'query' must be an object of strings");
  }
  for (const [name, value] of Object.entries(query)) {
    if (typeof value !== "string") {
      throw new TypeError(
        `Cannot list: query parameter '${name}' must be a string: received ${typeof value}`,
      );
    }
    if (PAGE_PARAMETERS.includes(name)) {
      throw new TypeError(
        `Cannot list: give '${name}' as an option of its own, not in 'query'`,
      );
    }
  }
  return query as Record<string, string>;
}

/** The items of a page body: an array, or the body's only array-valued property. */
function itemsOf(body: unknown, url: URL): readonly unknown[] {
  if (Array.isArray(body)) return body;
  if (typeof body === "object" && body !== null) {
    const arrays = Object.values(body).filter(Array.isArray);
    if (arrays.length === 1) return arrays[0] as unknown[];
  }
  const keys = typeof body === "object" && body !== null
    ? Object.keys(body).join(", ")
    : typeof body;
  throw new TypeError(
    `Cannot list: the answer from ${url.href} holds no single array of items (found: ${keys}); pass 'items' to pick them`,
  );
}

/** The response, and the token it was sent with (to keep it out of errors). */
interface Sent {
  readonly response: Response;
  readonly accessToken: string;
}

/**
 * Creates a client for one environment. It sends every request with
 * `Authorization: Bearer <token>` (replacing any the caller set), keeps the
 * caller's other headers, and:
 *
 * - refuses addresses outside the environment's bases before sending;
 * - follows redirects only for GET and HEAD and only under the same base,
 *   returning any other redirect unfollowed, so the token stays home;
 * - on a 401 invalidates that token and retries once with a fresh one, when
 *   the body can be sent again (not a stream);
 * - on a 429 with `Retry-After` (at most `maxRetryAfter`) retries idempotent
 *   requests up to `rateLimitRetries` times, waiting abortably; otherwise it
 *   returns the answer.
 *
 * @param options Environment, token provider or credentials, and `fetch`.
 * @returns The client.
 * @throws {TypeError} When the environment is not from `defineEnvironment`,
 * or neither or both of a provider and credentials are given.
 * @throws {RangeError} When a retry option is out of range.
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
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`${CONTEXT}: expected an options object`);
  }
  const { environment } = options;
  checkEnvironment(environment);
  const tokenProvider = tokenProviderOf(options);
  const send = options.fetch ?? globalThis.fetch;
  const rateLimitRetries = checkNumber(
    options.rateLimitRetries,
    2,
    "non-negative integer",
    CONTEXT,
    "rateLimitRetries",
  );
  const maxRetryAfter = checkNumber(
    options.maxRetryAfter,
    30_000,
    "non-negative finite number",
    CONTEXT,
    "maxRetryAfter",
  );

  function followable(
    response: Response,
    from: URL,
    base: URL,
    method: string,
  ) {
    const location = response.headers.get("location");
    if (location === null || (method !== "GET" && method !== "HEAD")) return;
    let next: URL;
    try {
      next = new URL(location, from);
    } catch {
      return undefined;
    }
    return isUnder(next, base) ? next : undefined;
  }

  async function sendAuthorized(
    base: URL,
    url: URL,
    init: RequestInit,
  ): Promise<Sent> {
    const signal = init.signal ?? undefined;
    const method = (init.method ?? "GET").toUpperCase();
    const replayable = !(init.body instanceof ReadableStream);
    let target = url;
    let authRetried = false;
    let rateRetries = 0;
    let redirects = 0;
    while (true) {
      const { accessToken } = await tokenProvider.getToken(
        signal === undefined ? {} : { signal },
      );
      const headers = new Headers(init.headers);
      headers.set("authorization", `Bearer ${accessToken}`);
      const response = await send(target, {
        ...init,
        headers,
        redirect: "manual",
      });
      // An answer not handed back must be read or cancelled, or it leaks.
      const discard = () => response.body?.cancel();
      if (response.status === 401 && !authRetried && replayable) {
        authRetried = true;
        await discard();
        await tokenProvider.invalidate(accessToken);
        continue;
      }
      const wait = response.status === 429
        ? retryAfterMs(response.headers, Date.now())
        : undefined;
      if (
        wait !== undefined && wait <= maxRetryAfter &&
        IDEMPOTENT.has(method) && replayable && rateRetries < rateLimitRetries
      ) {
        rateRetries++;
        await discard();
        await delay(wait, signal);
        continue;
      }
      const next = response.status >= 300 && response.status < 400
        ? followable(response, target, base, method)
        : undefined;
      if (next !== undefined && redirects < MAX_REDIRECTS) {
        redirects++;
        await discard();
        target = next;
        continue;
      }
      return { response, accessToken };
    }
  }

  function fetchUnder(
    base: URL,
    context: string,
    path: string | URL,
    init: RequestInit = {},
  ): Promise<Response> {
    try {
      const url = resolveUnder(base, path, context);
      return sendAuthorized(base, url, init).then((sent) => sent.response);
    } catch (error) {
      // A bad address is a rejection, like every other failure of fetch.
      return Promise.reject(error);
    }
  }

  /**
   * One page of a list. Whatever goes wrong with the API is an ApiError
   * (status 0 when no answer arrived); a token failure stays what it is, and
   * an abort is the signal's reason.
   */
  async function listPage<T>(
    url: URL,
    signal: AbortSignal | undefined,
    pick: ((body: unknown) => readonly T[]) | undefined,
  ): Promise<readonly T[]> {
    const fail = (problem: string, init: Partial<ApiErrorInit> = {}) =>
      new ApiError(`Cannot list: GET ${url.href} ${problem}`, {
        status: 0,
        url: url.href,
        ...init,
      });
    let sent: Sent;
    try {
      sent = await sendAuthorized(environment.baseUrl, url, {
        headers: { accept: "application/json" },
        ...(signal === undefined ? {} : { signal }),
      });
    } catch (error) {
      if (signal?.aborted || error instanceof TokenRequestError) throw error;
      throw fail("got no answer", { cause: error });
    }
    const { response, accessToken } = sent;
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      signal?.throwIfAborted();
      throw fail(`answered ${response.status}, cut off`, {
        status: response.status,
        cause: error,
        response,
      });
    }
    const answered = (problem: string) =>
      fail(problem, {
        status: response.status,
        bodyExcerpt: redact(text.slice(0, EXCERPT_LENGTH), [accessToken]),
        response,
      });
    if (!response.ok) throw answered(`answered ${response.status}`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw answered(`answered with a body that is not JSON (${error})`);
    }
    return pick === undefined ? itemsOf(body, url) as T[] : pick(body);
  }

  return {
    tokenProvider,
    fetch: (path, init) =>
      fetchUnder(environment.baseUrl, "Cannot fetch", path, init),
    pciFetch: (path, init) =>
      fetchUnder(environment.pciBaseUrl, "Cannot fetch card data", path, init),
    list<T = unknown>(
      path: string,
      listOptions: ListOptions<T> = {},
    ): AsyncIterableIterator<T> {
      const { items: pick, query, ...pageOptions } = listOptions;
      const base = environment.baseUrl;
      const url = resolveUnder(base, path, "Cannot list");
      const extra = checkQuery(query);
      if (pick !== undefined && typeof pick !== "function") {
        throw new TypeError("Cannot list: 'items' must be a function");
      }
      return paginate<T>(async (request) => {
        const pageUrl = new URL(url);
        for (const [name, value] of Object.entries(extra)) {
          pageUrl.searchParams.set(name, value);
        }
        for (const [name, value] of pageSearchParams(request)) {
          pageUrl.searchParams.set(name, value);
        }
        return await listPage(pageUrl, request.signal, pick);
      }, pageOptions);
    },
  };
}
