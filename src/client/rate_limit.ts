// Pacing API requests to the service's published limit: at most `requests`
// in any sliding window of `interval` ms. Waiting for a slot is not failing:
// callers queue in order and go as soon as the window lets them.

import { checkNumber, optionError, requireFunction } from "../core/_check.ts";

/**
 * A rate limit: at most `requests` in any sliding window of `interval` ms.
 *
 * @example The service's published limit
 * ```ts
 * import type { RateLimit } from "@partner-api/client/client";
 *
 * const limit: RateLimit = { requests: 900, interval: 300_000 };
 * if (limit.requests / (limit.interval / 1000) !== 3) throw new Error();
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
 * @example Two clients sharing the service's limit
 * ```ts
 * import { createClient, createRateLimiter } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi();
 * const rateLimit = createRateLimiter({ requests: 900, interval: 300_000 });
 * const a = createClient({ environment: api.environment, ...api.credentials, rateLimit });
 * const b = createClient({ environment: api.environment, ...api.credentials, rateLimit });
 * await (await a.fetch("organizations")).body?.cancel();
 * await (await b.fetch("organizations")).body?.cancel();
 * if (rateLimit.limit.requests !== 900) throw new Error();
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
 * Options of {@linkcode createRateLimiter}.
 *
 * @example A limiter on an injected clock
 * ```ts
 * import type { RateLimiterOptions } from "@partner-api/client/client";
 *
 * const options: RateLimiterOptions = { requests: 90, interval: 3000, now: Date.now };
 * if (options.requests !== 90) throw new Error();
 * ```
 */
export interface RateLimiterOptions extends RateLimit {
  /**
   * The clock, in epoch ms.
   *
   * @default {Date.now}
   */
  now?: () => number;
}

/** The service's published limit: 900 requests per 5 minutes per IP. */
export const SERVICE_RATE_LIMIT: RateLimit = Object.freeze({
  requests: 900,
  interval: 300_000,
});

const CONTEXT = "Cannot create rate limiter";

/**
 * Creates a limiter of at most `requests` per `interval` ms in any sliding
 * window. Its timer is `globalThis.setTimeout` (so fake timers drive it),
 * set only while someone waits.
 *
 * @param options The limit, and optionally the clock.
 * @returns The limiter, to pass as `rateLimit` to one or more clients.
 * @throws {RangeError} When `requests` or `interval` is not a positive
 * integer, or `requests` is over 1,000,000.
 *
 * @example Pacing a loop of your own
 * ```ts
 * import { createRateLimiter } from "@partner-api/client/client";
 *
 * const limiter = createRateLimiter({ requests: 2, interval: 50 });
 * const started = Date.now();
 * for (let i = 0; i < 3; i++) {
 *   const ticket = await limiter.take();
 *   // ... send the request and read its answer, then:
 *   limiter.answered(ticket);
 * }
 * if (Date.now() - started < 40) throw new Error("the third waited for the window");
 * ```
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`${CONTEXT}: expected an options object`);
  }
  const limit = Object.freeze({
    requests: requestCount(options.requests),
    interval: positiveInteger(options.interval, "interval"),
  });
  const now = requireFunction(options.now, CONTEXT, "now") ?? Date.now;
  return new SlidingWindowLimiter(limit, now);
}

function positiveInteger(value: number | undefined, option: string): number {
  if (value === undefined) {
    throw optionError(TypeError, CONTEXT, option, "must be given");
  }
  return checkNumber(value, 0, "positive integer", CONTEXT, option);
}

/** The window keeps one time per request: 8 MB at most. */
const MAX_REQUESTS = 1_000_000;

function requestCount(value: number | undefined): number {
  const requests = positiveInteger(value, "requests");
  if (requests > MAX_REQUESTS) {
    throw optionError(
      RangeError,
      CONTEXT,
      "requests",
      `must be at most ${MAX_REQUESTS}`,
      String(requests),
    );
  }
  return requests;
}

/**
 * The requests of the last window: a ring of the latest `requests` times,
 * each the time a request counts from. A request still waiting for its
 * answer counts from `Infinity`: the service may count it at any moment
 * until the answer, so its slot is not free before an interval after it.
 */
export interface Window {
  readonly times: Float64Array;
  /** Index of the oldest time once the ring is full. */
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
 * How long from `now` until a slot is free: 0 when one is free now,
 * `Infinity` while the oldest request of a full window awaits its answer.
 */
export function slotWait(
  window: Window,
  interval: number,
  now: number,
): number {
  const full = window.count === window.times.length;
  const freedAt = full ? window.times[window.head]! + interval : -Infinity;
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

interface Waiter {
  readonly resolve: (ticket: number) => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/** A limiter over one window, with callers queued in order. */
class SlidingWindowLimiter implements RateLimiter {
  readonly limit: RateLimit;
  readonly #now: () => number;
  readonly #window: Window;
  readonly #queue: Waiter[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(limit: RateLimit, now: () => number) {
    this.limit = limit;
    this.#now = now;
    this.#window = emptyWindow(limit.requests);
  }

  take(signal?: AbortSignal): number | Promise<number> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (
      this.#queue.length === 0 &&
      slotWait(this.#window, this.limit.interval, this.#now()) === 0
    ) {
      return recordSend(this.#window, Infinity);
    }
    return new Promise<number>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          this.#queue.splice(this.#queue.indexOf(waiter), 1);
          reject(signal!.reason);
          this.#schedule();
        },
      };
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
      this.#queue.push(waiter);
      this.#schedule();
    });
  }

  answered(ticket: number): void {
    recordAnswer(this.#window, ticket, this.#now());
    if (this.#queue.length > 0) this.#schedule();
  }

  refused(): void {
    const window = this.#window;
    const { requests, interval } = this.limit;
    const now = this.#now();
    const oldest = window.times[window.head]!;
    // Full of answered requests: room when the oldest leaves. Else (room
    // left, or the oldest unanswered) one slot's share of the interval.
    const room = window.count === requests && oldest !== Infinity
      ? oldest + interval
      : now + interval / requests;
    window.blockedUntil = Math.max(window.blockedUntil, room);
    this.#schedule();
  }

  /** Lets waiters through in order while slots are free; then waits for the next. */
  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const { interval } = this.limit;
    while (this.#queue.length > 0) {
      const wait = slotWait(this.#window, interval, this.#now());
      // Infinity: the oldest awaits its answer, and answered() comes back.
      if (wait === Infinity) return;
      if (wait > 0) {
        this.#timer = setTimeout(() => this.#schedule(), wait);
        return;
      }
      const waiter = this.#queue.shift()!;
      waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.resolve(recordSend(this.#window, Infinity));
    }
  }
}
