// The cycle decided once (issue 45), case by case: each test is named after
// the promise it keeps and fails on the code before its fix. The general
// invariant is sync_sweep_property_test.ts's.

import {
  deepStrictEqual,
  equal,
  ok,
  rejects,
  throws,
} from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { setImmediate } from "node:timers";
import { withGlobal } from "@sinonjs/fake-timers";
import { createClient } from "../src/client/mod.ts";
import { createFakePartnerService } from "../src/testing/mod.ts";
import {
  createJsonlSink,
  createPostgresSink,
  createSqliteSink,
  syncList,
  type SyncSink,
} from "../src/sync/mod.ts";
import { seededRandom } from "../src/testing/_list_data.ts";
import { createRateLimiter } from "../src/client/rate_limit.ts";
import {
  freshTarget,
  listOf,
  memorySink,
  type Thing,
  things,
} from "./_sync_fake.ts";

/** Each kind of sink, new, with a way to count its rows. */
async function sinks(name: string) {
  const database = new DatabaseSync(":memory:");
  const path = await freshTarget("sync-cycle", `${name}.jsonl`);
  const memory = memorySink<Thing>();
  const count = async (path: string) =>
    (await Deno.readTextFile(path)).split("\n").filter(Boolean).length;
  return [
    {
      kind: "memory",
      sink: memory as SyncSink<Thing>,
      rows: () => Promise.resolve(memory.rows.size),
      close() {},
    },
    {
      kind: "sqlite",
      sink: createSqliteSink<Thing>(database, { table: "things" }),
      rows: () =>
        Promise.resolve(
          (database.prepare('SELECT count(*) AS n FROM "things"').get() as {
            n: number;
          }).n,
        ),
      close: () => database.close(),
    },
    {
      kind: "jsonl",
      sink: createJsonlSink<Thing>(path),
      rows: () => count(path),
      close() {},
    },
  ];
}

Deno.test("a page cut short inside a sweep and then read again empty is no end in either order: an empty window begun before the edge claims the list ends before an item it holds (the empty read agreed with the cut, and 984 of 1,000 that exist were removed)", async () => {
  for (const sortDirection of ["ASC", "DESC"] as const) {
    for (const copy of await sinks(`cut-then-empty-${sortDirection}`)) {
      const items = things(1000);
      const list = sortDirection === "ASC" ? items : items.toReversed();
      let cutAt = -1;
      const service = listOf(() => list, {
        answer: (page, n) =>
          n === cutAt ? page.slice(0, 16) : n === cutAt + 1 ? [] : page,
      });
      const options = { id: "thingID", sink: copy.sink, maxLimit: 100 };
      const all = { ...options, sortDirection, sweep: Infinity };
      await syncList(service.client, "things", all);
      // The sweep's first window: the run's 2nd request ascending (its head reads the end), 2nd descending (page 1).
      cutAt = service.requests + 2;
      const run = await syncList(service.client, "things", {
        ...all,
        maxDeletes: 1,
      });
      equal(run.deleted, 0, `${copy.kind} ${sortDirection}`);
      equal(await copy.rows(), 1000, `${copy.kind} ${sortDirection}`);
      copy.close();
    }
  }
});

Deno.test("a page cut short inside a sweep is read again, never taken as the end: nothing that exists is removed", async () => {
  for (const copy of await sinks("short-page")) {
    const items = things(1000);
    let cutAt = -1;
    const service = listOf(() => items, {
      answer: (page, n) => n === cutAt ? page.slice(0, 7) : page,
    });
    const options = { id: "thingID", sink: copy.sink, maxLimit: 100 };
    await syncList(service.client, "things", options);
    cutAt = service.requests + 8; // late in the next run's cycle
    const run = await syncList(service.client, "things", {
      ...options,
      sweep: Infinity,
    });
    equal(run.deleted, 0, copy.kind);
    equal(await copy.rows(), 1000, copy.kind);
    copy.close();
  }
});

