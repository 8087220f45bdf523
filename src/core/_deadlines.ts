// Internal: attempts' time limits for requests that are many (API calls,
// list pages): one timer per short window.

import { type Deadline, unrefTimer } from "./_abort.ts";
import type { AttemptLimits } from "./_attempt_loop.ts";

/**
 * Time limits shared by the attempts that start within the same short
 * window (a tenth of the limit, at most a second): one `setTimeout` per
 * window instead of one per request, which cost more than the rest of the
 * client's work together. The window keeps its attempts' controllers in a
 * set and aborts them when its timer fires: no event listener per attempt.
 * The window's timer is cleared as soon as no attempt uses it, so nothing
 * is left for a test's sanitizer and no process is kept alive. The timer is
 * `globalThis.setTimeout`, looked up when it is set, and the window is read
 * from the injected clock, so fake timers drive it like every other wait.
 * An attempt thus gets its limit, and at most a window more.
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
    if (window === undefined || now >= window.until) {
      const attempts = new Set<AbortController>();
      const timer = setTimeout(() => {
        const reason = new DOMException(
          `no answer within ${this.ms} ms`,
          "TimeoutError",
        );
        for (const late of attempts) late.abort(reason);
      }, this.ms + this.#window);
      unrefTimer(timer);
      window = this.#current = { attempts, timer, until: now + this.#window };
    }
    window.attempts.add(attempt);
    return window;
  }

  /** Ends `attempt`'s limit; the last one out of `window` clears its timer. */
  release(window: Window, attempt: AbortController): void {
    window.attempts.delete(attempt);
    if (window.attempts.size > 0) return;
    clearTimeout(window.timer);
    if (this.#current === window) this.#current = undefined;
  }
}

/** One window of {@linkcode SharedDeadlines}. */
export interface Window {
  readonly attempts: Set<AbortController>;
  readonly timer: ReturnType<typeof setTimeout>;
  /** Clock reading after which attempts open a new window. */
  readonly until: number;
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
