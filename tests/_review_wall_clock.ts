// Imported first by review_round4_test.ts, before any module of src: the
// platform clock those modules find at load (Date.now) is this one, which
// reads the real clock plus an offset that a test can step, as an NTP step
// or a restored VM steps the wall clock. Timers stay the platform's own.

const realNow = Date.now;
let offset = 0;
Date.now = () => realNow() + offset;

/** Steps the wall clock the modules of src read. */
export const wallClock = {
  /** Moves the wall clock by `ms` (negative: back). */
  step(ms: number): void {
    offset += ms;
  },
  /** Puts the wall clock back on real time. */
  reset(): void {
    offset = 0;
  },
};
