// Shared by the one-time-model tests (issue 48): how often some work reads
// the system clock, which is 0 when every reading goes through a `now`.

/** The system clock, as it was before any count replaced it. */
export const systemNow: () => number = Date.now;

/** Runs `work`, counting its readings of `Date.now`. */
export async function systemClockReads(
  work: () => Promise<unknown>,
): Promise<number> {
  let reads = 0;
  Date.now = () => {
    reads++;
    return systemNow();
  };
  try {
    await work();
  } finally {
    Date.now = systemNow;
  }
  return reads;
}
