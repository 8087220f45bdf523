import {
  deepStrictEqual,
  equal,
  ok,
  rejects,
  throws,
} from "node:assert/strict";
import fc from "fast-check";
import {
  collect,
  type PageRequest,
  pageSearchParams,
  paginate,
  type PaginateOptions,
} from "../src/client/paginate.ts";
import { withFakeTimers } from "./_helpers.ts";
import { delay } from "../src/core/_deadlines.ts";

/** A paged list in memory that records every request it gets. */
function pagedList(total: number, pageDelay = 0) {
  const requests: PageRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const fetchPage = async (request: PageRequest) => {
    requests.push(request);
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    try {
      if (pageDelay > 0) {
        await delay(pageDelay * (1 + (request.page % 3)), request.signal);
      }
      const start = (request.page - 1) * request.limit;
      return Array.from(
        { length: Math.max(0, Math.min(request.limit, total - start)) },
        (_, i) => start + i,
      );
    } finally {
      inFlight--;
    }
  };
  return {
    fetchPage,
    requests,
    get maxInFlight() {
      return maxInFlight;
    },
  };
}

/** `count` statuses of three, none the same as the one before, in no turn: each next one by a hash of its place. */
function statuses(count: number): string[] {
  const names = ["new", "paid", "void"];
  let at = 0;
  return Array.from({ length: count }, (_, i) => {
    at = (at + 1 + (Math.imul(i + 1, 2654435761) >>> 31)) % 3;
    return names[at]!;
  });
}

async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

const range = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => from + i);

Deno.test("paginate() yields every item in order and stops after a short page", async () => {
  const list = pagedList(120);
  deepStrictEqual(await all(paginate(list.fetchPage)), range(0, 120));
  deepStrictEqual(list.requests.map((r) => [r.page, r.limit]), [
    [1, 50],
    [2, 50],
    [3, 50],
  ]);
});

Deno.test("paginate() asks for one empty page when the total is a multiple of limit", async () => {
  const list = pagedList(100);
  equal((await all(paginate(list.fetchPage))).length, 100);
  equal(list.requests.length, 3);
});

Deno.test("paginate() sends sort options only when given", async () => {
  const list = pagedList(10);
  await all(paginate(list.fetchPage, { limit: 20, page: 1 }));
  const [plain] = list.requests;
  ok(plain && !("sortBy" in plain) && !("sortDirection" in plain));
  ok(plain.signal instanceof AbortSignal);
  await all(
    paginate(list.fetchPage, { sortBy: "creationDate", sortDirection: "DESC" }),
  );
  equal(list.requests[1]?.sortBy, "creationDate");
  equal(list.requests[1]?.sortDirection, "DESC");
});

Deno.test("paginate() hands its priority to every page request, only when given, and refuses one Fetch does not know", async () => {
  const list = pagedList(25);
  await all(paginate(list.fetchPage, { limit: 10 }));
  ok(list.requests.every((request) => !("priority" in request)));
  await all(paginate(list.fetchPage, { limit: 10, priority: "low" }));
  deepStrictEqual(
    list.requests.slice(3).map((request) => request.priority),
    ["low", "low", "low"],
  );
  throws(
    () =>
      paginate(list.fetchPage, {
        priority: "background" as "low",
      }),
    { name: "TypeError", option: "priority" },
  );
});

Deno.test("paginate() starts at the given page", async () => {
  const list = pagedList(25);
  deepStrictEqual(
    await all(paginate(list.fetchPage, { limit: 10, page: 2 })),
    range(10, 25),
  );
  deepStrictEqual(list.requests.map((r) => r.page), [2, 3]);
});

Deno.test("paginate() requests no page beyond maxItems or maxPages", async () => {
  const list = pagedList(1000);
  deepStrictEqual(
    await all(paginate(list.fetchPage, { limit: 50, maxItems: 60 })),
    range(0, 60),
  );
  equal(list.requests.length, 2);
  // [options, items, pages requested]
  for (
    const [options, items, pages] of [
      [{ limit: 50, maxItems: 50 }, 50, 1],
      [{ maxItems: 0 }, 0, 0],
      [{ limit: 10, maxPages: 3 }, 30, 3],
    ] as const
  ) {
    const list = pagedList(1000);
    equal((await all(paginate(list.fetchPage, options))).length, items);
    equal(list.requests.length, pages, JSON.stringify(options));
  }
});

