// syncList's promises one by one, against the fake in process: costs,
// refusals, errors, resumption, and the fake's churn.

import {
  createSqliteSink,
  SyncError,
  syncList,
  type SyncOptions,
  type SyncSink,
} from "../src/sync/mod.ts";
import { ApiError } from "../src/core/errors.ts";
import { type InProcess, inProcess, memorySink } from "./_sync_fake.ts";

type Row = Record<string, unknown>;

function equal<T>(actual: T, expected: T, message = "values differ"): void {
  if (actual !== expected) {
    throw new Error(`${message}: ${actual} !== ${expected}`);
  }
}

function ok(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

async function rejects<E extends Error>(
  promise: Promise<unknown>,
  Kind: new (...args: never[]) => E,
): Promise<E> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Kind) return error;
    throw error;
  }
  throw new Error(`expected ${Kind.name}`);
}

const byDate = { id: "transactionID", sortBy: "creationDate" } as const;

/** A run over the fake's transactions by creation date into `sink`, with `more`. */
function syncByDate(
  fake: InProcess,
  sink: SyncSink<Row>,
  more: Partial<SyncOptions<Row>> = {},
) {
  return syncList(fake.client, "transactions", { ...byDate, sink, ...more });
}

Deno.test("syncList without drift: about one request per 1,000 items, then 1 request when nothing is new", async () => {
  const fake = inProcess({ items: { transactions: 5000 } });
  const sink = memorySink<Row>();
  const first = await syncByDate(fake, sink, { limit: 1000 });
  equal(first.written, 5000);
  // 5 pages of 1,000, a tenth more for the windows' overlap, and 2 to see
  // the end: at most 7 requests.
  ok(first.requests <= 7, `${first.requests} requests`);
  const idle = await syncByDate(fake, sink, { limit: 1000, sweep: 0 });
  equal(idle.written, 0);
  ok(idle.requests <= 2, `${idle.requests} requests for nothing new`);
  equal(idle.resumed, false);
});

Deno.test("syncList with one insert, one delete and one append per request stays within 1.5 requests per page", async () => {
  const fake = inProcess({
    items: { transactions: 3000 },
    churn: { append: 1, insertAnywhere: 1, remove: 1 },
  });
  const sink = memorySink<Row>();
  const result = await syncByDate(fake, sink, { limit: 100, maxLimit: 100 });
  // 30 pages of 100, half as many again for the drift, and 2 to see the
  // end: at most 47 requests.
  ok(result.requests <= 47, `${result.requests} requests`);
  for (const [id, writes] of sink.writes) equal(writes, 1, id);
});

Deno.test("syncList finds the largest size the service accepts by its refusals", async () => {
  const fake = inProcess({ items: { transactions: 700 }, maxLimit: 120 });
  const sink = memorySink<Row>();
  const result = await syncByDate(fake, sink, { limit: 50 });
  equal(result.written, 700);
  ok(result.requests <= 14, `${result.requests} requests`);
});

Deno.test("syncList never reads windows under 25 items for a service that refuses larger ones: its 400 ends the run (a largest page of 10 with limit 10 read one page again for ever past 2,520 items, where no window of 10 or fewer overlaps the edge and reads on: r103 F2)", async () => {
  const fake = inProcess({ items: { transactions: 3000 }, maxLimit: 10 });
  fake.beforeList = (request) => {
    if (request > 500) throw new Error("still reading after 500 requests");
  };
  const sink = memorySink<Row>();
  const error = await rejects(syncByDate(fake, sink, { limit: 10 }), ApiError);
  equal(error.status, 400);
  equal(new URL(error.url).searchParams.get("limit"), "25");
  ok(fake.listRequests <= 8, `${fake.listRequests} requests`);
});

Deno.test("syncList copies a list whose service cuts pages to its largest size instead of refusing", async () => {
  for (const items of [700, 90, 3]) {
    const fake = inProcess({
      items: { transactions: items },
      maxLimit: 120,
      beyondMaxLimit: "cut",
    });
    const sink = memorySink<Row>();
    const result = await syncByDate(fake, sink, { limit: 50 });
    equal(sink.rows.size, items);
    ok(
      result.requests <= Math.ceil(items / 50) + 2,
      `${result.requests} requests`,
    );
  }
});

