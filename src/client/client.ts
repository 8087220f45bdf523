import type { TokenProvider } from "../token/mod.ts";
import { pathCache } from "./_path.ts";
import { listUnder, pagesUnder } from "./_list.ts";
import type { ListOptions, Page } from "./pages.ts";
import { clientConfig } from "./_config.ts";
import type { ClientOptions } from "./options.ts";
import { clientSecret, refusalShown, sendExchange } from "./_send.ts";

/**
 * A client bound to one environment and one token provider.
 *
 * @example Passing a client to code that needs the API
 * ```ts
 * import { createClient, type PartnerClient } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * async function countOrganizations(client: PartnerClient): Promise<number> {
 *   let count = 0;
 *   for await (const _ of client.list("organizations")) count++;
 *   return count;
 * }
 * await using api = await startFakePartnerApi({ items: { organizations: 3 } });
 * equal(await countOrganizations(createClient({ environment: api.environment, ...api.credentials })), 3);
 * ```
 */
export interface PartnerClient {
  /** The provider whose tokens the client sends. */
  readonly tokenProvider: TokenProvider;
  /**
   * Sends a request under the API base (`"x"` and `"/x"` both mean `{baseUrl}x`) with the token.
   * Rejects with `TypeError` for an address outside the base (nothing sent), `ApiError` (`status` 0,
   * the failure as `cause`) when no answer came after the retries, or the signal's reason.
   */
  fetch(path: string | URL, init?: RequestInit): Promise<Response>;
  /** Like {@linkcode PartnerClient.fetch}, under the card-data (PCI) base. */
  pciFetch(path: string | URL, init?: RequestInit): Promise<Response>;
  /**
   * Iterates over a paged list under the API base.
   * @throws {TypeError} At once, for a path outside the base or bad options.
   * @throws {ApiError} While iterating: an error status, a page not JSON or without items, no answer.
   */
  list<T = unknown>(
    path: string,
    options?: ListOptions<T>,
  ): AsyncIterableIterator<T>;
  /**
   * Iterates over the pages of a paged list (the walk of `list`): each answered page once, also an
   * empty one, as a frozen {@linkcode Page}.
   * @throws {TypeError} At once, for a path outside the base or bad options.
   * @throws {ApiError} While iterating, as `list` does.
   */
  pages<T = unknown>(
    path: string,
    options?: ListOptions<T>,
  ): AsyncIterableIterator<Page<T>>;
}

/**
 * Creates a client for one environment. Every request gets `Authorization: Bearer <token>` in place
 * of the caller's (other headers kept), and:
 *
 * - addresses outside the environment's bases are refused before sending (`%2F`, `%5C`, `..` too);
 * - idempotent requests (GET, HEAD, OPTIONS, PUT, DELETE) retry after a network error, a timeout,
 *   408, 429, 500, 502, 503 or 504, with backoff and jitter, honouring `Retry-After`;
 * - the first 401 in an hour (per provider) renews the token and sends once more (if the body can
 *   be sent again); other 401s that hour are returned as they are, so a path that always answers
 *   401 cannot drain the quota;
 * - redirects are followed only for GET and HEAD, under the same base.
 * @throws {TypeError} When the environment breaks `defineEnvironment`'s rules, the provider is for
 * another token URL or audience, or neither or both of a provider and credentials are given.
 * @throws {RangeError} When a time limit or retry option is out of range.
 *
 * @example Reading card data from the PCI origin
 * ```ts
 * import { createClient } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const response = await client.pciFetch("cards/ch_000001");
 * const card = await response.json();
 * equal(card.cardholderID, "ch_000001");
 * ```
 */
export function createClient(options: ClientOptions): PartnerClient {
  const { environment, context } = clientConfig(options);
  const { baseUrl, pciBaseUrl } = environment;
  const fetchUnder = (base: URL, kind: "api" | "pci", what: string) => {
    const resolve = pathCache(base, what, clientSecret(context));
    return (path: string | URL, init: RequestInit = NO_INIT) => {
      try {
        return sendExchange(context, {
          base,
          kind,
          url: resolve(path),
          init,
          context: what,
          finish: asIs,
        });
      } catch (error) {
        // A bad address or init is a rejection, like every other failure of fetch: it may quote a token or the secret.
        return Promise.reject(refusalShown(context, error));
      }
    };
  };
  return {
    tokenProvider: context.tokenProvider,
    fetch: fetchUnder(baseUrl, "api", "Cannot fetch"),
    pciFetch: fetchUnder(pciBaseUrl, "pci", "Cannot fetch card data"),
    list: <T>(path: string, listOptions: ListOptions<T> = {}) =>
      listUnder(context, baseUrl, path, listOptions),
    pages: <T>(path: string, listOptions: ListOptions<T> = {}) =>
      pagesUnder(context, baseUrl, path, listOptions),
  };
}

// Made once: a call allocates only what is its own.
const asIs = (response: Response) => response;
const NO_INIT: RequestInit = Object.freeze({});