Deno.test("paginate() asks no page past Number.MAX_SAFE_INTEGER, whatever maxPages says (r216b F1: page 2**53 asked for ever)", async () => {
  const top = Number.MAX_SAFE_INTEGER;
  for (
    const [page, maxPages] of [[top, 4], [top - 1, 3], [top - 2, Infinity]]
  ) {
    const asked: number[] = [];
    const fetchPage = (request: PageRequest) => {
      asked.push(request.page);
      return Promise.resolve([request.page]); // a full page each time, never the same
    };
    const options = { limit: 1, page: page!, maxPages: maxPages! };
    const items = await collect(paginate(fetchPage, options), { maxItems: 50 });
    deepStrictEqual(asked, range(page!, top + 1), `${page}, ${maxPages}`);
    deepStrictEqual(items, asked);
  }
});

Deno.test("paginate() stops without a further request when the caller breaks", async () => {
  const list = pagedList(1000);
  for await (const item of paginate(list.fetchPage, { limit: 10 })) {
    if (item === 9) break;
  }
  equal(list.requests.length, 1);
});

Deno.test("paginate() keeps `concurrency` requests in flight and yields in order", () =>
  withFakeTimers(async (timers) => {
    const list = pagedList(1000, 3);
    const pageSignals: AbortSignal[] = [];
    const tracked = (request: PageRequest) => {
      pageSignals.push(request.signal!);
      return list.fetchPage(request);
    };
    const crawl = all(paginate(tracked, { limit: 50, concurrency: 4 }));
    await timers.runAllAsync();
    const items = await crawl;
    deepStrictEqual(items, range(0, 1000));
    equal(list.maxInFlight, 4);
    // Pages 21 (empty) plus at most 3 past it were requested; those past it were aborted.
    ok(list.requests.length <= 21 + 3, `${list.requests.length} requests`);
    const pastEnd = pageSignals.slice(21);
    ok(pastEnd.every((signal) => signal.aborted));
    ok(pageSignals.slice(0, 21).every((signal) => !signal.aborted));
  }));

Deno.test("paginate() aborts the pages in flight when the caller breaks", () =>
  withFakeTimers(async (timers) => {
    const list = pagedList(1000, 2);
    const signals: AbortSignal[] = [];
    const run = (async () => {
      for await (
        const item of paginate((request) => {
          signals.push(request.signal!);
          return list.fetchPage(request);
        }, { limit: 10, concurrency: 3 })
      ) {
        if (item === 0) break;
      }
    })();
    await timers.runAllAsync();
    await run;
    equal(signals.length, 3);
    ok(signals.slice(1).every((signal) => signal.aborted));
  }));

Deno.test("paginate() pages items that are no JSON data to their end: class instances, Maps, symbols, BigInts, cycles (r178b F2: a false repeated-page after 2 pages, or a TypeError naming nothing)", async () => {
  class Row {
    readonly #n: number;
    constructor(n: number) {
      this.#n = n;
    }
    get n() {
      return this.#n;
    }
  }
  const kinds: Record<string, (n: number) => unknown> = {
    "class instances": (n) => new Row(n),
    "Maps": (n) => new Map([["n", n]]),
    "symbols": (n) => Symbol(String(n)),
    "BigInts": (n) => BigInt(n),
    "cycles": (n) => {
      const item: Record<string, unknown> = { n };
      item.self = item;
      return item;
    },
  };
  for (const [kind, make] of Object.entries(kinds)) {
    const items = Array.from({ length: 10 }, (_, n) => make(n));
    const fetchPage = ({ page, limit }: PageRequest) =>
      Promise.resolve(items.slice((page - 1) * limit, page * limit));
    const got = await collect(paginate(fetchPage, { limit: 2 }), {
      maxItems: 100,
    });
    equal(got.length, 10, kind);
    deepStrictEqual(got, items, kind);
  }
});

