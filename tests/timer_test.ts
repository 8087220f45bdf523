// core's startTimer and the request deadlines' use of it: a timer set on Deno's own timers (AbortSignal.timeout,
// while the global setTimeout was never replaced) fires like setTimeout's and is set once per deadline window.

import { equal } from "node:assert/strict";
import {
  DENO_OWN,
  startTimer,
  type TimerSource,
  timerSource,
} from "../src/core/_timer.ts";
import { SharedDeadlines } from "../src/core/_deadlines.ts";

/** Resolves after a turn of the event loop (8 microtask turns empty a deadline window first). */
const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("startTimer fires at once for a delay that is no number, as setTimeout does, on either source", async () => {
  const sources: TimerSource[] = [DENO_OWN, globalThis.setTimeout];
  for (const source of sources) {
    let fired = 0;
    // A setTimeout timer is unref'd: a ref'd one keeps the test's event loop up until it fires.
    const alive = setTimeout(() => {}, 1_000);
    await new Promise<void>((resolve) => {
      startTimer(() => (fired++, resolve()), NaN, source);
    });
    clearTimeout(alive);
    equal(fired, 1);
  }
});

Deno.test("the request deadlines of one window, set again after each quiet spell, wait on one AbortSignal.timeout", async () => {
  equal(timerSource(), DENO_OWN, "no fake timers were installed in this file");
  const made = AbortSignal.timeout;
  let signals = 0;
  AbortSignal.timeout = (ms) => (signals++, made.call(AbortSignal, ms));
  try {
    const deadlines = new SharedDeadlines(60_000);
    for (let call = 0; call < 20; call++) {
      deadlines.start(undefined).clear();
      await nextTask(); // the window empties: its timer is cleared
    }
    equal(signals, 1); // the window's moment
  } finally {
    AbortSignal.timeout = made;
  }
});
