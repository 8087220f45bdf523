// The sync's decisions, directly: where a window goes and what it proves.

import fc from "fast-check";
import { compareKeys } from "../src/sync/_key_order.ts";
import {
  judgeWindow,
  type SyncKey,
  type WindowPlan,
  type WindowState,
} from "../src/sync/_window.ts";
import { nextWindow, planWindow } from "../src/sync/_window_plan.ts";
import { goesOn, type PageRead } from "../src/sync/_short_end.ts";
import { runStart, sweepStart } from "../src/sync/_checkpoint.ts";
import { SyncError } from "../src/sync/mod.ts";
import { ApiError } from "../src/core/errors.ts";

function equal<T>(actual: T, expected: T, message = "values differ"): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(
      `${message}: ${JSON.stringify(actual)} !== ${JSON.stringify(expected)}`,
    );
  }
}

const key = (n: number): SyncKey => ({ value: n, id: `id${n}` });
const keys = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => key(from + i));
/** A window of 10 from `start` (page 1: the page number plays no part here). */
const window10 = (start: number): WindowPlan => ({ start, limit: 10, page: 1 });
const state = (edge: number | null, offset: number): WindowState => ({
  edge: edge === null ? null : key(edge),
  offset,
  margin: 2,
  accepted: 10,
  refused: Infinity,
  maxLimit: 100,
});

Deno.test("planWindow overlaps the edge by the margin and reaches furthest past it", () => {
  equal(planWindow(0, 2, 100), { start: 0, limit: 100, page: 1 });
  // Offset 1000, margin 2: the window must start at or before 997.
  const plan = planWindow(1000, 2, 100);
  const end = plan.start + plan.limit;
  if (plan.start > 997 || end < 1080 || plan.start % plan.limit !== 0) {
    throw new Error(`poor window ${JSON.stringify(plan)}`);
  }
  // Where every size divides the offset (cap 3, offset 6), the largest is read.
  equal(planWindow(6, 0, 3), { start: 3, limit: 3, page: 2 });
  // A list as long as the cap (30) keeps no margin of 32: the window keeps
  // MIN_MARGIN (overlapping by 3), not one item that any delete moves past.
  const small = planWindow(30, 32, 30);
  if (small.start > 27 || small.start + small.limit <= 30) {
    throw new Error(`no margin kept: ${JSON.stringify(small)}`);
  }
});

Deno.test("planWindow: where every size over the refused ones up to the cap divides the offset, the smallest size over the cap whose page holds fewer than 25 items up to the offset is read, never one over `most`; nextWindow asks it once at a place", () => {
  // Sizes 49 and under refused, cap 50, offset 5,000: 51 from 4,998 holds 2 items before it.
  equal(planWindow(5000, 16, 50, 49, 100), {
    start: 4998,
    limit: 51,
    page: 99,
  });
  // Nothing over the cap allowed: the refused size whose 400 ends the run, as before.
  if (planWindow(5000, 16, 50, 49).limit > 49) throw new Error("asked over");
  const stuck = { ...state(4999, 5000), accepted: 50, refused: 51, least: 49 };
  equal(nextWindow(stuck).limit, 51);
  if (nextWindow({ ...stuck, overTried: 5000 }).limit > 49) {
    throw new Error("the window over the cap asked again at the same place");
  }
});

Deno.test("judgeWindow: after a full window that shows d items deleted before the edge since the window before, the margin keeps 2d (at most RESUME_MARGIN, and a quarter of the largest size honoured), not half the last", () => {
  // The edge (item 500) stood at 501; a window from 490 finds it at 496.
  const margin = (accepted: number) => {
    const before = { ...state(500, 501), accepted };
    const verdict = judgeWindow(before, window10(490), keys(495, 504));
    return verdict.kind === "commit" ? verdict.next.margin : undefined;
  };
  equal(margin(1000), 10);
  equal(margin(10), 2); // no window of 10 keeps more: a short list
});

Deno.test("judgeWindow commits a window that starts at or before the edge, and only what follows the edge", () => {
  const verdict = judgeWindow(state(5, 6), window10(3), keys(4, 13));
  equal(verdict.kind, "commit");
  if (verdict.kind !== "commit") return;
  equal(verdict.fresh, { from: 2, to: 10 });
  equal(verdict.ended, false);
  equal(verdict.next.edge, key(13));
  equal(verdict.next.offset, 13);
});

