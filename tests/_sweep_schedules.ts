// Shared by the sweep property tests (tests/sync_sweep_property_test.ts:
// memory, SQLite, JSONL; tests/process/sync_postgres_sweep_property_test.ts:
// PostgreSQL): random schedules of appends, inserts anywhere (back-dated),
// field changes and deletes, crashes at random requests, and reruns with
// random sweep budgets, in either direction, with faults planted in runs (a
// page cut short, the sweep answered with another list, a mass delete, the
// guard at 0.1 or 1), and the invariants each run must keep: no run removes
// an item that existed throughout it (a foreign answer: no more than the
// guard allows), no foreign item ever enters the copy, a refused cycle
// removes nothing; once changes stop, at most 2 × ⌈pages / sweep⌉ +
// ⌈seek / sweep⌉ + 2 further runs make the copy equal to the list (same ids,
// same contents, none twice, deleted rows gone), and a change table replayed
// gives exactly the copy.

import fc from "fast-check";
import { SyncError, syncList, type SyncSink } from "../src/sync/mod.ts";
import { seededRandom } from "../src/testing/_list_data.ts";
import { inProcess } from "./_sync_fake.ts";

/** An item of the list, as the copy holds it. */
export type Row = Record<string, unknown>;

/** A schedule of runs into a copy of sink `kind`, with the list changing under them. */
export interface Schedule {
  readonly kind: string;
  readonly direction: "ASC" | "DESC";
  readonly sortBy: "creationDate" | undefined;
  readonly items: number;
  readonly maxLimit: number;
  /** The least page size the service answers (a 400 under it; 0: none). */
  readonly least: number;
  /** Changes made before each list request while runs happen. */
  readonly churn: {
    append: number;
    insert: number;
    update: number;
    remove: number;
    /** Items whose sort value changes (a date corrected): back before every item, or past the last. */
    move: number;
  };
  /** Runs while the list changes: each a sweep budget, a crash point, a fault. */
  readonly runs: readonly {
    sweep: number;
    crashAt: number | null;
    fault: "none" | "short" | "foreign" | "mass" | "lowered";
    faultAt: number;
    /** How many items a short page keeps. */
    cut: number;
    maxDeletes: number;
    /** Before it, items deleted earlier that the copy still holds come back as they were (r152 F1). */
    restore: boolean;
  }[];
  /** The sweep budget of the runs after changes stop. */
  readonly sweep: number;
  readonly seed: number;
}

/** The schedules fast-check draws, into a sink of one of `kinds`. */
export const schedules = (kinds: readonly string[]): fc.Arbitrary<Schedule> =>
  fc.record({
    kind: fc.constantFrom(...kinds),
    direction: fc.constantFrom("ASC" as const, "DESC" as const),
    sortBy: fc.constantFrom("creationDate" as const, undefined),
    items: fc.integer({ min: 0, max: 150 }),
    maxLimit: fc.integer({ min: 25, max: 40 }),
    least: fc.constantFrom(0, 0, 2, 5),
    churn: fc.record({
      append: fc.integer({ min: 0, max: 2 }),
      insert: fc.integer({ min: 0, max: 2 }),
      update: fc.integer({ min: 0, max: 2 }),
      remove: fc.integer({ min: 0, max: 4 }),
      move: fc.integer({ min: 0, max: 1 }),
    }),
    runs: fc.array(
      fc.record({
        sweep: fc.oneof(fc.integer({ min: 0, max: 4 }), fc.constant(Infinity)),
        crashAt: fc.option(fc.integer({ min: 1, max: 8 })),
        fault: fc.constantFrom(
          "none" as const,
          "short" as const,
          "foreign" as const,
          "mass" as const,
          "lowered" as const,
        ),
        faultAt: fc.integer({ min: 1, max: 12 }),
        cut: fc.integer({ min: 0, max: 24 }),
        maxDeletes: fc.constantFrom(1, 0.1),
        restore: fc.boolean(),
      }),
      { minLength: 1, maxLength: 5 },
    ),
    sweep: fc.integer({ min: 1, max: 4 }),
    seed: fc.integer({ min: 1, max: 1_000_000 }),
  });

/** What the schedules reached, for `checkSchedules`: the kinds of step below. */
export const reached = new Set<string>();
let serial = 0;

/**
 * Runs `schedule` into the copy `copyOf` makes, checking the invariants
 * (module header) after each run, then the bound once changes stop.
 */
