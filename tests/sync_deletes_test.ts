// The guard's pure functions over (history, now): what a confirmed mass
// delete leaves of the 24 hours (its own deletes do not count; those before
// it do), and that slices stay bounded after it.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import fc from "fast-check";
import {
  confirms,
  countedAt,
  type DeleteRecord,
  guardClock,
  recentDeletes,
  tooMany,
  tooManyDeletes,
  withDeletes,
} from "../src/sync/_deletes.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const t = Date.UTC(2026, 10, 28);
/** 50 of 1,000 removed an hour before the mass delete. */
const earlier: DeleteRecord[] = [{ at: t - HOUR, deleted: 50, held: 1000 }];
/** The mass delete: 300 of the 950 left. */
const mass: DeleteRecord = { at: t, deleted: 300, held: 950 };

Deno.test("only a run at the share a refusal named, or more, confirms it", () => {
  const refused = { cycle: 3, at: t - HOUR, maxDeletes: 0.3 };
  equal(confirms(undefined, 1), false); // a wider share unasked
  equal(confirms(refused, 0.29), false);
  equal(confirms(refused, 0.3), true);
  equal(confirms(refused, 1), true);
});

Deno.test("a confirmed cycle's deletes do not count, what the 24 hours removed before them still does: a default run an hour later may remove 50 more (10 % of 1,000, less the 50 before)", () => {
  const history = withDeletes(earlier, mass, true);
  deepStrictEqual(history, earlier);
  const recent = recentDeletes(history, t + HOUR);
  deepStrictEqual(recent, { deleted: 50, largest: 1000 });
  equal(tooMany(1, 650, 0.1, recent), false);
  equal(tooMany(50, 650, 0.1, recent), false);
  equal(tooMany(51, 650, 0.1, recent), true);
  // Without deletes before it, the share is of what the confirmed cycle kept.
  const alone = recentDeletes(withDeletes([], mass, true), t + HOUR);
  equal(tooMany(65, 650, 0.1, alone), false);
  equal(tooMany(66, 650, 0.1, alone), true);
});

Deno.test("a confirmation the default share lets through forgives nothing: 70 of 1,000 confirmed by a default run after a stricter run's refusal count, so 31 more within the day need more than 0.1 (r168a F3: 160 went in 2 hours)", () => {
  const seventy = { at: t, deleted: 70, held: 1000 };
  const history = withDeletes([], seventy, true);
  deepStrictEqual(history, [seventy]);
  const recent = recentDeletes(history, t + HOUR);
  equal(tooMany(30, 930, 0.1, recent), false);
  equal(tooMany(31, 930, 0.1, recent), true);
  // With the 50 before them, the 70 go past the default share: forgiven.
  deepStrictEqual(withDeletes(earlier, seventy, true), earlier);
});

Deno.test("a confirmation is judged on its record's date and forgives no uncounted cycle: on a clock 23 hours behind, 20 the default share lets through count; a confirming run stopped before its sink counted leaves its cycle uncounted (r171a F4: 105 of 910 in an hour; F2: 70 forgiven, 90 more an hour later)", () => {
  const ninety = [{ at: t, deleted: 90, held: 1000 }];
  const twenty = { at: t + 25 * HOUR, deleted: 20, held: 910 };
  deepStrictEqual(withDeletes(ninety, twenty, true, t + 2 * HOUR), [
    ...ninety,
    twenty,
  ]);
  const uncounted = { at: t, deleted: 0, held: 0, uncounted: true as const };
  deepStrictEqual(withDeletes([], uncounted, true), [uncounted]);
  equal(tooMany(1, 930, 0.1, recentDeletes([uncounted], t + HOUR)), true);
});

Deno.test("an unconfirmed cycle's deletes count for 24 hours: 1 more an hour later needs 0.36", () => {
  const history = withDeletes(earlier, mass);
  equal(history.length, 2);
  const recent = recentDeletes(history, t + HOUR);
  deepStrictEqual(recent, { deleted: 350, largest: 1000 });
  equal(tooMany(1, 650, 0.1, recent), true);
  const error = tooManyDeletes(1, 650, 0.1, "copy", recent);
  equal(error.reason, "too-many-deletes");
  equal(error.maxDeletesNeeded, 0.36); // 351 of 1,000
});

