// Internal: the client's per-attempt time limits, one timer per short window.

import { unrefTimer } from "../core/_abort.ts";

/**
 * Time limits shared by the attempts that start within the same short
 * window (a tenth of the limit, at most a second): one `setTimeout` per
 * window instead of one per request, which cost more than the rest of the
 * client's work together. Each attempt follows the window's signal through
 * a listener it removes when it ends; the window's timer is cleared as soon
 * as no attempt uses it, so nothing is left for a test's sanitizer and no
 * process is kept alive. The timer is `globalThis.setTimeout`, looked up
 * when it is set, and the window is read from the injected clock, so fake
 * timers drive it like every other wait. An attempt thus gets its limit,
 * and at most a window more.
 */
export class SharedDeadlines {
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

  /** The window for an attempt starting now; give it back with `release`. */
  acquire(): Window {
    const now = this.#now();
    let window = this.#current;
    if (window === undefined || now >= window.until) {
      const controller = new AbortController();
      const timer = setTimeout(() => {
        controller.abort(
          new DOMException(`no answer within ${this.ms} ms`, "TimeoutError"),
        );
      }, this.ms + this.#window);
      unrefTimer(timer);
      window = this.#current = {
        signal: controller.signal,
        timer,
        until: now + this.#window,
        users: 0,
      };
    }
    window.users++;
    return window;
  }

  /** Ends an attempt's use of `window`; the last one out clears its timer. */
  release(window: Window): void {
    if (--window.users > 0) return;
    clearTimeout(window.timer);
    if (this.#current === window) this.#current = undefined;
  }
}

/** One window of {@linkcode SharedDeadlines}. */
interface Window {
  readonly signal: AbortSignal;
  readonly timer: ReturnType<typeof setTimeout>;
  /** Clock reading after which attempts open a new window. */
  readonly until: number;
  users: number;
}