export async function runSchedule(
  schedule: Schedule,
  copyOf: (kind: string) => Promise<Copy>,
): Promise<void> {
  reached.add(`${schedule.kind} ${schedule.direction}`);
  const fake = inProcess({ items: { transactions: schedule.items } }, schedule);
  const random = seededRandom(schedule.seed);
  const present: Present = {
    ids: Array.from(
      { length: schedule.items },
      (_, i) => `tx_${String(i + 1).padStart(6, "0")}`,
    ),
    appended: schedule.items,
    moved: new Set(),
  };
  const copy = await copyOf(schedule.kind);
  const options = {
    id: "transactionID",
    ...(schedule.sortBy === undefined ? {} : { sortBy: schedule.sortBy }),
    sortDirection: schedule.direction,
    limit: 5,
    maxLimit: schedule.maxLimit,
    maxDeletes: 1,
    changes: schedule.kind !== "jsonl", // a JSONL copy keeps no change table
  };
  let sweeping = false;
  let trusted = false;
  const sync = (
    sweep: number,
    run: { signal?: AbortSignal; maxDeletes?: number } = {},
  ) =>
    copy.with((sink) =>
      syncList(fake.client, "transactions", {
        ...options,
        ...run,
        sink: watched(sink, () => sweeping = true),
        sweep,
      })
    );
  for (const run of schedule.runs) {
    const controller = new AbortController();
    if (run.fault === "mass") massDelete(fake, random, present);
    if (run.restore) restore(fake, present, await copy.rows());
    const first = fake.listRequests;
    // Items in the copy and the list for the whole run: no cycle may drop one.
    const held = new Set((await copy.rows()).map(([id]) => id));
    const throughout = new Set(present.ids.filter((id) => held.has(id)));
    fake.beforeList = (n) => {
      change(fake, schedule.churn, random, present);
      const now = new Set(present.ids);
      // A moved item may jump to where the cycle has read: to it, a delete and an insert.
      for (const id of throughout) {
        if (!now.has(id) || present.moved.has(id)) throughout.delete(id);
      }
      if (run.crashAt !== null && n - first >= run.crashAt) {
        controller.abort(new Error("crash"));
      }
    };
    sweeping = false;
    fake.afterList = (items, n) => fault(run, items, n - first, sweeping);
    const refused = await sync(run.sweep, {
      signal: controller.signal,
      maxDeletes: run.maxDeletes,
    }).then(() => false, (error) => {
      // Another list's answer may be refused as one out of order too (its page 1 begins after the copy's rows).
      const foreign = run.fault === "foreign" && error.reason === "unordered";
      if (
        error instanceof SyncError &&
        (error.reason === "too-many-deletes" || foreign)
      ) {
        reached.add(`refused (${run.fault})`);
        return true;
      }
      if (!controller.signal.aborted) throw error;
      reached.add("crash");
      return false;
    });
    const after = new Set((await copy.rows()).map(([id]) => id));
    // Removed, marked, or published as deleted in the change table.
    const published = new Set(await copy.deletesSince?.() ?? []);
    const lost = [...throughout].filter((id) =>
      !after.has(id) || published.has(id)
    );
    // A foreign answer the guard lets through (within its share, or at
    // maxDeletes 1), in this run or staged by one before in the same cycle,
    // is to it a delete like any other: a run may then remove no more than
    // that share, and foreign items enter until a later cycle.
    trusted ||= run.fault === "foreign" && !refused;
    const accepted = trusted;
    const allowed = accepted
      ? Math.floor(run.maxDeletes * Math.max(held.size, 1))
      : 0;
    if (lost.length > allowed) {
      throw new Error(`${lost[0]} existed throughout, and the run removed it`);
    }
    const foreign = [...after].find((id) =>
      id.startsWith("f") && !held.has(id)
    );
    if (!accepted && foreign !== undefined) {
      throw new Error(`${foreign} entered the copy`);
    }
  }
  fake.beforeList = undefined;
  fake.afterList = undefined;
  // Changes stop: the copy must be equal within the bound.
  const n = (await source(fake)).length;
  // A cycle's pages, and the read that confirms a short last one (its end
  // is known only by the newest item committed when it began).
  const window = schedule.maxLimit - 4;
  const pages = Math.ceil(Math.max(n, 1) / window) + 1;
  // The requests that find the cycle's place again where the list moved
  // under it, by at most as many items as it ever held (ASC, least page 2,
  // 30 % deleted and another list taken: 4 runs of a sweep of 1 went to
  // finding it, and the copy was equal a run past 2 × ⌈pages / sweep⌉ + 2).
  const seek = seekRequests(Math.max(n, present.appended), window);
  const bound = 2 * Math.ceil(pages / schedule.sweep) +
    Math.ceil(seek / schedule.sweep) + 2;
  let equalAfter = -1;
  for (let i = 1; i <= bound; i++) {
    await sync(schedule.sweep);
    if (await same(copy, fake)) {
      equalAfter = i;
      break;
    }
  }
  if (equalAfter < 0) {
    throw new Error(
      `not equal after ${bound} runs: ${await differences(copy, fake)}`,
    );
  }
  reached.add(equalAfter > 1 ? "several runs" : "one run");
  await copy.checkChanges?.();
}