Deno.test("syncList refuses a checkpoint of another list, order or id field before any request", async () => {
  const fake = inProcess({ items: { transactions: 10 } });
  const sink = memorySink<Row>();
  await syncByDate(fake, sink);
  const before = fake.listRequests;
  for (
    const other of [
      { id: "transactionID", sortBy: "amount" },
      { id: "organizationID", sortBy: "creationDate" },
      { ...byDate, query: { currency: "EUR" } },
    ]
  ) {
    const error = await rejects(
      syncList(fake.client, "transactions", { ...other, sink }),
      TypeError,
    );
    equal((error as TypeError & { option: string }).option, "sink");
  }
  const error = await rejects(
    syncList(fake.client, "cardholders", { ...byDate, sink }),
    TypeError,
  );
  equal((error as TypeError & { option: string }).option, "sink");
  equal(fake.listRequests, before, "requests after a refusal");
});

Deno.test("syncList checks its options before anything is read", async () => {
  const fake = inProcess();
  const sink = memorySink<Row>();
  const cases: [
    Record<string, unknown>,
    string,
    typeof TypeError | typeof RangeError,
  ][] = [
    [{ id: "" }, "id", TypeError],
    [{ id: "x", sortBy: 3 }, "sortBy", TypeError],
    [{ id: "x", limit: 0 }, "limit", RangeError],
    [{ id: "x", maxLimit: 10 }, "maxLimit", RangeError],
    // A cost bound no window may keep: refused, not maxLimit raised silently.
    [{ id: "x", limit: 100, maxLimit: 60 }, "limit", RangeError],
    [{ id: "x", concurrency: 65 }, "concurrency", RangeError],
    [{ id: "x", onProgress: 1 }, "onProgress", TypeError],
    [{ id: "x", query: "a=1" }, "query", TypeError],
    [{ id: "x", query: ["x"] }, "query", TypeError],
    [{ id: "x", query: new Map([["a", "b"]]) }, "query", TypeError],
    [{ id: "x", signal: {} }, "signal", TypeError],
    // A clock whose readings are no epoch ms: a checkpoint of them loads no more.
    ...[NaN, -5, 1e16, new Date(0), "1", Object.create(null)].map((
      at,
    ): [Record<string, unknown>, string, typeof TypeError] => [
      { id: "x", now: () => at },
      "now",
      TypeError,
    ]),
  ];
  for (const [options, option, Kind] of cases) {
    const error = await rejects(
      syncList(fake.client, "transactions", { sink, ...options } as never),
      Kind,
    );
    equal((error as Error & { option: string }).option, option);
  }
  const error = await rejects(
    syncList(fake.client, "transactions", { id: "x", sink: {} } as never),
    TypeError,
  );
  equal((error as TypeError & { option: string }).option, "sink");
  equal(fake.listRequests, 0);
});

Deno.test("syncList takes maxDuration: Infinity as its default, unbounded (r39 F8: a RangeError), with the default sweep of 10 windows", async () => {
  const fake = inProcess({ items: { transactions: 30 } });
  const sink = memorySink<Row>();
  const options = { id: "transactionID", sink, maxDuration: Infinity };
  const first = await syncList(fake.client, "transactions", options);
  equal(first.inserted, 30);
  const again = await syncList(fake.client, "transactions", options);
  equal(again.sweepLeft, 0); // 10 windows cover 30 items: one cycle
});

Deno.test("syncList refuses a path holding a query or fragment before any request, TypeError naming 'path' (a path's filter bypassed 'query', the copy's identity, and its page parameters were replaced unseen)", async () => {
  const fake = inProcess({ items: { transactions: 10 } });
  using sink = createSqliteSink<Row>(":memory:", { table: "transactions" });
  const paths = [
    "transactions?status=settled",
    "transactions?limit=5",
    "transactions?sortBy=amount",
    "transactions?",
    "transactions#frag",
  ];
  for (const path of paths) {
    const error = await rejects(
      syncList(fake.client, path, { ...byDate, sink }),
      TypeError,
    );
    equal((error as TypeError & { option: string }).option, "path", path);
  }
  equal(fake.listRequests, 0, "requests after a refusal");
  equal(await sink.load(), undefined, "the copy after a refusal");
  const run = await syncList(fake.client, "/transactions", {
    ...byDate,
    sink,
    query: { status: "settled" },
  });
  equal(run.written, 10, "the filter given as 'query'");
});

