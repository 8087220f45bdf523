// The fake's rate limit, against a count done the slow way: its window
// arithmetic is its own, so a limiter bug cannot pass in both.

import { equal } from "node:assert/strict";
import fc from "fast-check";
import { rateGate } from "../src/testing/_fake_rate.ts";

Deno.test("the fake lets a request through exactly when fewer than the limit came through in the window before it", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: 1, max: 500 }),
      fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: 60 }),
      (requests, interval, times) => {
        let now = 0;
        const gate = rateGate({ requests, interval }, () => now, "test");
        const through: number[] = [];
        for (const at of times.sort((a, b) => a - b)) {
          now = at;
          // The window before `at`: arrivals after `at - interval`.
          const inWindow = through.filter((t) => t > at - interval).length;
          const refused = gate();
          equal(refused?.status, inWindow < requests ? undefined : 429);
          if (refused === undefined) through.push(at);
        }
      },
    ),
    { numRuns: 300, seed: 28 },
  );
});
