// The public types of a client's lists: the options of `list` and `pages`, and the pages yielded.

import type { PaginateOptions } from "./page_types.ts";

/**
 * Options of `PartnerClient.list` and `PartnerClient.pages`.
 *
 * @example Filters and a custom envelope
 * ```ts
 * import { createClient, type ListOptions } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * type Organization = { organizationID: string };
 * await using api = await startFakePartnerApi({ items: { organizations: 2 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const options: ListOptions<Organization> = {
 *   query: { country: "DE" }, // sent with every page (the fake ignores filters)
 *   items: (body) => (body as { organizations: Organization[] }).organizations,
 * };
 * const ids = (await Array.fromAsync(client.list("organizations", options))).map((o) => o.organizationID);
 * deepStrictEqual(ids, ["org_000001", "org_000002"]);
 * ```
 */
export interface ListOptions<T> extends PaginateOptions<T> {
  /**
   * Picks the items (an array) out of a page's JSON body; what it throws reaches the caller as it is.
   * @default {the body if it is an array, else its only array-valued property}
   */
  items?: (body: unknown) => readonly T[];
  /** Further query parameters, e.g. filters; not `limit`, `page` or sort. */
  query?: Record<string, string>;
}

/**
 * One page of a list, as `PartnerClient.pages` yields it: a frozen object.
 *
 * @example Writing a list page by page, with what each page cost
 * ```ts
 * import { createClient, type Page } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * type Transaction = { transactionID: string };
 * await using api = await startFakePartnerApi({ items: { transactions: 120 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const pages: AsyncIterable<Page<Transaction>> = client.pages("transactions", { limit: 50 });
 * const seen: string[] = [];
 * for await (const page of pages) {
 *   seen.push(`page ${page.page}: ${page.items.length} of ${page.limit}, HTTP ${page.request.status}`);
 * }
 * deepStrictEqual(seen, ["page 1: 50 of 50, HTTP 200", "page 2: 50 of 50, HTTP 200", "page 3: 20 of 50, HTTP 200"]);
 * ```
 */
export interface Page<T> {
  /** The page's items less those `dedupeBy` dropped, cut where `until` or `maxItems` ended the list. */
  readonly items: readonly T[];
  /** The page number, from 1. */
  readonly page: number;
  /** Items per page that were asked for (`limit`). */
  readonly limit: number;
  /** The request that fetched the page. */
  readonly request: RequestMetadata;
}

/**
 * What one page's request was: where it went, what answered, and how many attempts it took.
 *
 * @example Logging the address of each page
 * ```ts
 * import { createClient, type RequestMetadata } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ items: { organizations: 3 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const requests: RequestMetadata[] = [];
 * for await (const page of client.pages("organizations", { limit: 2 })) requests.push(page.request);
 * equal(new URL(requests[1]!.url).search, "?limit=2&page=2");
 * equal(requests[1]!.attempts, 1);
 * ```
 */
export interface RequestMetadata {
  /** The page's address, with its query (it never holds a token: one pasted into the path shows as `[redacted]`, the client secret as `[client_secret]`). */
  readonly url: string;
  /** The answer's HTTP status. */
  readonly status: number;
  /** Requests sent for this page, retries included. */
  readonly attempts: number;
}
