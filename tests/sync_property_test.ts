// The invariant of syncList, over random schedules of inserts and deletes
// anywhere, appends, crashes (a run stopped at a random request, or a sink
// that fails) and reruns: the sink ends with every item that existed for
// the whole of the runs exactly once, and no item is ever written twice.

import fc from "fast-check";
import { syncList } from "../src/sync/mod.ts";
import { seededRandom } from "../src/testing/_list_data.ts";
import { checkSchedules, inProcess, memorySink } from "./_sync_fake.ts";
import { runs } from "./_property_runs.ts";

function equal<T>(actual: T, expected: T, message: string): void {
  if (actual !== expected) {
    throw new Error(`${message}: ${actual} !== ${expected}`);
  }
}

/** One schedule: the list, the sizes, the churn per request, the crashes. */
interface Schedule {
  readonly items: number;
  readonly sortBy: "creationDate" | undefined;
  readonly limit: number;
  readonly maxLimit: number;
  readonly concurrency: number;
  /** Inserts, removes and appends before each list request (cycled). */
  readonly churn: readonly { insert: number; remove: number; append: number }[];
  /** For each failed attempt: the list request at which it stops, or a failing write. */
  readonly crashes: readonly ({ request: number } | { write: number })[];
  readonly seed: number;
  /** The service's largest page, and whether it refuses or cuts a larger one. */
  readonly service: { max: number; beyond: "refuse" | "cut" } | null;
  /** Items appended before an incremental run after the first success. */
  readonly later: number;
}

const schedules = fc.record({
  items: fc.integer({ min: 0, max: 200 }),
  sortBy: fc.constantFrom("creationDate" as const, undefined),
  limit: fc.integer({ min: 1, max: 12 }),
  maxLimit: fc.integer({ min: 25, max: 40 }),
  concurrency: fc.integer({ min: 1, max: 3 }),
  churn: fc.array(
    fc.record({
      insert: fc.integer({ min: 0, max: 2 }),
      remove: fc.integer({ min: 0, max: 2 }),
      append: fc.integer({ min: 0, max: 1 }),
    }),
    { minLength: 1, maxLength: 6 },
  ),
  crashes: fc.array(
    fc.oneof(
      fc.record({ request: fc.integer({ min: 1, max: 12 }) }),
      fc.record({ write: fc.integer({ min: 1, max: 6 }) }),
    ),
    { maxLength: 3 },
  ),
  seed: fc.integer({ min: 1, max: 1_000_000 }),
  service: fc.option(
    fc.record({
      max: fc.integer({ min: 25, max: 45 }),
      beyond: fc.constantFrom("refuse" as const, "cut" as const),
    }),
  ),
  later: fc.integer({ min: 0, max: 120 }),
});

