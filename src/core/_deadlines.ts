// Internal: attempts' time limits, the race of work against an AbortSignal, and an abortable wait.

import { MAX_TIMER_MS } from "./_check.ts";

/**
 * Time limits shared by the attempts that start within one short window (a tenth of the limit, at most a second), each
 * getting at most a window more: one `globalThis.setTimeout` per window, looked up when set, due by the injected clock,
 * cleared after {@linkcode QUIET_TURNS} empty microtask turns. Why: docs/performance.md.
 */
export class SharedDeadlines implements AttemptLimits {
  readonly #now: () => number;
  #current: Window | undefined;

  constructor(readonly ms: number, now: () => number = Date.now) {
    this.#now = now;
  }

  start(outer: AbortSignal | undefined): Deadline {
    const now = this.#now();
    let window = this.#current;
    if (window === undefined || !window.takes(now)) {
      window = this.#current = new Window(this.ms, now);
    }
    const deadline = new AttemptDeadline(outer, () => window.leave(deadline));
    window.join(deadline, now);
    return deadline;
  }
}

/** Each attempt's own limit, exactly `ms`, its timer cleared when it ends: for requests that are few (the token's), no window to share. */
export function ownDeadlines(ms: number): AttemptLimits {
  const start = (outer: AbortSignal | undefined) => {
    const clear = globalThis.clearTimeout;
    const deadline = new AttemptDeadline(outer, () => clear(timer));
    const expire = () => deadline.expire(timeoutError(ms));
    const timer = globalThis.setTimeout(expire, ms);
    unrefTimer(timer);
    return deadline;
  };
  return { ms, start };
}

/** Microtask turns a window stays armed once empty: a caller's next call, its body read and a few async layers between (8 was one layer short). */
const QUIET_TURNS = 64;
/** A turn of the microtask queue: cheaper than `queueMicrotask` in Deno. */
const RESOLVED = /* @__PURE__ */ Promise.resolve();

/** One window of {@linkcode SharedDeadlines}. */
class Window {
  readonly #attempts = new Set<AttemptDeadline>();
  readonly #ms: number;
  readonly #opened: number;
  readonly #until: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #setBy: typeof setTimeout | undefined;
  #clear: typeof clearTimeout = clearTimeout;
  /** Whether the window's time was up: it takes no attempt after. */
  #fired = false;
  /** Microtask turns the window has been empty; -1 while nobody counts. */
  #quiet = -1;

  constructor(ms: number, opened: number) {
    this.#ms = ms;
    this.#opened = opened;
    this.#until = opened + Math.min(1000, Math.max(1, Math.round(ms / 10)));
  }

  /** Whether an attempt at `now` may join (not before it opened: a clock set back would keep it open past its timer). */
  takes(now: number): boolean {
    return now >= this.#opened && now < this.#until && !this.#fired;
  }