/**
 * The list requests that find a sweep's place again after the list moved by
 * `moved` items under it, at most (docs/sync.md, the freshness bound): a miss
 * the margin covers, twice as far each probe until bracketed, then halfway,
 * and the window that lands.
 */
function seekRequests(moved: number, window: number): number {
  return 2 * Math.ceil(Math.log2(Math.max(moved / window, 1))) + 2;
}

/** A sink that says when the run writes its first sweep batch. */
function watched(sink: SyncSink<Row>, onSweep: () => void): SyncSink<Row> {
  return {
    ...sink,
    write(items, checkpoint, ids, context) {
      if (context?.phase === "sweep") onSweep();
      return sink.write(items, checkpoint, ids, context);
    },
  };
}

/**
 * A run's planted fault on the items answered to its request `n`: a page
 * cut to `cut` items (none to 24, under any window: no size proves it; an odd cut then an empty read), pages cut from `faultAt` on (the service
 * lowered its largest), or, once the sweep writes, another list (same fields, every id prefixed, so in the same order).
 */
function fault(
  run: Schedule["runs"][number],
  items: readonly Row[],
  n: number,
  sweeping: boolean,
): Row[] {
  if (run.fault === "short" && n === run.faultAt && items.length > run.cut) {
    reached.add("short page");
    return items.slice(0, run.cut);
  }
  // An odd cut's next read answers empty: no end (it agreed with the cut, and a cycle removed what exists).
  if (run.fault === "short" && n === run.faultAt + 1 && run.cut % 2 === 1) {
    reached.add("short page, then empty");
    return [];
  }
  // The service lowers its largest page (to 25-34 items, above the cost bound) from request `faultAt` on.
  const lowered = 25 + run.cut % 10;
  if (run.fault === "lowered" && n >= run.faultAt && items.length > lowered) {
    reached.add("lowered page");
    return items.slice(0, lowered);
  }
  if (run.fault === "foreign" && sweeping && n >= run.faultAt) {
    reached.add("foreign answer");
    return items.map((item) => ({
      ...item,
      transactionID: `f${item.transactionID}`,
    }));
  }
  return [...items];
}

/** Removes 30 % of the list at random places, behind the copy's edge mostly. */
function massDelete(
  fake: ReturnType<typeof inProcess>,
  random: () => number,
  present: Present,
): void {
  const count = Math.floor(present.ids.length * 0.3);
  for (let i = 0; i < count; i++) {
    const at = Math.floor(random() * present.ids.length);
    const [id] = present.ids.splice(at, 1) as [string];
    fake.service.remove("transactions", id);
  }
  if (count > 0) reached.add("mass delete");
}

/**
 * Puts back, as the copy holds them, up to 3 items deleted from the list that the copy still holds: a spread cycle
 * that passed their place while they were missing must not remove them now (r152 F1).
 */
function restore(
  fake: ReturnType<typeof inProcess>,
  present: Present,
  rows: readonly [string, string][],
): void {
  const ids = new Set(present.ids);
  // Once each: a JSONL copy holds a moved item's old line and its new one (the last one is the row).
  const back = [...new Map(rows)].filter(([id]) =>
    !ids.has(id) && !id.startsWith("f")
  );
  for (const [id, text] of back.slice(0, 3)) {
    fake.service.insert("transactions", JSON.parse(text));
    present.ids.push(id);
    reached.add("restore");
  }
}

/** The ids the list holds, as the schedule changed it. */
interface Present {
  readonly ids: string[];
  appended: number;
  /** Ids whose sort value changed. */
  readonly moved: Set<string>;
}

