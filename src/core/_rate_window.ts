// Internal: what a rate limiter is (the contract the client paces by, which
// the fleet limiters of src/store keep too) and the sliding window's pure
// arithmetic. Re-exported with its docs from "./client".

/**
 * A rate limit: at most `requests` in any sliding window of `interval` ms.
 *
 * @example The service's published limit
 * ```ts
 * import { createRateLimiter, type RateLimit } from "@partner-api/client/client";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const published: RateLimit = { requests: 900, interval: 300_000 };
 * deepStrictEqual(createRateLimiter(published).limit, published);
 * ```
 */
export interface RateLimit {
  /** Requests allowed in any window. */
  readonly requests: number;
  /** The window's length, in ms. */
  readonly interval: number;
}

/**
 * Paces requests; one limiter can be shared by several clients of a
 * process, which then share the limit.
 *
 * @example Two clients sharing one limit
 * ```ts
 * import { createClient, createRateLimiter } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const rateLimit = createRateLimiter({ requests: 2, interval: 60_000 });
 * const a = createClient({ environment: api.environment, ...api.credentials, rateLimit });
 * const b = createClient({ environment: api.environment, ...api.credentials, rateLimit });
 * await (await a.fetch("organizations")).body?.cancel();
 * await (await b.fetch("organizations")).body?.cancel();
 * const third = new AbortController();
 * const waiting = rateLimit.take(third.signal); // the shared window is full: it waits
 * third.abort();
 * await rejects(Promise.resolve(waiting), { name: "AbortError" });
 * ```
 */
export interface RateLimiter {
  /** The limit it keeps. */
  readonly limit: RateLimit;
  /**
   * Takes a slot for one request: its ticket (a number) when a slot is free
   * now, else a promise of it that resolves when the caller's turn comes
   * (callers go in the order they came), or rejects with the signal's
   * reason when it aborts first. Hand the ticket to
   * {@linkcode RateLimiter.answered} once the request is answered or failed.
   */
  take(signal?: AbortSignal): number | Promise<number>;
  /**
   * Tells the limiter the request of `ticket` was answered (or failed, or
   * was never sent). The service counts a request when it arrives, which
   * may be any time until the answer: so a slot counts from the answer,
   * and is not free again before an interval after it. Until then the
   * slot stays taken: a ticket never answered keeps its slot.
   */
  answered(ticket: number): void;
  /**
   * Tells the limiter the service refused a request for its rate (a 429):
   * others on the same address count too, so the window is taken as full.
   * The next slot is when the oldest send leaves a full window, or one
   * slot's share of the interval (`interval / requests`) from now when this
   * limiter has sent less; never before a slot is free anyway.
   */
  refused(): void;
}

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