Deno.test("paginate() pages to their end lists whose values repeat, pages of one item, and pages that share their ends with earlier ones (r179 R1: a page's size and ends alone ended them as repeated)", async () => {
  const lists: [string, unknown[], number][] = [
    ["strings", ["US", "DE", "US", "FR", "GB", "IT", "US", "JP", "US"], 3],
    ["numbers", [0, 1, 0, 5, 6, 7, 0, 2, 0, 0, 3, 0], 3],
    [
      "records",
      Array.from({ length: 30 }, (_, i) => ({ n: i % 3 ? i : 0 })),
      3,
    ],
    ["limit 1", [true, false, true, false, true, false, true], 1],
    ["counts", [5, 4, 5, 3, 5, 4, 5, 3, 5], 1],
    // r217b F2: 300 statuses of 3, each met twice before 64 pages in a row, ended as a rotation at item 70.
    // Two Maps are two items, though each writes as {} (r179 R2).
    ["Maps", ["x", new Map([["a", 1]]), "y", "x", new Map([["b", 2]]), "y"], 3],
  ];
  for (const [kind, items, limit] of lists) {
    const fetchPage = ({ page, limit }: PageRequest) =>
      Promise.resolve(items.slice((page - 1) * limit, page * limit));
    const got = await collect(paginate(fetchPage, { limit }), {
      maxItems: 1000,
    });
    deepStrictEqual(got, items, kind);
  }
});

Deno.test("paginate() ends a list of limit 1 whose values repeat for 64 pages in a row, each met twice before, as it ends one with two alike in a row: such a list cannot be told from a server switching among a few answers (r220a F1); a larger limit pages it to its end", async () => {
  const items = statuses(300);
  const fetchPage = ({ page, limit }: PageRequest) =>
    Promise.resolve(items.slice((page - 1) * limit, page * limit));
  await rejects(
    collect(paginate(fetchPage, { limit: 1 }), { maxItems: 1000 }),
    (error: Error & { reason?: string }) => error.reason === "repeated-page",
  );
  const whole = collect(paginate(fetchPage, { limit: 50 }), { maxItems: 1000 });
  deepStrictEqual(await whole, items);
});

Deno.test("paginate() ends a list whose server answers the same Dates on every page, made anew each time (r217b F4: Dates compared by identity paged for ever)", async () => {
  for (const limit of [1, 2]) {
    let requests = 0;
    const fetchPage = () => {
      requests++;
      return Promise.resolve([new Date(0), new Date(1)].slice(0, limit));
    };
    await rejects(
      collect(paginate(fetchPage, { limit }), { maxItems: 100 }),
      (error: Error & { reason?: string }) => error.reason === "repeated-page",
    );
    equal(requests, 2);
  }
});

Deno.test("paginate() drops repeated items with dedupeBy", async () => {
  // Offset paging while an item is inserted at the head repeats the last item of each page.
  const pages = [[5, 4, 3], [3, 2, 1], [1, 0]];
  const fetchPage = ({ page }: PageRequest) =>
    Promise.resolve(pages[page - 1] ?? []);
  deepStrictEqual(await all(paginate(fetchPage, { limit: 3 })), [
    5,
    4,
    3,
    3,
    2,
    1,
    1,
    0,
  ]);
  deepStrictEqual(
    await all(paginate(fetchPage, { limit: 3, dedupeBy: (n) => n })),
    [5, 4, 3, 2, 1, 0],
  );
  deepStrictEqual(
    await all(
      paginate(fetchPage, { limit: 3, dedupeBy: (n) => n, maxItems: 4 }),
    ),
    [5, 4, 3, 2],
  );
});

Deno.test("paginate() ends with the signal's reason when aborted", async (t) => {
  const reason = new Error("caller stopped");

  await t.step("before the first page: no request", async () => {
    const list = pagedList(100);
    await rejects(
      all(paginate(list.fetchPage, { signal: AbortSignal.abort(reason) })),
      (error) => error === reason,
    );
    equal(list.requests.length, 0);
  });

  await t.step("while a page is in flight: its signal aborts too", async () => {
    const controller = new AbortController();
    let pageSignal: AbortSignal | undefined;
    const never = (request: PageRequest) => {
      pageSignal = request.signal;
      return new Promise<number[]>(() => {}); // ignores its signal on purpose
    };
    const pending = all(paginate(never, { signal: controller.signal }));
    while (pageSignal === undefined) await Promise.resolve();
    controller.abort(reason);
    await rejects(pending, (error) => error === reason);
    ok(pageSignal?.aborted);
  });

  await t.step("between items", async () => {
    const controller = new AbortController();
    const list = pagedList(100);
    const seen: number[] = [];
    await rejects(
      (async () => {
        for await (
          const item of paginate(list.fetchPage, { signal: controller.signal })
        ) {
          seen.push(item);
          if (item === 2) controller.abort(reason);
        }
      })(),
      (error) => error === reason,
    );
    deepStrictEqual(seen, [0, 1, 2]);
  });
});