Deno.test("a list that moved is followed, however far: 300 inserts spread over the range of a service whose largest page is 50 never end a run with 'repeated-page'", async () => {
  const random = seededRandom(45);
  const items = things(1000);
  const sorted = () =>
    [...items].sort((a, b) => a.thingID < b.thingID ? -1 : 1);
  const service = listOf(sorted, { maxLimit: 50 });
  const sink = memorySink<Thing>();
  const options = { id: "thingID", sink };
  await syncList(service.client, "things", options);
  for (let i = 0; i < 300; i++) {
    const id = Math.floor(random() * 999_000);
    items.push({ thingID: `t${String(id).padStart(9, "0")}x` });
  }
  for (let run = 0; run < 3; run++) {
    await syncList(service.client, "things", { ...options, sweep: Infinity });
  }
  equal(sink.rows.size, 1300);
});

for (const share of [0.01, 0.1, 0.3]) {
  Deno.test(`finding the edge after ${share * 100} % of 100,000 items were removed behind it costs at most 12 list requests, and the next run with nothing new at most 2 (the edge found is kept)`, async () => {
    let items = things(100_000, { step: 10 });
    const service = listOf(() => items);
    const sink = memorySink<Thing>();
    const options = { id: "thingID", sink, maxLimit: 1000, sweep: 0 };
    await syncList(service.client, "things", options);
    const removed = share * 100_000;
    // The items just behind the copy's end go: the edge shifts back the most.
    items = [...items.slice(0, 99_000 - removed), ...items.slice(99_000)];
    const before = service.requests;
    const run = await syncList(service.client, "things", options);
    const spent = service.requests - before;
    ok(spent <= 12, `${spent} list requests`);
    equal(run.written, 0);
    const next = service.requests;
    await syncList(service.client, "things", options);
    ok(service.requests - next <= 2, `then ${service.requests - next}`);
  });
}

Deno.test("newest first, the edge's search drops only a bound the list contradicts while the list moves during the head: a burst of new items taken back costs requests logarithmic in what went, not linear (the edge sought from a bound the list moved past); a list growing by 200 items at the top before every request is followed, its first read bringing every item there was when it began, at concurrency 8 and windows up to 250 (a bound the growth passed is kept, walking with it)", async () => {
  const all = things(20_000);
  /**
   * Copies the list's first `first` items newest first, then runs a head
   * against the list `move` answers to its request `n` (from 1): the requests
   * that run spent, and the copy.
   */
  async function head(
    first: number,
    move: (n: number) => Thing[],
    options: { limit: number; maxLimit?: number; concurrency: number },
    serviceMaxLimit = Infinity,
  ) {
    let moving = false, n = 0;
    const service = listOf(
      () => (moving ? move(++n) : all.slice(0, first)).toReversed(),
      { maxLimit: serviceMaxLimit },
    );
    const sink = memorySink<Thing>();
    const given = { id: "thingID", sink, sortDirection: "DESC" as const };
    await syncList(service.client, "things", {
      ...given,
      ...options,
      sweep: Infinity,
    });
    moving = true;
    const before = service.requests;
    await syncList(service.client, "things", {
      ...given,
      ...options,
      sweep: 0,
    });
    return { spent: service.requests - before, sink };
  }
  for (const concurrency of [1, 4]) {
    // 2,500 new; at the 6th request, 400 more; from the 7th, every new one gone.
    const burst = (n: number) =>
      all.slice(0, n < 6 ? 4500 : n < 7 ? 4900 : 2000);
    const { spent, sink } = await head(2000, burst, {
      limit: 100,
      concurrency,
    }, 100);
    ok(spent <= 16, `${spent} list requests at concurrency ${concurrency}`);
    equal(sink.rows.size, 2000);
  }
  const growing = (n: number) => all.slice(0, 450 + 200 * n);
  const { sink } = await head(0, growing, {
    limit: 25,
    maxLimit: 250,
    concurrency: 8,
  });
  const missing = all.slice(0, 450).filter((t) => !sink.rows.has(t.thingID));
  equal(missing.length, 0);
});

