// Internal: attempts' time limits for requests that are many (API calls,
// list pages): one timer per short window, set only while in use.

import { type Deadline, unrefTimer } from "./_abort.ts";
import type { AttemptLimits } from "./_attempt_loop.ts";

/**
 * Time limits shared by the attempts that start within the same short
 * window (a tenth of the limit, at most a second): one timer per window
 * instead of one per request, which cost more than the rest of the
 * client's work together. The window keeps its attempts' controllers in a
 * set and aborts them when its time is up: no timer and no listener of
 * their own. An attempt thus gets its limit, and at most a window more.
 *
 * The window's timer is `globalThis.setTimeout`, looked up when it is set
 * (the one time model: fake timers drive it), due when the window's time
 * is up by the injected clock. It is set when the first attempt joins and
 * cleared when the last one leaves, so nothing is left for a test's
 * sanitizer and no process is kept alive after the last request.
 */
export class SharedDeadlines implements AttemptLimits {
  /** The time limit, in ms. */
  readonly ms: number;
  readonly #window: number;
  readonly #now: () => number;
  #current: Window | undefined;

  constructor(ms: number, now: () => number) {
    this.ms = ms;
    this.#window = Math.min(1000, Math.max(1, Math.round(ms / 10)));
    this.#now = now;
  }

  /** Starts one attempt's limit, following the caller's `outer` signal. */
  start(outer: AbortSignal | undefined): Deadline {
    return new SharedDeadline(this, outer);
  }

  /**
   * Puts `attempt` under the window of attempts starting now: it is aborted
   * with a `TimeoutError` when the window's limit passes, unless it was
   * given back with `release` first.
   */
  acquire(attempt: AbortController): Window {
    const now = this.#now();
    let window = this.#current;
    if (window === undefined || !window.takes(now)) {
      window = this.#current = new Window(
        this.ms,
        now,
        this.#window,
        this.#now,
      );
    }
    window.attempts.add(attempt);
    if (window.attempts.size === 1) window.arm();
    return window;
  }

  /** Ends `attempt`'s limit; the last one out of `window` disarms its timer. */
  release(window: Window, attempt: AbortController): void {
    window.attempts.delete(attempt);
    if (window.attempts.size === 0) window.disarm();
  }
}

/** The largest delay `setTimeout` takes whole (a longer one fires at once). */
const MAX_DELAY = 2 ** 31 - 1;

/** One window of {@linkcode SharedDeadlines}. */
class Window {
  readonly attempts = new Set<AbortController>();
  readonly #ms: number;
  readonly #opened: number;
  readonly #until: number;
  readonly #now: () => number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Whether the window's time was up: it takes no attempt after. */
  #fired = false;

  constructor(ms: number, opened: number, width: number, now: () => number) {
    this.#ms = ms;
    this.#opened = opened;
    this.#until = opened + width;
    this.#now = now;
  }

  /**
   * Whether an attempt starting at `now` may join: within the window's time
   * by the clock (not before it opened: a clock set back would keep it open
   * past its timer), and not fired yet.
   */
  takes(now: number): boolean {
    return now >= this.#opened && now < this.#until && !this.#fired;
  }

  /** Sets the timer, due a limit after the window's end by the clock. */
  arm(): void {
    const due = this.#until + this.#ms;
    const delay = Math.min(MAX_DELAY, Math.max(0, due - this.#now()));
    const timer = setTimeout(this.#expire, delay);
    unrefTimer(timer);
    this.#timer = timer;
  }

  /** Clears the timer: no attempt uses the window. */
  disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Aborts the window's attempts: their time is up. */
  readonly #expire = (): void => {
    this.#fired = true;
    const reason = new DOMException(
      `no answer within ${this.#ms} ms`,
      "TimeoutError",
    );
    for (const late of this.attempts) late.abort(reason);
  };
}

/** One attempt's limit within a window of {@linkcode SharedDeadlines}. */
class SharedDeadline implements Deadline {
  readonly signal: AbortSignal;
  readonly #attempt = new AbortController();
  readonly #window: Window;
  readonly #deadlines: SharedDeadlines;

  constructor(deadlines: SharedDeadlines, outer: AbortSignal | undefined) {
    this.#deadlines = deadlines;
    this.#window = deadlines.acquire(this.#attempt);
    this.signal = outer === undefined
      ? this.#attempt.signal
      : AbortSignal.any([outer, this.#attempt.signal]);
  }

  get timedOut(): boolean {
    const own = this.#attempt.signal;
    return own.aborted &&
      (own.reason as Error | undefined)?.name === "TimeoutError";
  }

  clear(): void {
    this.#deadlines.release(this.#window, this.#attempt);
  }
}