Deno.test("a clock stepped back forgets no delete: a record dated after now counts and keeps its date, so a cycle completed on a clock 25 hours behind ages none away for the right clock", () => {
  const history = withDeletes([], { at: t, deleted: 90, held: 1000 });
  // 1 ms, then an hour earlier: the 90 still count.
  deepStrictEqual(recentDeletes(history, t - 1), {
    deleted: 90,
    largest: 1000,
  });
  equal(tooMany(90, 910, 0.1, recentDeletes(history, t - HOUR)), true);
  const behind = { at: t - 25 * HOUR, deleted: 0, held: 910 };
  deepStrictEqual(withDeletes(history, behind), history);
  const later = withDeletes(history, { ...behind, deleted: 5 });
  equal(tooMany(90, 910, 0.1, recentDeletes(later, t + HOUR / 2)), true);
  equal(recentDeletes(later, t + 24 * HOUR).deleted, 0);
  // Dated years ahead, it holds every cycle back until a confirmation: then it counts 24 hours from that.
  const ahead = withDeletes([], {
    at: t + 3650 * DAY,
    deleted: 100,
    held: 1000,
  });
  const confirmed = withDeletes(ahead, { ...behind, at: t, deleted: 10 }, true);
  equal(recentDeletes(confirmed, t + DAY - 1).deleted, 100);
  equal(recentDeletes(confirmed, t + DAY).deleted, 0);
});

Deno.test("a cycle that removes nothing is never refused, whatever the 24 hours removed before it", () => {
  const raised = withDeletes([], { at: t, deleted: 300, held: 1000 });
  equal(tooMany(0, 700, 0.1, recentDeletes(raised, t + HOUR)), false);
  equal(tooMany(1, 700, 0.1, recentDeletes(raised, t + HOUR)), true);
});

Deno.test("a confirmation that removed nothing loosens nothing: the 24 hours go on", () => {
  const none = { at: t, deleted: 0, held: 950 };
  deepStrictEqual(withDeletes(earlier, none, true), earlier);
  deepStrictEqual(withDeletes(earlier, none), earlier);
});

Deno.test("slices after a confirmed cycle are bounded: runs an hour apart finding 9 % more of the list gone remove at most 50 of the 650 within 24 hours of the deletes before it", () => {
  let history = withDeletes(earlier, mass, true);
  let held = 650, list = 650, refused = 0;
  for (let hour = 1; hour <= 23; hour++) {
    const now = t + hour * HOUR;
    list = Math.round(list * 0.91);
    const unseen = held - list;
    if (tooMany(unseen, held, 0.1, recentDeletes(history, now))) {
      refused++;
      continue;
    }
    history = withDeletes(history, { at: now, deleted: unseen, held });
    held = list;
  }
  ok(650 - held <= 50, `${held}`);
  ok(refused > 0);
});

Deno.test("the share a refusal names lets that cycle through, and a hundredth less does not (0.57 of 100 refused 57 again: 0.57 × 100 is 56.99… in floating point)", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 10_000_000 }),
      fc.double({ min: 0, max: 1, noNaN: true }),
      fc.double({ min: 0, max: 0.5, noNaN: true }),
      (held, unseenShare, deletedShare) => {
        const unseen = Math.max(1, Math.floor(unseenShare * held));
        const deleted = Math.floor(deletedShare * held);
        const recent = { deleted, largest: held };
        const needed = tooManyDeletes(unseen, held, 0.1, "x", recent)
          .maxDeletesNeeded!;
        if (needed >= 1) return; // 1 turns the guard off
        equal(tooMany(unseen, held, needed, recent), false);
        const less = Math.round(needed * 100 - 1) / 100;
        if (less > 0) equal(tooMany(unseen, held, less, recent), true);
      },
    ),
    {
      numRuns: 2_000,
      examples: [[100, 0.57, 0], [100, 0.29, 0], [10_000, 0.57, 0], [
        100,
        0.07,
        0,
      ]],
    },
  );
});

Deno.test("a run on a clock days ahead erases no day: the records of the newest one's 24 hours stay, and count again once the clock is right (one such run removing nothing let a fresh share through: 174 of 1,000 within the hour)", () => {
  const history = withDeletes([], { at: t, deleted: 90, held: 1000 });
  for (const deleted of [0, 5]) {
    const ahead = { at: t + 30 * DAY, deleted, held: 910 };
    const kept = withDeletes(history, ahead);
    equal(recentDeletes(kept, t + HOUR).deleted, 90 + deleted);
    equal(tooMany(11, 910, 0.1, recentDeletes(kept, t + HOUR)), true);
  }
  // Time moving on ages them away as before.
  const later = withDeletes(history, {
    at: t + 2 * DAY,
    deleted: 5,
    held: 910,
  });
  deepStrictEqual(recentDeletes(later, t + 2 * DAY), {
    deleted: 5,
    largest: 910,
  });
});