Deno.test("the edge found after deletes before it is written once the head found it: a run failing at any of its writes leaves no midway place for the next run to take as items missing (behind 0)", async () => {
  for (const failAt of [1, 2, 3]) {
    const random = seededRandom(failAt);
    const items = things(10_000);
    const service = listOf(() => items);
    const copy = memorySink<Thing>();
    let writes = 0, failing = false;
    const sink: SyncSink<Thing> = {
      load: () => copy.load(),
      write: (...args) =>
        failing && ++writes === failAt
          ? Promise.reject(new Error("killed"))
          : copy.write(...args),
    };
    const options = { id: "thingID", sink, sweep: 0, maxDeletes: 1 };
    await syncList(service.client, "things", options);
    for (let i = 0; i < 500; i++) {
      items.splice(Math.floor(random() * (items.length - 1)), 1);
    }
    failing = true;
    await syncList(service.client, "things", options).catch(() => {});
    failing = false;
    const next = await syncList(service.client, "things", options);
    deepStrictEqual([next.behind, copy.rows.size], [0, 10_000], `${failAt}`);
  }
});

Deno.test("at concurrency 4, a run with nothing new makes at most 2 list requests, one with a new item at most 3: a short window that is no end sends the next one alone", async () => {
  const cases: [number, number, number][] = [[500, 75, 1000], [1000, 25, 100]];
  for (const [items, limit, maxLimit] of cases) {
    const all = things(items + 1);
    let list = all.slice(0, items);
    const service = listOf(() => list);
    const sink = memorySink<Thing>();
    const options = { id: "thingID", sink, limit, maxLimit, concurrency: 4 };
    await syncList(service.client, "things", { ...options, sweep: Infinity });
    const spent = [];
    for (const added of [0, 1]) {
      list = all.slice(0, items + added);
      const before = service.requests;
      await syncList(service.client, "things", { ...options, sweep: 0 });
      spent.push(service.requests - before);
    }
    ok(spent[0]! <= 2 && spent[1]! <= 3, `${items} items: ${spent}`);
  }
});

