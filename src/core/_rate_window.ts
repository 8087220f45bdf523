// Internal: the sliding window's pure arithmetic, for the client's limiter
// and the fleet limiters of src/store.

/**
 * The requests of the last window: a ring of the latest `requests` times,
 * each the time a request counts from. A request still waiting for its
 * answer counts from `Infinity`: the service may count it at any moment
 * until the answer, so its slot is not free before an interval after it.
 */
export interface Window {
  readonly times: Float64Array;
  /** Index of the next time to write: the oldest once the ring is full. */
  head: number;
  count: number;
  /** Requests recorded so far: the next ticket. */
  sent: number;
  /** No slot before this (after a refusal). */
  blockedUntil: number;
}

/** An empty window for at most `requests` sends. */
export function emptyWindow(requests: number): Window {
  return {
    times: new Float64Array(requests),
    head: 0,
    count: 0,
    sent: 0,
    blockedUntil: -Infinity,
  };
}

/**
 * How long from `now` until a slot is free when at most `share` sends (by
 * default the ring's size) may fall in one window: 0 when one is free now,
 * `Infinity` while the send that must leave first awaits its answer.
 */
export function slotWait(
  window: Window,
  interval: number,
  now: number,
  share: number = window.times.length,
): number {
  const { times, head } = window;
  // The share-th latest send must leave before another may go.
  const freedAt = window.count >= share
    ? times[(head - share + times.length) % times.length]! + interval
    : -Infinity;
  return Math.max(0, freedAt - now, window.blockedUntil - now);
}

/**
 * Records a request that counts from `time` (`Infinity` until it is
 * answered); returns its ticket for {@linkcode recordAnswer}.
 */
export function recordSend(window: Window, time: number): number {
  window.times[window.head] = time;
  window.head = (window.head + 1) % window.times.length;
  window.count = Math.min(window.count + 1, window.times.length);
  return window.sent++;
}

/** The request of `ticket` was answered at `now`: it counts from then. */
export function recordAnswer(
  window: Window,
  ticket: number,
  now: number,
): void {
  const { times } = window;
  // A ticket still in the ring (one never answered keeps its slot, so the
  // ring cannot pass it); others are long out of the window.
  if (ticket >= window.sent - times.length && ticket < window.sent) {
    const index = ticket % times.length;
    if (times[index] === Infinity) times[index] = now;
  }
}