Deno.test("a clock read in fractions of a ms (performance.timeOrigin + performance.now()) keeps whole ms in the checkpoint: the next run on the default clock loads the copy", async () => {
  const fake = inProcess({ items: { transactions: 30 } });
  using sink = createSqliteSink<Row>(":memory:", { table: "transactions" });
  const options = { ...byDate, sink, sweep: Infinity };
  const now = () => performance.timeOrigin + performance.now() + 0.5;
  await syncList(fake.client, "transactions", { ...options, now });
  const run = await syncList(fake.client, "transactions", options);
  equal(Number.isInteger(run.verifiedAt), true);
  equal((await sink.load())?.cycles, 2);
});

Deno.test("syncList ends with SyncError on an item without id (or an empty one) or out of order, nothing past the last good batch written", async () => {
  const fake = inProcess({ items: { transactions: 120 } });
  const sink = memorySink<Row>();
  const missing = await rejects(
    syncList(fake.client, "transactions", {
      id: "nope",
      sortBy: "creationDate",
      sink,
    }),
    SyncError,
  );
  equal(missing.reason, "missing-id");
  equal(sink.rows.size, 0);
  // An empty id is none (it failed "repeated-page": every item one row).
  const empty = await rejects(
    syncList(fake.client, "transactions", { ...byDate, id: () => "", sink }),
    SyncError,
  );
  equal(empty.reason, "missing-id");
  equal(sink.rows.size, 0);
  // The default order of transactions is by date, not by id: asked by id
  // (a function id sends no sortBy), the pages come out of order.
  const unordered = await rejects(
    syncList(fake.client, "transactions", {
      id: (row: Row) => String(row.transactionID),
      sink: memorySink<Row>(),
    }),
    SyncError,
  );
  equal(unordered.reason, "unordered");
});

Deno.test("syncList resumes after a failed write from the last committed batch, writing nothing twice", async () => {
  const fake = inProcess({ items: { transactions: 400 } });
  const sink = memorySink<Row>();
  sink.failAt = 3;
  const options = { ...byDate, sink, limit: 25, maxLimit: 50 };
  await rejects(syncList(fake.client, "transactions", options), Error);
  const committed = sink.rows.size;
  ok(committed > 0 && committed < 400, `${committed} committed`);
  sink.failAt = undefined;
  const resumed = await syncList(fake.client, "transactions", options);
  equal(resumed.resumed, true);
  equal(sink.rows.size, 400);
  for (const [id, writes] of sink.writes) equal(writes, 1, id);
});

Deno.test("where the service's largest page is limit itself, the head's new items cost at most 1.3 × ⌈k / limit⌉ + 2 list requests (docs/sync.md, Incremental), in both orders", async () => {
  // 1.3 × ⌈3000 / limit⌉ + 2 list requests at most: 80 at limit 50, 41 at 100.
  const cases = [[50, "ASC", 80], [100, "DESC", 41]] as const;
  for (const [limit, sortDirection, most] of cases) {
    const fake = inProcess({
      items: { transactions: 1000 },
      maxLimit: limit,
    });
    const sink = memorySink<Row>();
    const options = { limit, maxLimit: limit, sortDirection, sweep: 0 };
    await syncByDate(fake, sink, options);
    fake.service.insertTransactions(3000);
    const before = fake.listRequests;
    equal((await syncByDate(fake, sink, options)).inserted, 3000);
    const requests = fake.listRequests - before;
    ok(requests <= most, `limit ${limit}: ${requests} list requests`);
  }
});

/** A copy of 500 transactions synced newest first (windows of 100), then `added` new ones in the list. */
async function descendingCopy(added: number) {
  const fake = inProcess({ items: { transactions: 500 } });
  const sink = memorySink<Row>();
  const options = { sortDirection: "DESC" as const, sweep: 0, maxLimit: 100 };
  await syncByDate(fake, sink, options);
  fake.service.insertTransactions(added);
  return { fake, sink, options, controller: new AbortController() };
}

