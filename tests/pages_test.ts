// Issue 39 "pages as values" and issue 37 "until": client.pages yields the
// walk's pages, list flattens them, and until stops before the first item it
// is true for, with no further page sent. Against the fake and in memory.

import {
  deepStrictEqual,
  equal,
  ok,
  rejects,
  throws,
} from "node:assert/strict";
import { createClient } from "../src/client/mod.ts";
import type { Page } from "../src/client/pages.ts";
import { type PageRequest, paginate } from "../src/client/paginate.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import type { PartnerApiEvent } from "../src/core/events.ts";

type Transaction = { transactionID: string; creationDate: string };

async function fake(transactions: number) {
  const api = await startFakePartnerApi({ items: { transactions } });
  const events: PartnerApiEvent[] = [];
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    onEvent: (event) => void events.push(event),
  });
  return { api, client, events };
}

Deno.test("pages() yields each page once with its number, limit and request, and list() yields the same items", async () => {
  const { api, client } = await fake(120);
  await using _ = api;
  const pages: Page<Transaction>[] = [];
  for await (const page of client.pages<Transaction>("transactions")) {
    pages.push(page);
  }
  deepStrictEqual(pages.map((p) => [p.page, p.items.length, p.limit]), [
    [1, 50, 50],
    [2, 50, 50],
    [3, 20, 50],
  ]);
  for (const page of pages) {
    ok(Object.isFrozen(page) && Object.isFrozen(page.request));
    ok(Object.isFrozen(page.items)); // a value: no push or cut through it
    equal(page.request.status, 200);
    equal(page.request.attempts, 1);
    equal(new URL(page.request.url).searchParams.get("page"), `${page.page}`);
  }
  const items = await Array.fromAsync(client.list<Transaction>("transactions"));
  deepStrictEqual(items, pages.flatMap((p) => p.items));
  equal(api.apiRequests, 6);
});

Deno.test("pages() yields an empty last page: a list whose size is a multiple of limit", async () => {
  const { api, client } = await fake(100);
  await using _ = api;
  const sizes = [];
  for await (const page of client.pages("transactions")) {
    sizes.push(page.items.length);
  }
  deepStrictEqual(sizes, [50, 50, 0]);
});

Deno.test("until: list and pages stop before the first item it is true for, and send no further page", async () => {
  const { api, client } = await fake(500);
  await using _ = api;
  const newestFirst = {
    sortBy: "creationDate",
    sortDirection: "DESC" as const,
    limit: 50,
  };
  const all = await Array.fromAsync(
    client.list<Transaction>("transactions", newestFirst),
  );
  const cut = all[120]!.creationDate; // the 121st newest: 3 pages hold it
  const until = (t: Transaction) => t.creationDate <= cut;
  const before = api.apiRequests;
  const since = await Array.fromAsync(
    client.list<Transaction>("transactions", { ...newestFirst, until }),
  );
  deepStrictEqual(since, all.slice(0, 120));
  equal(api.apiRequests - before, 3);

  const pages = await Array.fromAsync(
    client.pages<Transaction>("transactions", { ...newestFirst, until }),
  );
  deepStrictEqual(pages.map((p) => p.items.length), [50, 50, 20]);
  equal(api.apiRequests - before, 6);
});

Deno.test("until true for the first item: no item, one empty page, one request", async () => {
  const { api, client } = await fake(500);
  await using _ = api;
  const pages = await Array.fromAsync(
    client.pages("transactions", { until: () => true }),
  );
  deepStrictEqual(pages.map((p) => p.items.length), [0]);
  deepStrictEqual(
    await Array.fromAsync(client.list("transactions", { until: () => true })),
    [],
  );
  equal(api.apiRequests, 2);
});

Deno.test("until with pages in flight aborts them and yields nothing past the item", async () => {
  const asked: number[] = [];
  const aborted: number[] = [];
  const fetchPage = (request: PageRequest) => {
    asked.push(request.page);
    request.signal?.addEventListener("abort", () => aborted.push(request.page));
    const start = (request.page - 1) * request.limit;
    return Promise.resolve(
      Array.from({ length: request.limit }, (_, i) => start + i),
    );
  };
  const items = await Array.fromAsync(
    paginate(fetchPage, { limit: 10, concurrency: 4, until: (n) => n >= 15 }),
  );
  deepStrictEqual(items, Array.from({ length: 15 }, (_, i) => i));
  // Four in flight: page 5 was asked once page 1 was taken; page 2 ended
  // the list, and the three still in flight were aborted.
  deepStrictEqual(asked, [1, 2, 3, 4, 5]);
  deepStrictEqual(aborted.sort(), [3, 4, 5]);
});

Deno.test("until counts after dedupeBy and before maxItems", async () => {
  const pages = [[1, 1, 2, 3], [3, 4, 5, 6], [7, 8, 9, 10]];
  const list = (options: Parameters<typeof paginate<number>>[1]) =>
    Array.fromAsync(
      paginate(({ page }) => Promise.resolve(pages[page - 1] ?? []), {
        limit: 4,
        ...options,
      }),
    );
  deepStrictEqual(await list({ dedupeBy: (n) => n, until: (n) => n > 5 }), [
    1,
    2,
    3,
    4,
    5,
  ]);
  deepStrictEqual(await list({ until: (n) => n > 5, maxItems: 3 }), [1, 1, 2]);
});

Deno.test("until that throws ends the list with its error; a bad until is refused before any request", async () => {
  const { api, client } = await fake(60);
  await using _ = api;
  const boom = new Error("boom");
  await rejects(
    Array.fromAsync(client.list("transactions", {
      until: () => {
        throw boom;
      },
    })),
    boom,
  );
  throws(
    () => client.pages("transactions", { until: 5 as never }),
    { name: "TypeError", option: "until" },
  );
  throws(
    () => client.list("transactions", { until: "x" as never }),
    { name: "TypeError", option: "until" },
  );
  equal(api.apiRequests, 1);
});

Deno.test("pages() and list() each tell the listener how the crawl ended", async () => {
  const { api, client, events } = await fake(120);
  await using _ = api;
  await Array.fromAsync(client.pages("transactions"));
  for await (const _item of client.list("transactions", { limit: 100 })) {
    break; // one page read, one item taken
  }
  const crawls = events.filter((event) => event.type === "api.list");
  deepStrictEqual(
    crawls.map((event) => [event.pages, event.items, event.outcome]),
    [[3, 120, "ok"], [1, 1, "ok"]],
  );
});

Deno.test("breaking out of pages() sends no further request", async () => {
  const { api, client } = await fake(500);
  await using _ = api;
  for await (const _page of client.pages("transactions", { concurrency: 1 })) {
    break;
  }
  equal(api.apiRequests, 1);
});