Deno.test("judgeWindow sees a gap when the window starts after the edge, and moves back", () => {
  const verdict = judgeWindow(state(5, 6), window10(4), keys(7, 16));
  equal(verdict.kind, "gap");
  equal(verdict.next.offset, 4);
  equal(verdict.next.margin, 8);
  equal(verdict.next.edge, key(5));
});

Deno.test("judgeWindow: page 1 beginning after the edge proves all the pass committed gone (lost); page 1 at or before it, or a first window, does not", () => {
  const lost = (edge: number | null, first: number) => {
    const verdict = judgeWindow(
      state(edge, 40),
      window10(0),
      keys(first, first + 9),
    );
    return verdict.kind === "commit" && verdict.lost;
  };
  equal([lost(5, 6), lost(5, 5), lost(5, 1), lost(null, 6)], [
    true,
    false,
    false,
    false,
  ]);
  const descending = { ...state(5, 40), descending: true };
  const down = judgeWindow(descending, window10(0), keys(1, 4).reverse());
  equal(down.kind === "commit" && down.lost, true);
  // Not page 1: a window after the edge is a gap, read again earlier.
  equal(judgeWindow(state(5, 40), window10(30), keys(36, 45)).kind, "gap");
});

Deno.test("judgeWindow: a short window ends the pass; a window from the head always commits", () => {
  const short = judgeWindow(state(5, 6), window10(4), keys(5, 7));
  equal(short.kind === "commit" && short.ended, true);
  const head = judgeWindow(state(null, 0), window10(0), []);
  equal(
    head.kind === "commit" && head.ended && head.fresh.to === head.fresh.from,
    true,
  );
});

Deno.test("judgeWindow refuses keys out of order", () => {
  let reason: unknown;
  try {
    judgeWindow(state(null, 0), window10(0), [key(2), key(1)]);
  } catch (error) {
    reason = error instanceof SyncError ? error.reason : error;
  }
  equal(reason, "unordered");
});

Deno.test('judgeWindow\'s refusal of a page out of order names both sort values, as JSON, and a field mixing numbers and texts as such (newcomer r185b N3: a service ordering "10" before 9 named two ids only)', () => {
  const mixed = [{ value: "10", id: "b" }, { value: 9, id: "a" }];
  let error: SyncError | undefined;
  try {
    judgeWindow(state(null, 0), window10(0), mixed);
  } catch (thrown) {
    if (thrown instanceof SyncError) error = thrown;
  }
  equal(error?.reason, "unordered");
  for (
    const shown of ["(sort value 9)", '("10")', "numbers order before texts"]
  ) {
    equal(error?.message.includes(shown), true, shown);
  }
});

Deno.test("runStart: fresh, resumed and incremental starts; sweepStart begins a cycle over what the copy holds, or continues one", () => {
  const identity = {
    path: "t",
    sortBy: "d",
    id: "i",
    query: {},
    sortDirection: "ASC" as const,
  };
  const sizes = { limit: 50, maxLimit: 1000 };
  const fresh = runStart(undefined, identity, sizes);
  equal([fresh.resumed, fresh.head.edge], [false, null]);
  const saved = {
    version: 1 as const,
    path: "t",
    sortBy: "d",
    id: "i",
    query: {},
    edge: key(3),
    offset: 3,
    full: false,
    complete: false,
  };
  const resumed = runStart(saved, identity, sizes);
  equal([resumed.resumed, resumed.head.offset, resumed.head.margin], [
    true,
    3,
    32,
  ]);
  const begun = sweepStart(
    { ...resumed.checkpoint, complete: true },
    sizes,
    at(7),
  );
  equal([
    begun?.begins,
    begun?.sweep.upTo,
    begun?.sweep.cycle,
    begun?.state.offset,
  ], [
    true,
    key(3),
    1,
    0,
  ]);
  const cursor = { ...begun!.sweep, edge: key(1), offset: 1 };
  const going = sweepStart({ ...saved, sweep: cursor }, sizes, at(9));
  equal([going?.begins, going?.sweep.startedAt, going?.state.edge], [
    false,
    7,
    key(1),
  ]);
  equal(sweepStart({ ...saved, edge: null }, sizes, at(9)), undefined);
  for (
    const bad of [
      {},
      { ...saved, version: 2 },
      { ...saved, offset: -1 },
      { ...saved, sortDirection: "DESC" },
      { ...saved, sweep: { edge: null } },
    ]
  ) {
    let option: unknown;
    try {
      runStart(bad, identity, sizes);
    } catch (error) {
      option = (error as TypeError & { option: string }).option;
    }
    equal(option, "sink");
  }
});