  /** Puts `deadline` under the window; sets the timer if none is set, or fake timers were installed since. */
  join(deadline: AttemptDeadline, now: number): void {
    this.#attempts.add(deadline);
    const set = globalThis.setTimeout;
    if (this.#timer !== undefined && this.#setBy === set) return;
    this.#disarm();
    const delay = Math.min(MAX_TIMER_MS, this.#until + this.#ms - now);
    this.#timer = set(this.#expire, Math.max(0, delay));
    unrefTimer(this.#timer);
    this.#setBy = set;
    this.#clear = globalThis.clearTimeout;
  }

  #disarm(): void {
    const clear = this.#clear; // called bare: workerd refuses a timer function called on another object
    clear(this.#timer);
    this.#timer = undefined;
  }

  /** Ends `deadline`'s limit; an empty window starts counting quiet turns. */
  leave(deadline: AttemptDeadline): void {
    this.#attempts.delete(deadline);
    if (this.#attempts.size > 0 || this.#quiet >= 0) return;
    this.#quiet = 0;
    RESOLVED.then(this.#count);
  }

  /** One quiet turn: clears the timer after enough, stops if someone joined. */
  readonly #count = (): void => {
    if (this.#attempts.size > 0) return void (this.#quiet = -1);
    if (++this.#quiet < QUIET_TURNS) return void RESOLVED.then(this.#count);
    this.#quiet = -1;
    this.#disarm();
  };

  /** Aborts the window's attempts: their time is up. */
  readonly #expire = (): void => {
    this.#fired = true;
    this.#timer = undefined;
    const reason = timeoutError(this.#ms);
    for (const late of this.#attempts) late.expire(reason);
  };
}

/** What an attempt's signal aborts with when its time is up. */
export function timeoutError(ms: number): DOMException {
  return new DOMException(`no answer within ${ms} ms`, "TimeoutError");
}

/** One attempt's limit. */
class AttemptDeadline {
  readonly signal: AbortSignal;
  /** Whether the time ran out (as opposed to the caller's signal aborting). */
  timedOut = false;
  readonly #own = new AbortController();
  /** Rejects the last race when the time is up (a settled one ignores it). */
  #late: ((reason: unknown) => void) | undefined;

  /** `clear` ends the limit early: the attempt is over. */
  constructor(outer: AbortSignal | undefined, readonly clear: () => void) {
    this.signal = outer === undefined
      ? this.#own.signal
      : AbortSignal.any([outer, this.#own.signal]);
  }

  expire(reason: DOMException): void {
    this.timedOut = true;
    this.#own.abort(reason);
    this.#late?.(reason);
  }

  /** {@linkcode raceAbort} against `signal`, one race at a time. */
  race<T>(work: Promise<T>, onLate?: (value: T) => void): Promise<T> {
    // The caller's signal (joined to our own) needs a listener; the window's time needs none.
    if (this.signal !== this.#own.signal || this.signal.aborted) {
      return raceAbort(work, this.signal, onLate);
    }
    // `reject` stays in #late once settled: rejecting a settled promise does nothing.
    return new Promise<T>((resolve, reject) => {
      this.#late = reject;
      work.then((value) => {
        if (this.timedOut) onLate?.(value);
        else resolve(value);
      }, reject);
    });
  }
}

/** Settles like `promise`, or rejects with `signal.reason` once it aborts; `onLate` gets a value after that (to cancel). */
export function raceAbort<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  onLate?: (value: T) => void,
): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    promise.then(onLate, () => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    const settle = (value: T) =>
      signal.aborted ? onLate?.(value) : resolve(value);
    promise.then(settle, reject)
      .finally(() => signal.removeEventListener("abort", abort));
  });
}

/** One attempt's time limit: a signal that aborts with a `TimeoutError`, or the caller's reason. */
export type Deadline = Readonly<
  Pick<AttemptDeadline, "signal" | "timedOut" | "race" | "clear">
>;

/** Where attempts get their time limits. */
export interface AttemptLimits {
  readonly ms: number;
  /** Starts one attempt's limit, following the caller's `outer` signal. */
  start(outer: AbortSignal | undefined): Deadline;
}

/** Lets a timer run without keeping the process alive, where the runtime can. */
export function unrefTimer(timer: number | { unref?: () => void }): void {
  const deno = (globalThis as { Deno?: { unrefTimer?(id: number): void } })
    .Deno;
  if (typeof timer === "number") deno?.unrefTimer?.(timer);
  else timer.unref?.();
}

/** Calls `refresh` every `ms` until the returned stop is called; a failed call waits for the next (the timer keeps no process alive). */
export function keepRefreshed(ms: number, refresh: () => Promise<unknown>) {
  const timer = setInterval(() => void refresh().catch(() => {}), ms);
  unrefTimer(timer);
  return () => clearInterval(timer);
}

/** What `answer` gives, or a `TimeoutError` saying `late` once `ms` passed first: a store that stops answering holds nobody. */
export function answerWithin<T>(
  answer: () => T | Promise<T>,
  ms: number,
  late: string,
): Promise<T> {
  const reply = Promise.resolve().then(answer);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new DOMException(late, "TimeoutError")),
      ms,
    );
    reply.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts. */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