Deno.test("an abort from onProgress stops the run before its next commit", async () => {
  const service = listOf(() => things(500));
  const sink = memorySink<Thing>();
  let writes = 0;
  const controller = new AbortController();
  const counted: SyncSink<Thing> = {
    ...sink,
    // A slow sink: the next window is read and judged while it writes.
    write: async (...args) => {
      writes++;
      while (service.requests < writes + 2 && !controller.signal.aborted) {
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      return await sink.write(...args);
    },
  };
  let heard = 0;
  await rejects(
    syncList(service.client, "things", {
      id: "thingID",
      sink: counted,
      maxLimit: 50,
      concurrency: 4,
      signal: controller.signal,
      onProgress: () => {
        heard++;
        controller.abort(new Error("stop"));
      },
    }),
    /stop/,
  );
  equal(heard, 1);
  equal(writes, 1);
});

Deno.test("an abort at any turn after the head's overlap check writes nothing more: the checkpoint's write is started in the turn that checks the signal (a few turns later, it was started after the abort: r97 F2)", async () => {
  for (let turns = 0; turns <= 16; turns++) {
    let items = things(150);
    const service = listOf(() => items, { maxLimit: 40 });
    const database = new DatabaseSync(":memory:");
    const copy = createSqliteSink<Thing>(database, { table: "things" });
    const options = { id: "thingID", maxLimit: 40, limit: 40 };
    await syncList(service.client, "things", { ...options, sink: copy });
    items = items.filter((_, i) => i % 3 === 0);
    const controller = new AbortController();
    let lateWrites = 0;
    const sink: SyncSink<Thing> = {
      ...copy,
      write: (...batch) => {
        if (controller.signal.aborted) lateWrites++;
        return copy.write(...batch);
      },
      // The abort lands `turns` microtasks after the sink answers.
      holds: (...ask) => {
        const answer = Promise.resolve(copy.holds!(...ask));
        let left = turns;
        const turn = (): unknown =>
          left-- > 0
            ? Promise.resolve().then(turn)
            : controller.abort(new Error("stop"));
        answer.then(turn);
        return answer;
      },
    };
    const signal = controller.signal;
    await syncList(service.client, "things", { ...options, sink, signal })
      .catch(() => {});
    equal(lateWrites, 0, `an abort ${turns} turns on`);
    database.close();
  }
});

Deno.test("sweep: Infinity leaves the copy equal to the list as it stood when the run began, also with a cycle under way whose cursor passed changes", async () => {
  for (const copy of await sinks("sweep-all")) {
    let items: Thing[] = things(2000);
    const service = listOf(() => items);
    const options = { id: "thingID", sink: copy.sink, maxLimit: 100 };
    await syncList(service.client, "things", options);
    await syncList(service.client, "things", { ...options, sweep: 5 });
    // Behind the cycle's cursor (about 500 items in): changes of every kind.
    items = items.filter((_, i) => i % 50 !== 3);
    items = items.map((item, i) => i % 40 === 7 ? { ...item, v: 1 } : item);
    items.push({ thingID: "t000000001x" }, { thingID: "t000100001x" });
    items.sort((a, b) => a.thingID < b.thingID ? -1 : 1);
    await syncList(service.client, "things", { ...options, sweep: Infinity });
    equal(await copy.rows(), items.length, copy.kind);
    if (copy.kind === "memory") {
      const rows = (copy.sink as ReturnType<typeof memorySink<Thing>>).rows;
      for (const item of items) {
        equal(JSON.stringify(rows.get(item.thingID)), JSON.stringify(item));
      }
    }
    copy.close();
  }
});

Deno.test("every sink refuses a lockWait that is negative, above 2147483647 or not a number, before anything is opened", async () => {
  const path = await freshTarget("sync-cycle", "lock-wait.jsonl");
  const query = () => Promise.resolve([]);
  for (const lockWait of [-1, 2 ** 31, Number.NaN, "5" as unknown as number]) {
    for (
      const make of [
        () => createSqliteSink(":memory:", { table: "t", lockWait }),
        () => createJsonlSink(path, { lockWait }),
        () => createPostgresSink({ query, table: "t", lockWait }),
      ]
    ) {
      throws(
        make,
        (error: RangeError) =>
          error instanceof
            (typeof lockWait === "number" ? RangeError : TypeError) &&
          (error as { option?: string }).option ===
            "lockWait",
      );
    }
  }
  createSqliteSink(":memory:", { table: "t", lockWait: Infinity }).close();
});

Deno.test("the run's and the sinks' clocks are the now options: verifiedAt, the change table's at and deleted_at", async () => {
  const database = new DatabaseSync(":memory:");
  const clock = Date.UTC(2030, 0, 2, 3, 4, 5);
  const sink = createSqliteSink<Thing>(database, {
    table: "things",
    now: () => clock,
  });
  let items = things(60);
  const service = listOf(() => items);
  const options = {
    id: "thingID",
    sink,
    changes: true,
    deletes: "mark" as const,
    now: () => clock - 1000,
  };
  await syncList(service.client, "things", options);
  items = items.slice(1);
  const run = await syncList(service.client, "things", {
    ...options,
    sweep: Infinity,
  });
  equal(run.verifiedAt, clock - 1000);
  const stamps = database.prepare(
    `SELECT DISTINCT at FROM "things_changes" UNION SELECT DISTINCT deleted_at FROM "things" WHERE deleted_at IS NOT NULL`,
  ).all().map((row) => row.at);
  deepStrictEqual(stamps, [new Date(clock).toISOString()]);
  database.close();
});

Deno.test("a sync's list requests are low priority by default, and take the priority given", async () => {
  const items = things(120);
  const seen: (string | undefined)[] = [];
  const limiter = {
    limit: { requests: 1000, interval: 1000 },
    take: (
      _signal?: AbortSignal,
      priority?: string,
    ) => (seen.push(priority), 0),
    answered() {},
    refused() {},
  };
  const paced = listOf(() => items, { rateLimit: limiter }).client;
  const sink = memorySink<Thing>();
  await syncList(paced, "things", { id: "thingID", sink, maxLimit: 50 });
  ok(seen.length >= 3);
  deepStrictEqual(new Set(seen), new Set(["low"]));
  seen.length = 0;
  await syncList(paced, "things", { id: "thingID", sink, priority: "high" });
  deepStrictEqual(new Set(seen), new Set(["high"]));
});

Deno.test("maxDuration: without a sweep count the run sweeps until its time is up, then says when the copy will next be verified at that rate", async () => {
  let clock = Date.UTC(2026, 10, 28);
  const items = things(2000);
  const service = listOf(() => items, {
    answer: (page) => (clock += 1000, page), // each request takes a second
  });
  const sink = memorySink<Thing>();
  const options = { id: "thingID", sink, maxLimit: 100, now: () => clock };
  await syncList(service.client, "things", options);
  const before = service.requests;
  const run = await syncList(service.client, "things", {
    ...options,
    maxDuration: 5_000,
  });
  const spent = service.requests - before;
  ok(spent >= 5 && spent <= 7, `${spent} requests`); // the head's, then 5 s
  ok(run.sweepLeft > 10, `${run.sweepLeft} left`);
  // About a second a request: the rest of the cycle, from now.
  ok(
    run.nextVerifiedAt! >= clock + run.sweepLeft * 900,
    String(run.nextVerifiedAt),
  );
  const rest = await syncList(service.client, "things", {
    ...options,
    maxDuration: 1_000_000,
  });
  equal(rest.sweepLeft, 0);
  ok(rest.verifiedAt !== undefined);
});

Deno.test("maxDuration stops a sweep whose window waits for a rate slot that live traffic holds: the run ends, its place kept", async () => {
  const items = things(300);
  const rateLimit = createRateLimiter({
    ...{ requests: 3, interval: 60_000, reserve: 0 },
  });
  const service = listOf(() => items, { maxLimit: 100, rateLimit });
  const sink = memorySink<Thing>();
  const options = { id: "thingID", sink, maxLimit: 100, limit: 100 };
  await syncList(listOf(() => items).client, "things", options); // no limiter
  const live = rateLimit.take(); // a live call, never answered: the slot it holds stays taken
  equal(typeof live, "number");
  // Still waiting without the stop (60 s a slot): the test's guard, not a wait.
  let hung: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise((_, reject) => {
    hung = setTimeout(() => reject(new Error("the run hung")), 5_000);
  });
  const run = await Promise.race([
    syncList(service.client, "things", { ...options, maxDuration: 50 }),
    guard,
  ]).finally(() => clearTimeout(hung)) as Awaited<ReturnType<typeof syncList>>;
  ok(run.sweepLeft > 0, `${run.sweepLeft} left`); // the cycle goes on next run
  equal(sink.rows.size, 300);
});

/** `n` things from `from` on, ids `step` apart (later ones sort after). */
const thingsFrom = (from: number, n: number) => things(from + n).slice(from);

Deno.test("a list that moves on every request is read to its end, never forever: 10 appended and 10 removed anywhere before each request of 1,500 items (a first run), one of each on a 30-item list (a run after a first one that met the list's size as a page's), or 3 of each on a 30-item list read 30 at a time at concurrency 8: each run ends, holding every item there throughout", async () => {
  const cases = [
    [1500, 10, false, 1000, 1],
    [30, 1, true, 250, 1],
    [30, 3, false, 30, 8], // the margin kept never more than a window keeps
  ] as const;
  for (const [n, moves, first, maxLimit, concurrency] of cases) {
    const random = seededRandom(7);
    let items = things(n), serial = n, moving = !first;
    const service = listOf(() => {
      if (!moving) return items;
      if (service.requests > 500) throw new Error("the run never ended");
      for (let i = 0; i < moves; i++) {
        items.splice(Math.floor(random() * items.length), 1);
      }
      items = [...items, ...thingsFrom(serial, moves)];
      serial += moves;
      return items;
    });
    const sink = memorySink<Thing>();
    const options = {
      id: "thingID",
      sink,
      limit: 25,
      maxLimit,
      concurrency,
      maxDeletes: 1,
    };
    if (first) await syncList(service.client, "things", options);
    moving = true;
    const there = new Set(items.map((item) => item.thingID));
    await syncList(service.client, "things", { ...options, sweep: Infinity });
    const throughout = items.filter((item) => there.has(item.thingID));
    const missing = throughout.filter((item) => !sink.rows.has(item.thingID));
    equal(missing.length, 0, `${n} items`);
  }
});

Deno.test("an ascending cycle whose last item leaves the list as it sweeps ends at the list's end though items arrive after it (the read past its short page finds one after the cycle's last: no cut, where it took one and left the cycle under way for good); in both orders, a page cut below 25 with an insert before it just before that read removes nothing that exists", async () => {
  let items = things(1000), serial = 1000, moving = false, asked = 0;
  const service = listOf(() => {
    if (!moving) return items;
    // At the run's 2nd request the newest item, the head's last, leaves.
    if (++asked === 2) items = items.slice(0, -1);
    items = [...items, ...thingsFrom(serial++, 1)];
    return items;
  });
  const sink = memorySink<Thing>();
  const options = { id: "thingID", sink, limit: 50, sweep: Infinity };
  await syncList(service.client, "things", options);
  items.splice(500, 0, { thingID: "t000499000b" }); // behind the copy's end
  const gone = items.splice(100, 1)[0]!.thingID;
  moving = true;
  const result = await syncList(service.client, "things", options);
  deepStrictEqual([sink.rows.has("t000499000b"), sink.rows.has(gone)], [
    true,
    false,
  ]);
  equal(result.sweepLeft, 0);
  for (const sortDirection of ["ASC", "DESC"] as const) {
    const ordered = things(1000);
    const list = sortDirection === "ASC" ? [...ordered] : ordered.toReversed();
    let [inserts, start, cutting] = [0, 0, false];
    const cut = listOf(() => list, {
      // From the second run, pages from the 950th item on are cut to 7, and
      // each one-item read past a short page meets one more item inserted
      // before it.
      answer: (page) => cutting && start >= 950 ? page.slice(0, 7) : page,
      before: ({ limit, page }) => {
        start = (page - 1) * limit;
        if (!cutting || limit !== 1) return;
        const thingID = sortDirection === "ASC"
          ? `t000009000x${999 - inserts++}` // each before the last one
          : `t000989000x${100 + inserts++}`;
        list.splice(10, 0, { thingID });
      },
    });
    const copy = memorySink<Thing>();
    const given = {
      id: "thingID",
      sink: copy,
      sortDirection,
      sweep: Infinity,
      limit: 50,
      maxLimit: 100,
    };
    await syncList(cut.client, "things", given);
    cutting = true;
    const again = await syncList(cut.client, "things", given);
    equal(again.deleted, 0, sortDirection);
    ok(ordered.every((item) => copy.rows.has(item.thingID)), sortDirection);
  }
  // Pages from the 975th item on cut to 9; just before the read past the
  // short page, an item before it leaves and one arrives after the cycle's
  // last: that read lands past the cut items, and nothing is removed.
  const list = things(1000);
  let [start, cutting] = [0, false];
  const moved = listOf(() => list, {
    answer: (page) => cutting && start >= 975 ? page.slice(0, 9) : page,
    before: ({ limit, page }) => {
      start = (page - 1) * limit;
      if (!cutting || limit !== 1) return;
      list.splice(10, 1);
      list.push(...thingsFrom(2000 + list.length, 1));
    },
  });
  const copy = memorySink<Thing>();
  const given = {
    id: "thingID",
    sink: copy,
    sweep: Infinity,
    limit: 25,
    maxLimit: 25,
  };
  await syncList(moved.client, "things", given);
  const tail = list.slice(20).map((item) => item.thingID);
  cutting = true;
  equal((await syncList(moved.client, "things", given)).deleted, 0);
  ok(tail.every((id) => copy.rows.has(id)));
});

Deno.test("sweepLeft counts the requests the cycle under way still needs, newest first as oldest first (newest first it said 1, and nextVerifiedAt came as soon)", async () => {
  for (const sortDirection of ["ASC", "DESC"] as const) {
    const items = things(2000);
    const service = listOf(() =>
      sortDirection === "DESC" ? items.toReversed() : items
    );
    const sink = memorySink<Thing>();
    const options = { id: "thingID", sink, maxLimit: 100, sortDirection };
    await syncList(service.client, "things", options);
    const first = await syncList(service.client, "things", {
      ...options,
      sweep: 2,
    });
    let took = 0; // the sweep's requests after it: each run's head costs one
    for (let left = first.sweepLeft; left > 0;) {
      const run = await syncList(service.client, "things", {
        ...options,
        sweep: 2,
      });
      took += run.requests - 1;
      left = run.sweepLeft;
    }
    const said = first.sweepLeft;
    // About: windows overlap, so a cycle takes a few more than its size over the page.
    ok(
      said <= took && took - said <= 6,
      `${sortDirection}: said ${said}, took ${took}`,
    );
  }
});

Deno.test("a sync driven by fake timers as the README's 'Testing your code' drives a call sweeps whole: no timer of an unbounded maxDuration is left for the clock to fire (it stopped the sweep, unseen: updated 0, deleted 0, sweepLeft 1)", async () => {
  const clock = withGlobal(globalThis).install({
    toFake: ["setTimeout", "clearTimeout", "Date", "performance"],
  });
  try {
    const service = createFakePartnerService({ items: { transactions: 300 } });
    const client = createClient({
      environment: service.environmentAt(
        "https://fake.test",
        "https://pci.test",
      ),
      ...service.credentials,
      fetch: (input, init) => service.handle(new Request(input, init)),
    });
    using sink = createSqliteSink(":memory:", { table: "transactions" });
    const options = { id: "transactionID", sortBy: "creationDate", sink };
    const fakeTime = async <T>(work: Promise<T>): Promise<T> => {
      let settled = false;
      work.then(() => settled = true, () => settled = true);
      while (!settled) {
        await new Promise((resolve) => setImmediate(resolve));
        if (!settled) await clock.nextAsync();
      }
      return await work;
    };
    await fakeTime(syncList(client, "transactions", options));
    service.update("transactions", "tx_000010", { amount: 0.5 });
    service.remove("transactions", "tx_000020");
    const all = { ...options, sweep: Infinity };
    const again = await fakeTime(syncList(client, "transactions", all));
    deepStrictEqual(
      [again.updated, again.deleted, again.sweepLeft],
      [1, 1, 0],
    );
  } finally {
    clock.uninstall();
  }
});

Deno.test("a run whose sweep verified the whole copy (sweep: Infinity) reports nothing behind: items back in the list that the copy never lost were 450 'known to be missing'", async () => {
  const service = createFakePartnerService({ items: { transactions: 500 } });
  const client = createClient({
    environment: service.environmentAt("https://fake.test", "https://pci.test"),
    ...service.credentials,
    fetch: (input, init) => service.handle(new Request(input, init)),
  });
  using sink = createSqliteSink(":memory:", { table: "transactions" });
  const options = { id: "transactionID", sortBy: "creationDate", sink };
  type Item = { transactionID: string; creationDate: string };
  const all = await Array.fromAsync(
    client.list<Item>("transactions", { limit: 1000 }),
  );
  await syncList(client, "transactions", options);
  const gone = all.toSorted((a, b) => a.creationDate < b.creationDate ? -1 : 1)
    .slice(50);
  for (const item of gone) service.remove("transactions", item.transactionID);
  await rejects(syncList(client, "transactions", options), {
    reason: "too-many-deletes",
  });
  for (const item of gone) service.insert("transactions", item);
  const all2 = { ...options, sweep: Infinity };
  const result = await syncList(client, "transactions", all2);
  deepStrictEqual([result.inserted, result.deleted, result.behind], [0, 0, 0]);
});