Deno.test("an uncounted cycle takes the day's share as spent: any delete is refused, naming a share above the run's (not 1, which turns every guard off); a run at that share is judged without it; the uncounted cycle counts on for its 24 hours (a confirmation that dropped it let a default run remove 89 more: 188 of 1,000 in 2 hours)", () => {
  const uncounted = { at: t, deleted: 0, held: 0, uncounted: true as const };
  const history = withDeletes(earlier, uncounted);
  equal(history.length, 2);
  const recent = recentDeletes(history, t + HOUR);
  equal(tooMany(1, 950, 0.1, recent), true);
  equal(tooMany(0, 950, 0.1, recent), false);
  const needed = tooManyDeletes(1, 950, 0.1, "copy", recent).maxDeletesNeeded!;
  equal(needed, 0.11); // above the run's 0.1: a default run does not confirm it
  equal(tooManyDeletes(80, 950, 0.1, "copy", recent).maxDeletesNeeded, 0.13); // 50 before + 80, of 1,000
  const vouched = recentDeletes(history, t + HOUR, true);
  deepStrictEqual(vouched, { deleted: 50, largest: 1000 });
  equal(tooMany(80, 950, 0.13, vouched), false);
  const after = withDeletes(
    history,
    { at: t + HOUR, deleted: 80, held: 950 },
    true,
  );
  deepStrictEqual(after, history);
  equal(tooMany(1, 870, 0.1, recentDeletes(after, t + 2 * HOUR)), true);
  equal(recentDeletes(after, t + DAY - 1).deleted >= 2 ** 52, true);
  equal(recentDeletes(after, t + DAY).deleted, 0);
});

Deno.test("the guard's clock: a run on a clock up to 24 hours behind takes the latest time the copy holds, so its deletes count on the right clock's day and a confirmation moves no record back (a confirmation 20 hours behind let 190 of 1,000 go); from further ahead, its own", () => {
  const deletions = [{ at: t - HOUR, deleted: 90, held: 1000 }];
  const copy = { verifiedAt: t, deletions };
  const behind = guardClock(copy, t - 20 * HOUR);
  equal(behind, t);
  equal(guardClock(copy, t + HOUR), t + HOUR);
  equal(
    guardClock({
      ...copy,
      refused: { cycle: 2, at: t + 3650 * DAY, maxDeletes: 0.2 },
    }, t - 20 * HOUR),
    t,
  );
  equal(guardClock({}, t - 20 * HOUR), t - 20 * HOUR);
  const confirmed = withDeletes(deletions, {
    at: behind,
    deleted: 100,
    held: 910,
  }, true);
  deepStrictEqual(confirmed, deletions);
  equal(recentDeletes(confirmed, t + 22 * HOUR).deleted, 90);
});

Deno.test("deletes are counted and kept on the run's own clock, dated as the guard's clock says: a record dated by a host ahead prunes none of the right clock's day (its 50 were forgotten, and 90 more went)", () => {
  const history = [
    { at: t + 25 * HOUR, deleted: 5, held: 1000 },
    { at: t + HOUR, deleted: 50, held: 995 },
  ];
  const record = { at: t + 25 * HOUR, deleted: 10, held: 945 };
  const next = withDeletes(history, record, false, t + 2 * HOUR);
  equal(recentDeletes(next, t + 3 * HOUR).deleted, 65);
});

Deno.test("a record dated past the next 24 hours (a clock once far ahead) counts its deletes but is no base: 5 removed 10 years ahead of 1,000 let 95 a day go as the copy shrank (95 of 520, 18 %)", () => {
  const far = withDeletes([], { at: t + 3650 * DAY, deleted: 5, held: 1000 });
  deepStrictEqual(recentDeletes(far, t), { deleted: 5, largest: 0 });
  equal(tooMany(48, 520, 0.1, recentDeletes(far, t)), true); // 5 + 48 of 520
  equal(tooMany(47, 520, 0.1, recentDeletes(far, t)), false);
});

Deno.test("records are kept a day longer than they count: a host ahead that removes nothing, after a delete dated on its time, prunes none of the right clock's day (it pruned 97 of 1,000, and 87 more went: 187 in 2.7 hours)", () => {
  const history = [
    { at: t + HOUR, deleted: 97, held: 1000 },
    { at: t + 26 * HOUR, deleted: 3, held: 903 },
  ];
  const none = { at: t + 27 * HOUR, deleted: 0, held: 900 };
  const kept = withDeletes(history, none, false, t + 27 * HOUR);
  deepStrictEqual(kept, history);
  equal(recentDeletes(kept, t + 4 * HOUR).deleted, 100);
  // Kept, not counted: a day later on the right clock, the 97 are out of the day.
  equal(recentDeletes(kept, t + 25 * HOUR).deleted, 3);
});

Deno.test("a cycle's end counts its 24 hours at the run's clock, or confirming a refusal, as late as the refusal counted them (a clock stepped back 23 hours since counted 92 deletes the refusal had not, and refused its share)", () => {
  const refused = { cycle: 3, at: t + 31 * HOUR, maxDeletes: 0.12 };
  equal(countedAt(refused, 0.12, t + 8 * HOUR), t + 31 * HOUR);
  equal(countedAt(refused, 0.2, t + 40 * HOUR), t + 40 * HOUR);
  equal(countedAt(refused, 0.1, t + 8 * HOUR), t + 8 * HOUR); // no confirmation
  equal(countedAt(undefined, 1, t), t);
});