Deno.test("paginate() passes on a page's failure and aborts the others", () =>
  withFakeTimers(async (timers) => {
    const signals: AbortSignal[] = [];
    const failure = new Error("page 2 failed");
    const fetchPage = async (request: PageRequest) => {
      signals.push(request.signal!);
      await delay(request.page === 2 ? 1 : 20, request.signal);
      if (request.page === 2) throw failure;
      return new Array(request.limit).fill(request.page);
    };
    const crawl = all(paginate(fetchPage, { limit: 2, concurrency: 3 }));
    crawl.catch(() => {});
    await timers.runAllAsync();
    await rejects(crawl, (e) => e === failure);
    ok(signals[2]?.aborted);
  }));

Deno.test("paginate() rejects a page that is not an array with TypeError", async () => {
  const fetchPage = () => Promise.resolve({ items: [] } as unknown as number[]);
  await rejects(all(paginate(fetchPage)), {
    name: "TypeError",
    message: "Cannot paginate: page 1 is not an array: received object",
  });
});

Deno.test("paginate() refuses bad options before any request, naming the option", () => {
  const list = pagedList(10);
  const cases: [PaginateOptions<number>, ErrorConstructor, string][] = [
    [{ limit: 0 }, RangeError, "limit"],
    [{ limit: 2.5 }, RangeError, "limit"],
    [{ page: 0 }, RangeError, "page"],
    [{ concurrency: -1 }, RangeError, "concurrency"],
    [{ concurrency: 65 }, RangeError, "concurrency"],
    [{ maxItems: -1 }, RangeError, "maxItems"],
    [{ maxPages: NaN }, RangeError, "maxPages"],
    [{ sortDirection: "asc" as "ASC" }, TypeError, "sortDirection"],
    [{ sortBy: "" }, TypeError, "sortBy"],
    [{ dedupeBy: 1 as unknown as () => 1 }, TypeError, "dedupeBy"],
    [{ signal: {} as AbortSignal }, TypeError, "signal"],
  ];
  for (const [options, Kind, option] of cases) {
    throws(() => paginate(list.fetchPage, options), (error: unknown) => {
      ok(error instanceof Kind, String(error));
      equal((error as { option?: string }).option, option);
      return true;
    });
  }
  throws(
    () => paginate(null as unknown as () => Promise<number[]>),
    (error: unknown) =>
      error instanceof TypeError &&
      (error as { option?: string }).option === "fetchPage",
  );
  equal(list.requests.length, 0);
});

Deno.test("pageSearchParams() writes the service's parameter names", () => {
  equal(pageSearchParams({ page: 3, limit: 20 }).toString(), "limit=20&page=3");
  equal(
    pageSearchParams({
      page: 1,
      limit: 5,
      sortBy: "name",
      sortDirection: "ASC",
    }).toString(),
    "limit=5&page=1&sortBy=name&sortDirection=ASC",
  );
});

Deno.test("pageSearchParams() refuses a request built by hand that paginate() would refuse, typed and naming the field (r216b F3: page -1 was written as it was)", () => {
  const bad: [Partial<PageRequest>, ErrorConstructor, string][] = [
    [{ page: -1 }, RangeError, "page"],
    [{ page: 0 }, RangeError, "page"],
    [{ limit: 2.5 }, RangeError, "limit"],
    [{ limit: Infinity }, RangeError, "limit"],
    [{ page: "2" as unknown as number }, TypeError, "page"],
    [{ sortDirection: "asc" as "ASC" }, TypeError, "sortDirection"],
    [{ sortBy: "-date" }, TypeError, "sortBy"],
    [{ sortBy: " " }, TypeError, "sortBy"],
    [{ priority: "urgent" as "high" }, TypeError, "priority"],
  ];
  for (const [fields, kind, option] of bad) {
    throws(
      () => pageSearchParams({ page: 1, limit: 10, ...fields }),
      (error: Error) =>
        error instanceof kind && Reflect.get(error, "option") === option,
      JSON.stringify(fields),
    );
  }
  throws(
    () => pageSearchParams(null as unknown as PageRequest),
    (error: Error) =>
      error instanceof TypeError && Reflect.get(error, "option") === "request",
  );
});