/** Appends, back-dated inserts, field changes and deletes, at random places. */
function change(
  fake: ReturnType<typeof inProcess>,
  churn: Schedule["churn"],
  random: () => number,
  present: Present,
): void {
  const pick = () => Math.floor(random() * present.ids.length);
  for (let i = 0; i < churn.append; i++) {
    fake.service.insertTransactions(1);
    present.ids.push(`tx_${String(++present.appended).padStart(6, "0")}`);
  }
  for (let i = 0; i < churn.insert && present.ids.length > 0; i++) {
    const id = `${present.ids[pick()]}_${++serial}`;
    fake.service.insert("transactions", {
      transactionID: id,
      // Before every item of the list: behind the copy's edge either way.
      creationDate: new Date(Date.UTC(2000, 0, 1) + serial * 1000)
        .toISOString(),
      amount: 1,
    });
    present.ids.push(id);
    reached.add("insert behind");
  }
  for (let i = 0; i < churn.update && present.ids.length > 0; i++) {
    const id = present.ids[pick()]!;
    fake.service.update("transactions", id, {
      amount: Math.round(random() * 1e6),
    });
    reached.add("update");
  }
  for (let i = 0; i < churn.move && present.ids.length > 0; i++) {
    // Half the time the last item inserted behind: the sweep stages such an item until its cycle ends.
    const behind = present.ids.filter((id) => id.includes("_", 3)).at(-1);
    const id = random() < 0.5 && behind ? behind : present.ids[pick()]!;
    const year = random() < 0.5 ? 2000 : 2100; // before every item, or after
    fake.service.update("transactions", id, {
      creationDate: new Date(Date.UTC(year, 0, 1) + ++serial * 1000)
        .toISOString(),
    });
    present.moved.add(id);
    reached.add("move");
  }
  for (let i = 0; i < churn.remove && present.ids.length > 0; i++) {
    const [id] = present.ids.splice(pick(), 1) as [string];
    fake.service.remove("transactions", id);
    reached.add("delete");
  }
}

/** The list as it stands, by id. */
async function source(fake: ReturnType<typeof inProcess>): Promise<Row[]> {
  const rows: Row[] = [];
  for await (
    const item of fake.client.list<Row>("transactions", { limit: 1000 })
  ) {
    rows.push(item);
  }
  return rows;
}

async function same(
  copy: Copy,
  fake: ReturnType<typeof inProcess>,
): Promise<boolean> {
  return await differences(copy, fake) === "";
}

async function differences(
  copy: Copy,
  fake: ReturnType<typeof inProcess>,
): Promise<string> {
  const want = new Map(
    (await source(fake)).map((
      row,
    ) => [String(row.transactionID), canonical(JSON.stringify(row))]),
  );
  const have = await copy.rows();
  const ids = have.map(([id]) => id);
  const problems: string[] = [];
  if (new Set(ids).size !== ids.length) problems.push("an id twice");
  for (const [id, text] of have) {
    if (!want.has(id)) problems.push(`${id} deleted but kept`);
    else if (want.get(id) !== canonical(text)) problems.push(`${id} stale`);
  }
  const held = new Set(ids);
  for (const id of want.keys()) {
    if (!held.has(id)) problems.push(`${id} missing`);
  }
  return problems.slice(0, 5).join(", ");
}

/** An item's JSON with its keys sorted: PostgreSQL's jsonb keeps its own order. */
function canonical(text: string): string {
  const sorted = (value: unknown): unknown =>
    typeof value !== "object" || value === null || Array.isArray(value)
      ? value
      : Object.fromEntries(
        Object.entries(value).sort(([a], [b]) => a < b ? -1 : 1).map((
          [key, field],
        ) => [key, sorted(field)]),
      );
  return JSON.stringify(sorted(JSON.parse(text)));
}

/** A copy, whatever its sink. */
export interface Copy {
  with<R>(run: (sink: SyncSink<Row>) => Promise<R>): Promise<R>;
  /** Its rows: id and item JSON (keys in any order). */
  rows(): Promise<[string, string][]>;
  /** The change table replayed gives exactly the copy. */
  checkChanges?(): Promise<void>;
  /** The ids the change table published as deleted since the last call. */
  deletesSince?(): Promise<string[]>;
}

/**
 * Replays a change table's rows (by seq) and checks they give exactly the
 * copy's `live` ids: each insert of an id not held, each update and delete
 * of one held.
 */
