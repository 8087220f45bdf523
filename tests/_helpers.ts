// Shared by the tests: a clock the test moves by hand, and small waits.

import { delay } from "../src/_retry.ts";

/** A clock in epoch ms that moves only when the test says so. */
export interface ManualClock {
  (): number;
  /** Moves the clock forward by `ms`. */
  advance(ms: number): void;
  /** Sets the clock to `epochMs`. */
  set(epochMs: number): void;
}

/** Creates a {@linkcode ManualClock} starting at `start` (default: a fixed UTC hour). */
export function manualClock(start = Date.UTC(2026, 10, 21, 10)): ManualClock {
  let time = start;
  const clock = (() => time) as ManualClock;
  clock.advance = (ms) => {
    time += ms;
  };
  clock.set = (epochMs) => {
    time = epochMs;
  };
  return clock;
}

/** Resolves after `ms` real milliseconds, or rejects when `signal` aborts. */
export { delay as sleep };

/** Waits (up to `limitMs`) until `condition()` holds; throws otherwise. */
export async function waitFor(
  condition: () => boolean,
  limitMs = 2000,
): Promise<void> {
  const until = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await delay(2);
  }
}
