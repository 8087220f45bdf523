// Shared by the tests: a clock the test moves by hand, and fake timers.

import { type Clock, withGlobal } from "@sinonjs/fake-timers";

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

/** Fakes the timers for the length of `fn`; `timers.tickAsync` moves them. */
export async function withFakeTimers<T>(
  fn: (timers: Clock) => Promise<T>,
): Promise<T> {
  const timers = withGlobal(globalThis).install({
    toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"],
  });
  try {
    return await fn(timers);
  } finally {
    timers.uninstall();
  }
}

/** Background work handed to a provider's `waitUntil`, for a test to await. */
export function backgroundWork(): {
  waitUntil: (promise: Promise<unknown>) => void;
  settle: () => Promise<void>;
  readonly count: number;
} {
  const pending: Promise<unknown>[] = [];
  let count = 0;
  return {
    waitUntil: (promise) => void (count++, pending.push(promise)),
    settle: async () => void await Promise.all(pending.splice(0)),
    get count() {
      return count;
    },
  };
}

/** Whether `value` is `object` or reachable from it through own properties, at any depth. */
export function holdsAnywhere(
  object: object,
  value: unknown,
  seen = new Set(),
) {
  if (object === value) return true;
  if (seen.has(object)) return false;
  seen.add(object);
  for (const name of Reflect.ownKeys(object)) {
    const child = (object as Record<PropertyKey, unknown>)[name];
    if (child === value) return true;
    const nested = typeof child === "object" && child !== null;
    if (nested && holdsAnywhere(child, value, seen)) return true;
  }
  return false;
}