Deno.test("runStart: a checkpoint's query is the same whatever the order of its keys, commas in keys and values too; another query is refused", () => {
  const query = { "a": "b,c", "a,b": "c" };
  const identity = (q: Record<string, string>) => ({
    path: "t",
    sortBy: "d",
    id: "i",
    query: q,
    sortDirection: "ASC" as const,
  });
  const sizes = { limit: 50, maxLimit: 1000 };
  const saved = runStart(undefined, identity(query), sizes).checkpoint;
  const reordered = { "a,b": "c", "a": "b,c" };
  equal(runStart(saved, identity(reordered), sizes).checkpoint.path, "t");
  let option: unknown;
  try {
    runStart(saved, identity({ "a": "b,c", "a,b": "d" }), sizes);
  } catch (error) {
    option = (error as TypeError & { option: string }).option;
  }
  equal(option, "sink");
});

/** A sweep's start at `now`, continuing any cycle under way. */
function at(now: number) {
  return { now, fresh: false };
}

Deno.test("nextWindow never asks past maxLimit, also for a size honoured and one refused under a larger maxLimit before", () => {
  const before = { ...state(500, 600), accepted: 200, refused: 201 };
  equal(nextWindow({ ...before, maxLimit: 100 }).limit <= 100, true);
  const wide = nextWindow({ ...before, maxLimit: 1000 }).limit;
  equal(wide > 100 && wide <= 200, true);
});

Deno.test("a short page holding the cost bound or more is no end where it brought new items: the next window asks at most what it held (sizes honoured before, in earlier runs or in this pass, may have been lowered), and one that agrees ends the pass; under the bound, or ending at the edge, it is the end", () => {
  const plan: WindowPlan = { start: 1000, limit: 1000, page: 2 };
  const before = { ...state(1000, 1001), accepted: 1000, limit: 50, full: 0 };
  const cut = judgeWindow(before, plan, keys(1000, 1099));
  if (cut.kind !== "commit") throw new Error(cut.kind);
  equal(cut.ended, false);
  equal([cut.next.accepted, cut.next.refused], [100, 101]);
  // Seen full in this pass: a service may have lowered its largest since.
  const seen = judgeWindow({ ...before, full: 1000 }, plan, keys(1000, 1099));
  if (seen.kind !== "commit") throw new Error(seen.kind);
  equal(seen.ended, false);
  const confirm = nextWindow(seen.next);
  equal(confirm.limit <= 100, true);
  const agrees = judgeWindow(seen.next, confirm, keys(1098, 1099));
  equal(agrees.kind === "commit" && agrees.ended, true);
  const few = judgeWindow(before, plan, keys(1000, 1039));
  equal(few.kind === "commit" && few.ended, true);
  const atEdge = { ...before, edge: key(1099), full: 1000 };
  const nothingNew = judgeWindow(atEdge, plan, keys(1000, 1099));
  equal(nothingNew.kind === "commit" && nothingNew.ended, true);
});

Deno.test("a sweep's short page before the cycle's end is read again asking at most what it held, so a lowered largest page shows as a full one, not the same cut agreeing with itself", () => {
  const domain = { above: null, upTo: key(5000) };
  const before = { ...state(1000, 1001), accepted: 1000, full: 1000, domain };
  const plan: WindowPlan = { start: 1000, limit: 1000, page: 2 };
  const short = judgeWindow(before, plan, keys(1000, 1099));
  if (short.kind !== "commit") throw new Error(short.kind);
  equal(short.ended, false);
  equal([short.next.short, short.next.accepted, short.next.refused], [
    key(1099),
    100,
    101,
  ]);
  equal(nextWindow(short.next).limit <= 100, true);
});

Deno.test("a short page wholly before the edge is no end, whatever it holds from MIN_WINDOW up: the next window asks at most what it held (a service that lowered its largest under the cost bound between runs cut a size it had honoured and placed it by the cut size; the head took it as the end, and no later run found the 15 new items)", () => {
  const before = { ...state(2000, 2001), accepted: 90, limit: 100 };
  const plan: WindowPlan = { start: 1980, limit: 90, page: 23 };
  const cut = judgeWindow(before, plan, keys(1200, 1259));
  if (cut.kind !== "commit") throw new Error(cut.kind);
  equal(cut.ended, false);
  equal(nextWindow(cut.next).limit <= 60, true);
  // A list that lost every item from the edge on (and gained some before it): read again where it stands, it ends.
  const list = Array.from({ length: 2050 }, (_, i) => key(i * 0.97));
  const read = (at: WindowState, plan: WindowPlan) =>
    judgeWindow(at, plan, list.slice(plan.start, plan.start + plan.limit));
  const first = read(before, plan);
  if (first.kind !== "commit") throw new Error(first.kind);
  equal(first.ended, false);
  const second = read(first.next, nextWindow(first.next));
  equal(second.kind === "commit" && second.ended, true);
});

