// Internal: the clocks decisions read: a steady one for waits (a limiter that
// sent at 10:00 and then reads 09:00 must not wait an hour), and the system
// clock read once per synchronous turn.

/** The platform's monotone clock, as epoch-like ms, where the runtime has one. */
function monotoneEpoch(): (() => number) | undefined {
  const performance = (globalThis as {
    performance?: { now?: () => number; timeOrigin?: number };
  }).performance;
  const origin = performance?.timeOrigin;
  if (
    typeof performance?.now !== "function" ||
    !(typeof origin === "number" && origin > 0)
  ) {
    return undefined;
  }
  return () => origin + performance.now!();
}

/** A clock that never goes back, and how often it had to stop one that did. */
export interface SteadyClock {
  (): number;
  /** Steps back seen so far: a span measured across one is not known. */
  readonly steps: number;
}

/**
 * `now` (default `Date.now`) that never goes back: the system clock through the
 * runtime's monotone clock when it has one, so no step moves a wait; any other
 * clock as it is, a step back taken as no time passing.
 */
export function steadyClock(now?: () => number): SteadyClock {
  if (now === undefined || now === Date.now) {
    const monotone = monotoneEpoch();
    if (monotone !== undefined) return Object.assign(monotone, { steps: 0 });
  }
  const read = now ?? Date.now;
  let last = -Infinity;
  let offset = 0;
  const clock = () => {
    const reading = read() + offset;
    if (reading < last) {
      offset += last - reading;
      steady.steps++;
      return last;
    }
    return last = reading;
  };
  const steady = Object.assign(clock, { steps: 0 });
  return steady;
}

/**
 * `now`, read once per synchronous turn (100,000 callers in a burst read it
 * once); an injected clock may jump within a turn, so it is returned as is.
 */
export function turnClock(now: () => number): () => number {
  if (now !== Date.now) return now;
  let reading: number | undefined;
  const forget = () => {
    reading = undefined;
  };
  return () => {
    if (reading === undefined) {
      reading = now();
      queueMicrotask(forget);
    }
    return reading;
  };
}
