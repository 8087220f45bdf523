// Never stuck: a list that loses and gains items on every request, anywhere and at its end, is followed to its end by
// every run, within a bound of requests, with every item there throughout in the copy; in both directions, at any
// window size, concurrency, and mass deletes behind the copy's end between runs. (Where it holds: docs/sync.md, "A
// list faster than `limit`".)

import fc from "fast-check";
import { syncList } from "../src/sync/mod.ts";
import { seededRandom } from "../src/testing/_list_data.ts";
import { listOf, memorySink, type Thing, things } from "./_sync_fake.ts";
import { runs } from "./_property_runs.ts";

const schedules = fc.record({
  items: fc.integer({ min: 0, max: 3000 }),
  maxLimit: fc.integer({ min: 25, max: 400 }),
  limit: fc.integer({ min: 25, max: 50 }),
  concurrency: fc.integer({ min: 1, max: 4 }),
  descending: fc.boolean(),
  // Per request: removed anywhere (a share of the largest page), inserted anywhere and appended at the end (shares of
  // `limit`: a list gaining about `limit` items a request shows every read of its end as a page a lowered largest may
  // have cut, and is read again: docs/sync.md, "The end").
  churn: fc.record({
    remove: fc.double({ min: 0, max: 0.25, noNaN: true }),
    insert: fc.double({ min: 0, max: 0.1, noNaN: true }),
    append: fc.double({ min: 0, max: 0.5, noNaN: true }),
  }),
  // Removed behind the copy's end before each later run, as shares of the list.
  gone: fc.array(fc.double({ min: 0, max: 0.5, noNaN: true }), {
    minLength: 1,
    maxLength: 3,
  }),
  seed: fc.integer({ min: 1, max: 1_000_000 }),
});

/** Requests a run may take: twice its windows, at most a quarter of each lost to the margin, and a search for the edge. */
function bound(items: number, maxLimit: number): number {
  return 40 + 4 * Math.ceil(items / maxLimit);
}

type Schedule = typeof schedules extends fc.Arbitrary<infer S> ? S : never;

async function runSchedule(schedule: Schedule) {
  const random = seededRandom(schedule.seed);
  const at = (n: number) => Math.floor(random() * n);
  const { maxLimit, churn } = schedule;
  // At least a page: a run that saw no page honoured cannot tell a list growing at its end from a cut one.
  const start = schedule.items + maxLimit;
  let items = things(start), serial = start;
  let moving = false, most = Infinity;
  const limit = Math.min(schedule.limit, maxLimit);
  const move = () => {
    for (let i = churn.remove * maxLimit; i >= 1 && items.length > 0; i--) {
      items.splice(at(items.length), 1);
    }
    for (let i = churn.insert * limit; i >= 1 && items.length > 1; i--) {
      const k = 1 + at(items.length - 1); // between two items: ids 1,000 apart
      const id = `${items[k - 1]!.thingID}i${serial++}`;
      if (id < items[k]!.thingID) items.splice(k, 0, { thingID: id });
    }
    const appended = things(serial + Math.floor(churn.append * limit))
      .slice(serial);
    items = [...items, ...appended];
    serial += appended.length;
  };
  const service = listOf(() => {
    if (!moving) return schedule.descending ? items.toReversed() : items;
    if (service.requests > most) throw new Error("the run never ended");
    move();
    return schedule.descending ? items.toReversed() : items;
  });
  const sink = memorySink<Thing>();
  const options = {
    id: "thingID",
    sink,
    maxLimit,
    limit,
    concurrency: schedule.concurrency,
    sortDirection: schedule.descending ? "DESC" as const : "ASC" as const,
    sweep: 0,
    maxDeletes: 1,
  };
  await syncList(service.client, "things", options);
  moving = true;
  for (const share of schedule.gone) {
    items.splice(at(items.length), Math.floor(share * items.length));
    // Not the items inserted before the edge (`…i…`): the sweep brings those (sync_sweep_property_test.ts).
    const there = new Set(
      items.map((item) => item.thingID).filter((id) => !id.includes("i")),
    );
    most = service.requests + bound(items.length, maxLimit);
    await syncList(service.client, "things", options);
    const now = new Set(items.map((item) => item.thingID));
    const missing = [...there].filter((id) =>
      now.has(id) && !sink.rows.has(id)
    );
    if (missing.length > 0) throw new Error(`missing ${missing.length}`);
    // A service that cuts no page: no run keeps a size as cut (the list's end moving on while read again was taken
    // for a cut at 64 items, and every later run's sweep read 63 a request: r258b).
    const cut = sink.checkpoint?.refusedLimit;
    if (cut !== undefined) throw new Error(`a cut kept at ${cut}`);
  }
}

Deno.test("a list that loses and gains items on every request is followed to its end by every run, within a bound of requests, holding every item there throughout, and keeping no size as cut", async () => {
  await fc.assert(fc.asyncProperty(schedules, runSchedule), {
    numRuns: runs(15, 300),
    seed: 61,
    // Found by the deep run: a list losing about 98 items a request kept a cut at 29 (r258b's, at 64, was a head read
    // again over the list's end, placed back by its margin).
    examples: [[{
      items: 2861,
      maxLimit: 394,
      limit: 25,
      concurrency: 1,
      descending: false,
      churn: { remove: 0.24873096446700507, insert: 0, append: 0 },
      gone: [0],
      seed: 1,
    }]],
  });
});