Deno.test("newest first, a run that resumes a head pass under way also brings in the items added since that pass began: every item that existed for the whole run is in the copy", async () => {
  const { fake, sink, options, controller } = await descendingCopy(1000);
  let commits = 0;
  await rejects(
    syncByDate(fake, sink, {
      ...options,
      maxDeletes: 1, // nothing held back: the head commits as it reads
      signal: controller.signal,
      onProgress: () => ++commits === 3 && controller.abort(),
    }),
    Error,
  );
  ok(sink.checkpoint?.head !== undefined, "a head pass under way");
  fake.service.insertTransactions(5);
  const resumed = await syncByDate(fake, sink, options);
  equal(resumed.resumed, true);
  equal(sink.rows.size, 1505);
});

Deno.test("newest first, a head stopped while it holds back windows (until one reaches the copy) commits all but the last 8 it read", async () => {
  const { fake, sink, options, controller } = await descendingCopy(3000);
  const stopAt = fake.listRequests + 20;
  fake.beforeList = (n) => n === stopAt ? controller.abort() : undefined;
  await rejects(
    syncByDate(fake, sink, { ...options, signal: controller.signal }),
    Error,
  );
  // 19 windows of about 100 read, each new: at most 8 of them held back.
  ok(sink.rows.size >= 500 + (19 - 8) * 90, `${sink.rows.size} rows`);
});

Deno.test("a head whose list moves a lot between two requests (300 of the new items it committed removed, or 250 newer items arriving) holds every item that existed for the whole run, in both orders", async () => {
  for (const sortDirection of ["ASC", "DESC"] as const) {
    for (const move of ["remove", "arrive"] as const) {
      const fake = inProcess({ items: { transactions: 1000 } });
      const sink = memorySink<Row>();
      const options = { sortDirection, sweep: 0, maxLimit: 100 };
      await syncByDate(fake, sink, options);
      fake.service.insertTransactions(3000);
      const at = fake.listRequests + 3;
      const removed = Array.from(
        { length: 300 },
        (_, i) => `tx_${String(1001 + i).padStart(6, "0")}`,
      );
      fake.beforeList = (n) => {
        if (n !== at) return;
        if (move === "arrive") fake.service.insertTransactions(250);
        else for (const id of removed) fake.service.remove("transactions", id);
      };
      await syncByDate(fake, sink, options);
      const missing = Array.from(
        { length: 4000 },
        (_, i) => `tx_${String(i + 1).padStart(6, "0")}`,
      ).filter((id) => !removed.includes(id) && !sink.rows.has(id));
      equal(missing.length, 0, `${sortDirection}, ${move}`);
    }
  }
});

Deno.test("syncList with sweep: Infinity reads the list again and picks up items inserted behind the checkpoint", async () => {
  const fake = inProcess({ items: { transactions: 60 } });
  const sink = memorySink<Row>();
  await syncByDate(fake, sink);
  fake.service.insert("transactions", {
    transactionID: "tx_000001_1",
    creationDate: "2025-01-01T00:00:00.000Z",
  });
  const incremental = await syncByDate(fake, sink, { sweep: 0 });
  equal(incremental.written, 0);
  const progress: number[] = [];
  const full = await syncByDate(fake, sink, {
    sweep: Infinity,
    onProgress: (p) => {
      progress.push(p.written);
      throw new Error("ignored");
    },
  });
  equal(full.written, 1);
  equal(full.inserted, 1);
  ok(sink.rows.has("tx_000001_1"), "the item behind the checkpoint");
  equal(progress.at(-1), 1);
  equal(sink.checkpoint?.full, false);
});

Deno.test("syncList stops on its signal before the next commit, keeping what is committed", async () => {
  const fake = inProcess({ items: { transactions: 300 } });
  const sink = memorySink<Row>();
  const controller = new AbortController();
  let commits = 0;
  // Aborted as its first window commits: windows in flight, none commits after.
  const aborting: SyncSink<Row> = {
    ...sink,
    async write(...args) {
      const report = await sink.write(...args);
      if (++commits === 1) controller.abort(new Error("stop"));
      return report;
    },
  };
  const error = await rejects(
    syncByDate(fake, aborting, {
      limit: 25,
      maxLimit: 50,
      concurrency: 2,
      signal: controller.signal,
    }),
    Error,
  );
  equal(error.message, "stop");
  equal(commits, 1);
  equal(sink.checkpoint?.complete, false);
  equal(sink.rows.size, 50);
});