Deno.test("collect() stops at its cap and needs one", async () => {
  const list = pagedList(1_000_000);
  deepStrictEqual(
    await collect(paginate(list.fetchPage, { limit: 10 }), { maxItems: 25 }),
    range(0, 25),
  );
  equal(list.requests.length, 3);
  deepStrictEqual(
    await collect(paginate(pagedList(3).fetchPage), { maxItems: 10 }),
    [0, 1, 2],
  );
  deepStrictEqual(await collect(paginate(list.fetchPage), { maxItems: 0 }), []);
  await rejects(
    collect(paginate(list.fetchPage), {} as { maxItems: number }),
    TypeError, // none given: no number
  );
  await rejects(
    collect(paginate(list.fetchPage), { maxItems: -1 }),
    (error: unknown) =>
      error instanceof RangeError &&
      (error as { option?: string }).option === "maxItems",
  );
});

Deno.test("paginate() yields exactly the expected items with the expected requests, for any input", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.nat(300),
      fc.integer({ min: 1, max: 40 }),
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 1, max: 5 }),
      fc.option(fc.nat(120), { nil: undefined }),
      fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
      async (total, limit, page, concurrency, maxItems, maxPages) => {
        const list = pagedList(total);
        const options = {
          limit,
          page,
          concurrency,
          ...(maxItems === undefined ? {} : { maxItems }),
          ...(maxPages === undefined ? {} : { maxPages }),
        };
        const items = await all(paginate(list.fetchPage, options));
        const start = (page - 1) * limit;
        const available = Math.max(0, total - start);
        const pageCap = maxPages === undefined ? Infinity : maxPages * limit;
        const expected = Math.min(available, maxItems ?? Infinity, pageCap);
        deepStrictEqual(items, range(start, start + expected));
        // Pages that hold the items, one more to see the end, none past a cap.
        const needed = Math.min(
          Math.floor(available / limit) + 1,
          maxPages ?? Infinity,
          maxItems === undefined ? Infinity : Math.ceil(maxItems / limit),
        );
        const requested = new Set(list.requests.map((r) => r.page)).size;
        ok(requested >= needed, `requested ${requested} < needed ${needed}`);
        ok(
          requested <= needed + concurrency - 1,
          `requested ${requested} > ${needed} + ${concurrency - 1}`,
        );
        if (concurrency === 1) equal(requested, needed);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("paginate() stops cleanly on a break or an abort, for any input", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 200 }),
      fc.integer({ min: 1, max: 30 }),
      fc.integer({ min: 1, max: 4 }),
      fc.nat(150),
      fc.boolean(),
      async (total, limit, concurrency, stopAfter, abort) => {
        const list = pagedList(total);
        const signals: AbortSignal[] = [];
        const controller = new AbortController();
        const reason = new Error("stop");
        const seen: number[] = [];
        const tracked = (request: PageRequest) => {
          signals.push(request.signal!);
          return list.fetchPage(request);
        };
        const iterate = async () => {
          for await (
            const item of paginate(tracked, {
              limit,
              concurrency,
              signal: controller.signal,
            })
          ) {
            seen.push(item);
            if (seen.length > stopAfter) {
              if (abort) controller.abort(reason);
              else break;
            }
          }
        };
        if (abort && stopAfter < total) {
          await rejects(iterate(), (error) => error === reason);
        } else {
          await iterate();
        }
        const expected = Math.min(total, stopAfter + 1);
        deepStrictEqual(seen, range(0, expected), "items in order, none twice");
        const neededPages = Math.floor((expected - 1) / limit) + 1;
        ok(
          list.requests.length <= neededPages + concurrency,
          `${list.requests.length} requests for ${neededPages} pages`,
        );
        if (expected < total) {
          ok(
            signals.slice(neededPages).every((signal) => signal.aborted),
            "pages past the stop are aborted",
          );
        }
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("paginate() refuses a page of more items than 'limit' (a source that ignores it), at the first: a source that ignored 'page' too paged for ever (r77 F2, r78 F3)", async () => {
  let requests = 0;
  const everything = Array.from({ length: 120 }, (_, i) => i);
  const pages = paginate(() => {
    requests++;
    return Promise.resolve(everything);
  }, { limit: 50 });
  await rejects(collect(pages, { maxItems: 1_000 }), TypeError);
  equal(requests, 1);
});