export function checkReplay(
  changes: readonly { id: string; change: string }[],
  live: readonly string[],
): void {
  const held = new Set<string>();
  for (const { id, change } of changes) {
    if (change === "delete") {
      if (!held.delete(id)) {
        throw new Error(`a delete of ${id}, never inserted`);
      }
    } else if (change === "insert") {
      if (held.has(id)) throw new Error(`${id} inserted twice`);
      held.add(id);
    } else if (!held.has(id)) {
      throw new Error(`an update of ${id}, never inserted`);
    }
  }
  if (live.length !== held.size || live.some((id) => !held.has(id))) {
    throw new Error(
      `the change table gives ${held.size} rows, the copy holds ${live.length}`,
    );
  }
  reached.add("change table");
}

/** The kinds of step every sink's schedules must reach, beside `<kind> ASC|DESC`. */
export const STEPS = [
  "crash",
  "insert behind",
  "update",
  "move",
  "delete",
  "restore",
  "several runs",
  "change table",
  "short page",
  "foreign answer",
  "mass delete",
  "lowered page",
  "refused (foreign)",
  "refused (mass)",
];

/**
 * The deep search's first find once items came back (r152 F1): an item deleted while a spread cycle passed its place,
 * back before the run that ends the cycle, was removed by that run.
 */
export function restored(kind: string): [Schedule] {
  const run = plainRun(1);
  return [{
    kind,
    direction: "ASC",
    sortBy: "creationDate",
    items: 0,
    maxLimit: 25,
    least: 0,
    churn: { append: 1, insert: 2, update: 0, remove: 1, move: 0 },
    runs: [
      { ...run, sweep: 0, crashAt: 1 },
      { ...run, sweep: Infinity },
      run,
      { ...run, restore: true },
    ],
    sweep: 1,
    seed: 999983,
  }];
}

/**
 * Newest first, a list that moves under every read (2 appended, 2 inserted
 * behind, 2 changed, 1 removed before each request): a sweep window that holds
 * rows the cycle has yet to see ends at another item each time it is read
 * again, so its doubts were never counted as in a row (64 reads, the run
 * failed: a case seed 8 of the deep run found, r163 P1).
 */
export function movingUnderReads(kind: string): [Schedule] {
  const run = plainRun(Infinity);
  return [{
    kind,
    direction: "DESC",
    sortBy: "creationDate",
    items: 0,
    maxLimit: 27,
    least: 0,
    churn: { append: 2, insert: 2, update: 2, remove: 1, move: 0 },
    runs: [{ ...run, sweep: 0 }, run, run, { ...run, maxDeletes: 0.1 }],
    sweep: 1,
    seed: 149943,
  }];
}

/**
 * Newest first, a list of about one item that loses two and gains one at the
 * top and one behind before each request: the check of a sweep's first page
 * read a page of 24 holding one back-dated item and took it for 24 new ones
 * hiding the copy's row, so the run was refused as stale (deep seed 10, r163 P2).
 */
export function emptiedUnderReads(kind: string): [Schedule] {
  return [{
    kind,
    direction: "DESC",
    sortBy: "creationDate",
    items: 1,
    maxLimit: 25,
    least: 0,
    churn: { append: 1, insert: 1, update: 1, remove: 2, move: 0 },
    runs: [
      plainRun(Infinity),
      { ...plainRun(Infinity), crashAt: 1 },
      plainRun(0),
      { ...plainRun(1), maxDeletes: 0.1 },
      plainRun(0),
    ],
    sweep: 1,
    seed: 1,
  }];
}

/**
 * A cycle whose place the list moved far under: 30 % deleted, then another
 * list's answer taken (`maxDeletes` 1) and three deleted items back. With a
 * sweep of 1, the first 4 runs after changes stopped went to finding the
 * cycle's place again, and the copy was equal only a run past
 * 2 × ⌈pages / sweep⌉ + 2 (deep seed 12, r163 P3): the bound counts that seek.
 */
export function movedUnderCursor(kind: string): [Schedule] {
  const run = plainRun(Infinity);
  return [{
    kind,
    direction: "ASC",
    sortBy: undefined,
    items: 123,
    maxLimit: 25,
    least: 2,
    churn: { append: 0, insert: 0, update: 0, remove: 1, move: 0 },
    runs: [
      { ...run, fault: "mass" },
      { ...run, fault: "foreign", faultAt: 3, restore: true },
    ],
    sweep: 1,
    seed: 1,
  }];
}

/** A run of `sweep` with no crash, fault or items back, and `maxDeletes` 1. */
function plainRun(sweep: number): Schedule["runs"][number] {
  return {
    sweep,
    crashAt: null,
    fault: "none",
    faultAt: 1,
    cut: 0,
    maxDeletes: 1,
    restore: false,
  };
}