async function runSchedule(schedule: Schedule): Promise<void> {
  reach(schedule);
  const fake = inProcess({
    items: { transactions: schedule.items },
    ...(schedule.service === null ? {} : {
      maxLimit: schedule.service.max,
      beyondMaxLimit: schedule.service.beyond,
    }),
  });
  const random = seededRandom(schedule.seed);
  const present = Array.from(
    { length: schedule.items },
    (_, i) => `tx_${String(i + 1).padStart(6, "0")}`,
  );
  const throughout = new Set(present);
  let serial = schedule.items;
  let inserted = 0;
  const pick = () => Math.floor(random() * present.length);
  const change = (step: Schedule["churn"][number]) => {
    for (let i = 0; i < step.insert && present.length > 0; i++) {
      const id = `${present[pick()]}_${++inserted}`;
      const day = Math.floor(random() * 300);
      fake.service.insert("transactions", {
        transactionID: id,
        creationDate: new Date(Date.UTC(2025, 0, 1 + day)).toISOString(),
        amount: 1,
      });
      present.push(id);
    }
    for (let i = 0; i < step.remove && present.length > 0; i++) {
      const [id] = present.splice(pick(), 1) as [string];
      fake.service.remove("transactions", id);
      throughout.delete(id);
    }
    for (let i = 0; i < step.append; i++) {
      fake.service.insertTransactions(1);
      present.push(`tx_${String(++serial).padStart(6, "0")}`);
    }
  };
  const sink = memorySink<Record<string, unknown>>();
  const options = {
    id: "transactionID",
    ...(schedule.sortBy === undefined ? {} : { sortBy: schedule.sortBy }),
    sink,
    limit: schedule.limit,
    maxLimit: schedule.maxLimit,
    concurrency: schedule.concurrency,
    // The head's invariants; the sweep's are sync_sweep_property_test's.
    sweep: 0,
  };
  let attempt = 0;
  while (true) {
    const crash = schedule.crashes[attempt++];
    const controller = new AbortController();
    const first = fake.listRequests;
    fake.beforeList = (n) => {
      if (n - first > 400) throw new Error("runaway: 400 requests in one run");
      change(schedule.churn[n % schedule.churn.length]!);
      if (crash && "request" in crash && n - first >= crash.request) {
        controller.abort(new Error("crash"));
      }
    };
    sink.failAt = crash && "write" in crash ? crash.write : undefined;
    try {
      await syncList(fake.client, "transactions", {
        ...options,
        signal: controller.signal,
      });
      break;
    } catch (error) {
      if (crash === undefined || fake.listRequests - first > 400) throw error;
      reached.add("a rerun after a crash");
    }
    if (attempt > 10) throw new Error("no end");
  }
  check(sink, throughout);
  // Later: items appended at the end, nothing else; an incremental run.
  fake.beforeList = undefined;
  sink.failAt = undefined;
  const before = fake.listRequests;
  for (let i = 0; i < schedule.later; i++) {
    fake.service.insertTransactions(1);
    throughout.add(`tx_${String(++serial).padStart(6, "0")}`);
  }
  const result = await syncList(fake.client, "transactions", {
    ...options,
    concurrency: 1,
  });
  check(sink, throughout);
  const budget = Math.ceil(schedule.later / schedule.limit) + 2;
  // Finding a smaller largest size costs requests of its own.
  const found = schedule.service !== null &&
    schedule.service.max < schedule.maxLimit;
  if (!found && fake.listRequests - before > budget) {
    throw new Error(
      `incremental run of ${schedule.later} items: ${
        fake.listRequests - before
      } requests, budget ${budget}`,
    );
  }
  equal(result.requests, fake.listRequests - before, "requests counted");
}

/** What the schedules reached: each kind of crash, service and sort. */
const reached = new Set<string>();

function reach(schedule: Schedule): void {
  reached.add(schedule.sortBy ?? "no sort");
  reached.add(schedule.service?.beyond ?? "any size");
  if (schedule.service !== null && schedule.service.max < schedule.maxLimit) {
    reached.add("a smaller largest page");
  }
  for (const crash of schedule.crashes) {
    reached.add("request" in crash ? "stopped" : "failed write");
  }
  if (schedule.churn.some((step) => step.insert > 0 && step.remove > 0)) {
    reached.add("inserts and removes");
  }
  if (schedule.later > 0) reached.add("later items");
}

/** Everything the quick subset's few schedules must still reach. */
const KINDS = [
  "creationDate",
  "no sort",
  "any size",
  "refuse",
  "cut",
  "a smaller largest page",
  "stopped",
  "failed write",
  "a rerun after a crash",
  "inserts and removes",
  "later items",
];

function check(
  sink: ReturnType<typeof memorySink<Record<string, unknown>>>,
  throughout: ReadonlySet<string>,
): void {
  for (const id of throughout) equal(sink.writes.get(id), 1, `item ${id}`);
  for (const [id, writes] of sink.writes) equal(writes, 1, `writes of ${id}`);
}

Deno.test("syncList holds every item that existed throughout, once, across schedules of drift, crashes and reruns", async () => {
  const options = { numRuns: runs(40, 700), seed: 29 };
  await checkSchedules(schedules, runSchedule, options, KINDS, reached);
});