Deno.test("a shorter answer to a size not known honoured, all before the edge, tells nothing of where the edge stands: a service may cut it and place it by the cut size", () => {
  const before = { ...state(2000, 2000), accepted: 250, limit: 50 };
  const plan: WindowPlan = { start: 1966, limit: 983, page: 3 };
  const cut = judgeWindow(before, plan, keys(501, 750));
  if (cut.kind !== "commit") throw new Error(cut.kind);
  equal([cut.ended, cut.next.offset, cut.next.seek], [false, 2000, undefined]);
  const next = nextWindow(cut.next);
  equal(next.start <= 1999 && next.start + next.limit > 2000, true);
});

Deno.test('keys are in one total order, whatever mixes of numbers and strings the sort values hold (9 < 10 as numbers, 10 ties "10" as strings and "10" < 9 made a cycle)', () => {
  const value = fc.oneof(
    fc.integer({ min: -20, max: 20 }),
    fc.integer({ min: -20, max: 20 }).map(String),
    fc.string({ maxLength: 3 }),
  );
  const key = fc.record({ value, id: fc.constantFrom("a", "b") });
  fc.assert(
    fc.property(fc.array(key, { maxLength: 12 }), (keys) => {
      const sorted = [...keys].sort(compareKeys);
      sorted.forEach((a, i) =>
        sorted.slice(i + 1).forEach((b) => {
          if (compareKeys(a, b) > 0 || compareKeys(b, a) < 0) {
            throw new Error(`${JSON.stringify(sorted)} is no order`);
          }
        })
      );
    }),
    {
      numRuns: 2_000,
      examples: [[[{ value: 9, id: "a" }, { value: 10, id: "a" }, {
        value: "10",
        id: "a",
      }]]],
    },
  );
});

Deno.test("goesOn, nothing past a short page at one size: asked at the next, an item past the page's last there makes it a cut; none, no word or a refusal of that size leaves the end (r231a F1: one empty page of one removed 65 of 66; r232a: a refusal failed the run)", async () => {
  const end = { at: 40, last: key(39), count: 30 };
  const swept = { ...state(39, 40), domain: { above: null, upTo: key(99) } };
  const refusal = new ApiError("no", { status: 400, url: "https://x/api/l" });
  const reads: PageRead["keysOf"][] = [
    // A page of one answered empty, the list going on.
    ({ start, limit }) =>
      Promise.resolve(limit === 1 ? [] : keys(start, start + limit - 1)),
    // Empty at both sizes, or refused at the second: the list ends there.
    ({ start, limit }) => Promise.resolve(limit === 1 ? [] : keys(start, 39)),
    ({ limit }) => limit === 1 ? Promise.resolve([]) : Promise.reject(refusal),
  ];
  for (const [i, keysOf] of reads.entries()) {
    equal(await goesOn({ sign: 1, keysOf }, end, swept, 30), i === 0);
  }
});

Deno.test("goesOn, a short page that ended before the end read just before it, nothing past it: the end holds where the item just before is the page's last or before it, and is a cut where that item is past the page's last or missing (review r191a R4; attack r189a F1, F2)", async () => {
  // The list as the reads find it: items 0 to `length - 1`, keyed by their place less `shift`.
  const readOf = (length: number, shift = 0): PageRead => ({
    sign: 1,
    keysOf: ({ start, limit }) =>
      Promise.resolve(
        keys(start - shift, Math.min(start + limit, length) - 1 - shift),
      ),
  });
  const end = { at: 40, last: key(39), count: 30, moved: true };
  const swept = { ...state(39, 40), domain: { above: null, upTo: key(99) } };
  const cases: [PageRead, typeof end, boolean][] = [
    [readOf(40), end, false], // the page's last just before: the list ends there
    [readOf(40, 2), end, false], // one before it: the page's last went since
    [readOf(40, -2), end, true], // one past it: the page stood elsewhere
    [readOf(38), end, true], // none: the page stood further on than the list reaches
    [readOf(39), end, true], // none just before (one two before: no word)
    [readOf(38), { ...end, moved: false }, false], // agreed with the read before: no look back
  ];
  for (const [read, short, cut] of cases) {
    equal(await goesOn(read, short, swept, 30), cut);
  }
});
