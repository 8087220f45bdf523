// Pacing API requests: at most `requests` in any sliding `interval` ms; callers wait in order, never fail.

import {
  optionNames,
  requireFunction,
  requireKnownOptions,
} from "../core/_check.ts";
import type { RateLimit, RateLimiter } from "../core/rate_limiter.ts";
import {
  checkRateLimit,
  checkReserve,
  MOST_WINDOW_REQUESTS,
  type RatePriority,
  rateShare,
} from "../core/_rate_options.ts";
import {
  capAtRefusal,
  emptyWindow,
  recordAnswer,
  recordSend,
  slotWait,
  type Window,
} from "../core/_rate_window.ts";
import { PriorityLines, takeRefusal } from "../core/_rate_lines.ts";
import { steadyClock } from "../core/_clock.ts";

export type { RateLimit, RateLimiter };

/**
 * Options of {@linkcode createRateLimiter}.
 *
 * @example A limiter on an injected clock
 * ```ts
 * import { createRateLimiter, type RateLimiterOptions } from "@partner-api/client/client";
 * import { equal } from "node:assert/strict";
 *
 * let time = 0;
 * const options: RateLimiterOptions = { requests: 1, interval: 1000, now: () => time };
 * const limiter = createRateLimiter(options);
 * limiter.answered(limiter.take() as number); // a slot free now: its ticket, at once
 * time += 1000; // an interval after the answer, on the injected clock
 * equal(typeof limiter.take(), "number"); // free again, without waiting
 * ```
 */
export interface RateLimiterOptions extends RateLimit {
  /**
   * The clock, in epoch ms; a step back reads as no time passing, so it holds no caller.
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * Slots of any window a background request (`priority: "low"`) leaves free for live ones, from 0
   * to `requests - 1`. See docs/rate-limit.md.
   * @default {max(1, ⌈requests / 10⌉), at most requests - 1}
   */
  reserve?: number;
}

const CONTEXT = "Cannot create rate limiter";
const LIMITER_OPTIONS = optionNames<RateLimiterOptions>()(
  "requests interval now reserve",
);

/**
 * Creates a limiter of at most `requests` per `interval` ms in any sliding window. Its timer is
 * `globalThis.setTimeout` (fake timers drive it), set only while someone waits.
 * @returns The limiter, to pass as `rateLimit` to one or more clients.
 * @throws {RangeError} When `requests` is not an integer from 1 to 1,000,000, or `interval` not
 * a whole number of ms from 1 to 2,147,483,647.
 *
 * @example Pacing a loop of your own
 * ```ts
 * import { createRateLimiter } from "@partner-api/client/client";
 * import { ok } from "node:assert/strict";
 *
 * const limiter = createRateLimiter({ requests: 2, interval: 50 });
 * const started = Date.now();
 * for (let i = 0; i < 3; i++) {
 *   const ticket = await limiter.take();
 *   // ... send the request and read its answer, then:
 *   limiter.answered(ticket);
 * }
 * ok(Date.now() - started >= 40); // the third waited for the window
 * ```
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  requireKnownOptions(options, LIMITER_OPTIONS, CONTEXT);
  const limit = checkRateLimit(options, CONTEXT, MOST_WINDOW_REQUESTS);
  const reserve = checkReserve(options.reserve, limit.requests, CONTEXT);
  const now = steadyClock(requireFunction(options.now, CONTEXT, "now"));
  return new SlidingWindowLimiter(limit, reserve, now);
}

/** One window; live callers in one line, background ones in another that moves while the first is empty. */
class SlidingWindowLimiter implements RateLimiter {
  readonly #now: () => number;
  readonly #window: Window;
  /** Sends a background request may find in the window: the rest, `#reserve`, is kept for live ones. */
  readonly #lowShare: number;
  readonly #reserve: number;
  readonly #lines = new PriorityLines((waiter, reason) => {
    waiter.reject(reason);
    // Leaving frees no slot, but a live caller leaving may free background ones (an empty line: no timer).
    if (this.#lines.live.size === 0) this.#schedule();
  }, () => this.#now());
  /** The clock's last reading (none yet: a time before any). */
  #last = -Number.MAX_VALUE;

  constructor(readonly limit: RateLimit, reserve: number, now: () => number) {
    this.#now = now;
    this.#window = emptyWindow(limit.requests);
    this.#lowShare = rateShare(limit, "low", reserve);
    this.#reserve = limit.requests - this.#lowShare;
  }

  take(signal?: AbortSignal, priority?: RatePriority) {
    const refused = takeRefusal(signal, priority);
    if (refused !== undefined) return refused;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const line = this.#lines.of(priority);
    const low = line === this.#lines.low;
    // The clock never goes back: a slot free at its last reading is free now (no reading per request).
    if (
      line.size === 0 && (!low || this.#lines.live.size === 0) &&
      (this.#freeAt(this.#last, low) || this.#freeAt(this.#read(), low))
    ) {
      return recordSend(this.#window, Infinity);
    }
    const slot = this.#lines.join(line, signal);
    if (line.size === 1) this.#schedule();
    return slot;
  }

  /** Whether a slot is free at `now` for a live caller, or a background (`low`) one. */
  #freeAt(now: number, low: boolean): boolean {
    return this.#wait(now, low) === 0;
  }

  /** ms from `now` until a slot is free for a live caller, or a background (`low`) one. */
  #wait(now: number, low: boolean): number {
    const { interval, requests } = this.limit;
    return low
      ? slotWait(this.#window, interval, now, this.#lowShare, this.#reserve)
      : slotWait(this.#window, interval, now, requests);
  }

  #read(): number {
    return this.#last = this.#now();
  }

  answered(ticket: number): void {
    recordAnswer(this.#window, ticket, this.#read());
    if (this.#lines.size > 0) this.#schedule();
  }

  refused(): void {
    const window = this.#window;
    const { requests, interval } = this.limit;
    const [oldest, now] = [window.times[window.head]!, this.#read()];
    // One slot's share of the interval at least; while the window is full of answered requests, until the oldest
    // leaves (an oldest already gone leaves before that share: a ring filled once is not full).
    const full = window.count === requests && oldest !== Infinity;
    const leaves = full ? oldest + interval : 0;
    const room = Math.max(now + interval / requests, leaves);
    window.blockedUntil = Math.max(window.blockedUntil, room);
    capAtRefusal(window, interval, now);
    this.#schedule();
  }

  /** Lets waiters through while slots are free, live first; then waits for the next slot. */
  #schedule(): void {
    this.#lines.resume();
    while (this.#lines.size > 0) {
      const line = this.#lines.next;
      const wait = this.#wait(this.#read(), line === this.#lines.low);
      // Infinity: the send to leave first awaits its answer; answered() comes back.
      if (wait > 0) return this.#lines.pause(wait, () => this.#schedule());
      this.#lines.serve(line, recordSend(this.#window, Infinity));
    }
  }
}