Deno.test("the fake's insert and remove change a list in every order; bad calls are TypeErrors", async () => {
  const fake = inProcess({ items: { organizations: 3 } });
  const read = async (sortBy: string) => {
    const ids: unknown[] = [];
    for await (
      const row of fake.client.list<Row>("organizations", {
        sortBy,
        sortDirection: "ASC",
      })
    ) ids.push(row.organizationID);
    return ids;
  };
  await read("organizationID");
  fake.service.insert("organizations", {
    organizationID: "org_000001_x",
    companyName: "Aardvark",
    creationDate: "2030-01-01T00:00:00.000Z",
  });
  equal((await read("organizationID"))[1], "org_000001_x");
  equal((await read("companyName"))[0], "org_000001_x");
  equal(fake.service.remove("organizations", "org_000002"), true);
  equal(fake.service.remove("organizations", "org_000002"), false);
  equal(
    (await read("organizationID")).join(),
    "org_000001,org_000001_x,org_000003",
  );
  await rejects(
    Promise.resolve().then(() => fake.service.insert("nope", {})),
    TypeError,
  );
  await rejects(
    Promise.resolve().then(() =>
      fake.service.insert("organizations", { companyName: "x" })
    ),
    TypeError,
  );
  await rejects(
    Promise.resolve().then(() =>
      fake.service.insert("organizations", { organizationID: "org_000001" })
    ),
    TypeError,
  );
});

Deno.test("the fake's churn changes each list on every request for it, from the seed", async () => {
  const fake = inProcess({
    items: { organizations: 10 },
    churn: { append: 2, insertAnywhere: 1, remove: 1 },
  });
  const ids = async () => {
    const seen: string[] = [];
    for await (
      const row of fake.client.list<Row>("organizations", {
        sortBy: "organizationID",
        sortDirection: "ASC",
        limit: 100,
      })
    ) seen.push(String(row.organizationID));
    return seen;
  };
  const first = await ids();
  equal(first.length, 10 + 2 + 1 - 1);
  equal(first.includes("org_000011") || first.includes("org_000012"), true);
  equal(first.some((id) => /^org_\d{6}_\d+$/.test(id)), true);
  equal((await ids()).length, 14);
  let option: unknown;
  try {
    inProcess({ churn: { remove: -1 } });
  } catch (error) {
    option = (error as RangeError & { option: string }).option;
  }
  equal(option, "churn.remove");
});

Deno.test("a sweep the guard refuses says what it read: its progress counts the items read, though none committed (it said 0 items read)", async () => {
  const fake = inProcess({ items: { organizations: 300 } });
  using sink = createSqliteSink<Row>(":memory:", { table: "organizations" });
  const options = { id: "organizationID", sink };
  equal((await syncList(fake.client, "organizations", options)).read, 300);
  for (let i = 1; i <= 150; i++) {
    fake.service.remove("organizations", `org_${String(i).padStart(6, "0")}`);
  }
  const seen: { read: number; written: number }[] = [];
  const error = await rejects(
    syncList(fake.client, "organizations", {
      ...options,
      sweep: Infinity,
      onProgress: (progress) => seen.push(progress),
    }),
    SyncError,
  );
  equal(error.reason, "too-many-deletes");
  // The sweep read the 150 left, each once; it committed none of them.
  equal(seen.at(-1)?.read, 150);
  equal(seen.at(-1)?.written, 0);
});

Deno.test("a head the guard refuses says what it read too, though it commits and records nothing: the list lost every item of the copy, 40 others after them", async () => {
  const fake = inProcess({ items: { organizations: 300 } });
  using sink = createSqliteSink<Row>(":memory:", { table: "organizations" });
  const options = { id: "organizationID", sink, sweep: 0 };
  await syncList(fake.client, "organizations", options);
  for (let i = 1; i <= 300; i++) {
    fake.service.remove("organizations", `org_${String(i).padStart(6, "0")}`);
  }
  for (let i = 1; i <= 40; i++) {
    const organizationID = `org_9${String(i).padStart(5, "0")}`;
    fake.service.insert("organizations", { organizationID, companyName: "x" });
  }
  const seen: { read: number; written: number }[] = [];
  const error = await rejects(
    syncList(fake.client, "organizations", {
      ...options,
      onProgress: (progress) => seen.push(progress),
    }),
    SyncError,
  );
  equal(error.reason, "too-many-deletes");
  equal(seen.at(-1)?.read, 40);
  equal(seen.at(-1)?.written, 0);
});
