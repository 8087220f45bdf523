// The deadline of CPU-bound process tests scales with the load per core
// and is never shorter than the fixed one.

import { equal } from "node:assert/strict";
import { DEADLINE } from "../_processes.ts";
import { scaledDeadline } from "./_scaled_deadline.ts";

Deno.test("the CPU-bound deadline is DEADLINE times the runnable tasks per core, never less", () => {
  equal(scaledDeadline([0.3, 0.2, 0.1], 2), DEADLINE);
  equal(scaledDeadline([2, 2, 2], 2), DEADLINE);
  equal(scaledDeadline([10, 6, 1], 2), 5 * DEADLINE);
  // Load that has just gone still counts: the 5-minute average.
  equal(scaledDeadline([1, 8, 8], 2), 4 * DEADLINE);
  // A machine that reports no cores counts as one.
  equal(scaledDeadline([3, 0, 0], 0), 3 * DEADLINE);
});
