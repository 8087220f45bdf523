// The guard's pure functions over (history, now): what a confirmed mass
// delete leaves of the 24 hours, and that slices stay bounded after it.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import {
  confirms,
  type DeleteRecord,
  recentDeletes,
  tooMany,
  tooManyDeletes,
  withDeletes,
} from "../src/sync/_deletes.ts";

const HOUR = 3_600_000;
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

Deno.test("a confirmed cycle starts the 24 hours afresh, from the rows it kept: a default run an hour later may remove up to 65 of them", () => {
  const history = withDeletes(earlier, mass, true);
  deepStrictEqual(history, [{ at: t, deleted: 0, held: 650 }]);
  const recent = recentDeletes(history, t + HOUR);
  deepStrictEqual(recent, { deleted: 0, largest: 650 });
  equal(tooMany(1, 650, 0.1, recent), false);
  equal(tooMany(65, 650, 0.1, recent), false);
  equal(tooMany(66, 650, 0.1, recent), true);
  // A day later the fresh start has gone too.
  deepStrictEqual(recentDeletes(history, t + 24 * HOUR), {
    deleted: 0,
    largest: 0,
  });
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

Deno.test("a confirmation that removed nothing loosens nothing: the 24 hours go on", () => {
  const none = { at: t, deleted: 0, held: 950 };
  deepStrictEqual(withDeletes(earlier, none, true), earlier);
  deepStrictEqual(withDeletes(earlier, none), earlier);
});

Deno.test("slices after a confirmed cycle are bounded: runs an hour apart finding 9 % more of the list gone remove at most 65 of the 650 within 24 hours", () => {
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
  ok(650 - held <= 65, `${held}`);
  ok(refused > 0);
});
