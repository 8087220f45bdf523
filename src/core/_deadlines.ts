// Internal: attempts' time limits for requests that are many (API calls,
// list pages): one timer per short window, armed only while in use.

import { type Deadline, unrefTimer } from "./_abort.ts";
import type { AttemptLimits } from "./_attempt_loop.ts";

// The platform's clock and timer as this module found them. When a test
// has replaced either since (fake timers), windows use `setTimeout`, which
// the fakes drive; else the platform's timeout signal, which costs nothing
// per request (see `SharedDeadlines`).
const PLATFORM_NOW = Date.now;
const PLATFORM_SET_TIMEOUT = globalThis.setTimeout;

/**
 * Time limits shared by the attempts that start within the same short
 * window (a tenth of the limit, at most a second): one timer per window
 * instead of one per request, which cost more than the rest of the
 * client's work together. The window keeps its attempts' controllers in a
 * set and aborts them when its time is up: no timer and no listener of
 * their own. An attempt thus gets its limit, and at most a window more.
 *
 * A window's timer is armed while an attempt uses it and disarmed when the
 * last one leaves, so nothing is left for a test's sanitizer and no process
 * is kept alive after the last request:
 * - with the platform's clock and timers, the timer is the platform's
 *   timeout signal (`AbortSignal.timeout`), made once per window: arming is
 *   listening to it, which is what keeps a process alive, and a signal
 *   nobody listens to is no pending work for `deno test`. Requests one after
 *   another thus set no timer at all.
 * - when the clock is injected or `setTimeout` was replaced (fake timers),
 *   the timer is `globalThis.setTimeout`, looked up when it is set, due
 *   when the window's time is up by the injected clock; disarming clears
 *   it. Fake timers drive it like every other wait.
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
    const platform = platformTimers(this.#now);
    let window = this.#current;
    if (window === undefined || !window.takes(now, platform)) {
      // Never past the largest delay a timer takes (a longer one fires at once).
      const delay = Math.min(this.ms + this.#window, MAX_DELAY);
      const times = { ms: this.ms, opened: now, until: now + this.#window };
      window = this.#current = platform
        ? new SignalWindow(times, delay)
        : new TimerWindow(times, now + delay, this.#now);
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

/** Whether time is the platform's own: neither injected nor faked. */
function platformTimers(now: () => number): boolean {
  return now === PLATFORM_NOW &&
    globalThis.setTimeout === PLATFORM_SET_TIMEOUT &&
    typeof AbortSignal.timeout === "function";
}

/** The largest delay `setTimeout` and `AbortSignal.timeout` take whole. */
const MAX_DELAY = 2 ** 31 - 1;

/** When a window was opened and until when it takes attempts, by the clock. */
interface WindowTimes {
  readonly ms: number;
  readonly opened: number;
  readonly until: number;
}

/** One window of {@linkcode SharedDeadlines}. */
abstract class Window {
  readonly attempts = new Set<AbortController>();
  readonly #times: WindowTimes;
  readonly #platform: boolean;
  /** Whether the window's time was up while attempts were in it. */
  protected fired = false;

  constructor(times: WindowTimes, platform: boolean) {
    this.#times = times;
    this.#platform = platform;
  }

  /**
   * Whether an attempt starting at `now` may join: within the window's time
   * by the clock (not before it opened: a clock set back would keep it open
   * past its timer), on the same kind of timer, and not yet fired.
   */
  takes(now: number, platform: boolean): boolean {
    const { opened, until } = this.#times;
    return now >= opened && now < until && platform === this.#platform &&
      !this.spent;
  }

  /** Aborts the window's attempts: their time is up. */
  protected expire = (): void => {
    this.fired = true;
    const reason = new DOMException(
      `no answer within ${this.#times.ms} ms`,
      "TimeoutError",
    );
    for (const late of this.attempts) late.abort(reason);
  };

  /** Whether the window's time is up, whoever was in it. */
  abstract get spent(): boolean;
  /** Makes sure the window's time being up reaches its attempts. */
  abstract arm(): void;
  /** Stops waiting for the window's time: no attempt uses it. */
  abstract disarm(): void;
}

/** A window timed by the platform's timeout signal, made once. */
class SignalWindow extends Window {
  readonly #signal: AbortSignal;

  constructor(times: WindowTimes, delay: number) {
    super(times, true);
    this.#signal = AbortSignal.timeout(delay);
  }

  get spent(): boolean {
    return this.#signal.aborted;
  }

  arm(): void {
    this.#signal.addEventListener("abort", this.expire);
  }

  disarm(): void {
    this.#signal.removeEventListener("abort", this.expire);
  }
}

/** A window timed by `globalThis.setTimeout`, set again when re-armed. */
class TimerWindow extends Window {
  readonly #due: number;
  readonly #now: () => number;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(times: WindowTimes, due: number, now: () => number) {
    super(times, false);
    this.#due = due;
    this.#now = now;
  }

  get spent(): boolean {
    return this.fired;
  }

  arm(): void {
    const delay = Math.min(MAX_DELAY, Math.max(0, this.#due - this.#now()));
    const timer = setTimeout(this.expire, delay);
    unrefTimer(timer);
    this.#timer = timer;
  }

  disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
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
