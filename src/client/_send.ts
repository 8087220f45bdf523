// Internal: sending one API request with the bearer token: per-attempt time
// limit, retries of idempotent requests, one renewal after a 401, redirects
// under the same base. The decisions are in _policy.ts.

import { ApiError } from "../core/errors.ts";
import type { TokenProvider } from "../token/mod.ts";
import { delay, retryAfterMs } from "../core/_retry.ts";
import { raceAbort } from "../core/_abort.ts";
import type { SharedDeadlines, Window } from "./_deadlines.ts";
import type { EventListener } from "../core/events.ts";
import { emit } from "../core/_emit.ts";
import { displayUrl } from "../core/_url.ts";
import type { RateLimiter } from "./rate_limit.ts";
import { describeCause } from "../core/_cause.ts";
import { followable } from "./_path.ts";
import { withBearer } from "./_bearer.ts";
import {
  type Attempted,
  isReplayable,
  mayRetry,
  nextStep,
  type Progress,
  type RetryPolicy,
  type Step,
} from "./_policy.ts";

/** What every request of one client shares. */
export interface SendContext {
  readonly tokenProvider: TokenProvider;
  readonly fetch: typeof fetch;
  /** Whether `fetch` is the runtime's own, which stops when its signal aborts. */
  readonly ownFetch: boolean;
  readonly retry: RetryPolicy;
  /** Time limits of attempts. */
  readonly deadlines: SharedDeadlines;
  /**
   * The provider's 401 ledger: whether a 401 to this token may cost a fresh
   * one (then the token is already invalidated).
   */
  readonly renewAfterUnauthorized: (accessToken: string) => Promise<boolean>;
  /** Paces every attempt; `undefined` when pacing is off. */
  readonly rateLimiter: RateLimiter | undefined;
  /** Hears every attempt, retry, renewal and wait; `undefined`: nobody. */
  readonly onEvent: EventListener | undefined;
  readonly now: () => number;
}

/** One request to send. */
export interface Exchange<T> {
  /** The base the token is bound to; redirects are followed under it only. */
  readonly base: URL;
  /** Which base that is, for events. */
  readonly kind: "api" | "pci";
  readonly url: URL;
  readonly init: RequestInit;
  /** Start of error messages, e.g. "Cannot fetch". */
  readonly context: string;
  /**
   * What must finish within the attempt's time limit once the answer is the
   * one to hand back: nothing for `fetch` (the answer itself), reading the
   * body for a list page. A failure here counts as no answer, and is retried
   * like one.
   */
  readonly finish: (
    response: Response,
    accessToken: string,
    attempts: number,
  ) => T | Promise<T>;
}

/**
 * Sends `exchange` until it has an answer to hand back, and returns what
 * `finish` made of it.
 *
 * @throws {ApiError} `status` 0 with the last failure as `cause` when no
 * answer arrived after the retries.
 * @throws {TokenRequestError} When no token could be had.
 * @throws The caller's signal's reason when it aborts.
 */
export async function sendExchange<T>(
  context: SendContext,
  exchange: Exchange<T>,
): Promise<T> {
  const run = new Run(context, exchange);
  let wait = 0;
  while (true) {
    if (wait > 0) await delay(wait, run.signal);
    // The token before the slot: a call that fails without one sends
    // nothing, and must not hold a slot of the window for an interval.
    const { accessToken } = await context.tokenProvider.getToken(
      run.signal === undefined ? NO_OPTIONS : { signal: run.signal },
    );
    // A slot in the rate window, before the attempt's time limit starts:
    // waiting for the window is not failing.
    const slot = context.rateLimiter?.take(run.signal);
    const ticket = typeof slot === "object" ? await run.waitFor(slot) : slot;
    try {
      const signal = run.startAttempt();
      const response = await run.send(accessToken, signal);
      let step = nextStep(run.attempted(response), run, context.retry);
      if (step.do === "renew" && !await run.renew(response!, accessToken)) {
        step = DELIVER;
      }
      if (step.do === "deliver") {
        try {
          const done = exchange.finish(response!, accessToken, run.attempts);
          return done instanceof Promise ? await raceAbort(done, signal) : done;
        } catch (error) {
          // The service's own refusal is final; a body cut off or too slow
          // is no answer, and retried like one.
          if (error instanceof ApiError) throw error;
          // The caller's abort ends the request; a body too slow for the
          // time limit counts as a timeout.
          step = nextStep(run.bodyFailed(error), run, context.retry);
        }
      }
      // (No answer is never delivered: after one, it is retry or fail.)
      if (step.do === "fail" || step.do === "deliver") throw run.noAnswer();
      wait = await run.proceed(step, response);
    } finally {
      // The limit ends with the attempt: for fetch once the headers are in,
      // for a list page once its body is read. The rate window counts the
      // request from here: the service has it by now.
      run.endAttempt();
      if (ticket !== undefined) context.rateLimiter!.answered(ticket);
    }
  }
}

/**
 * One request under way: its progress (what {@linkcode nextStep} decides
 * on), its current attempt and time limit, and what carrying out a step
 * takes (cleaning up an answer, telling a listener).
 */
class Run<T> implements Progress {
  readonly #context: SendContext;
  readonly #exchange: Exchange<T>;
  readonly signal: AbortSignal | undefined;
  readonly method: string;
  readonly replayable: boolean;
  #target: URL;
  #retries = 0;
  #redirects = 0;
  #attempts = 0;
  #renewed = false;
  /** The current attempt, and the window its time limit is in. */
  #attempt: AbortController | undefined;
  #window: Window | undefined;
  /** Why the last attempt got no answer. */
  #failure: unknown;

  constructor(context: SendContext, exchange: Exchange<T>) {
    this.#context = context;
    this.#exchange = exchange;
    this.signal = exchange.init.signal ?? undefined;
    this.method = (exchange.init.method ?? "GET").toUpperCase();
    this.replayable = isReplayable(exchange.init.body);
    this.#target = exchange.url;
  }

  /** Retries made so far. */
  get retries(): number {
    return this.#retries;
  }

  /** Redirects followed so far. */
  get redirects(): number {
    return this.#redirects;
  }

  /** Whether a 401 already cost this request a fresh token. */
  get renewed(): boolean {
    return this.#renewed;
  }

  /** Requests sent so far: retries, a 401 renewal and redirects included. */
  get attempts(): number {
    return this.#attempts;
  }

  /** The answer was taken, but its body failed: as no answer. */
  bodyFailed(error: unknown): Attempted {
    this.#failure = error;
    return this.attempted(undefined);
  }

  /**
   * Starts an attempt: its signal aborts when the shared deadline passes
   * (until `endAttempt`) or when the caller's signal does.
   */
  startAttempt(): AbortSignal {
    const attempt = new AbortController();
    this.#attempt = attempt;
    this.#window = this.#context.deadlines.acquire(attempt);
    return this.signal === undefined
      ? attempt.signal
      : AbortSignal.any([this.signal, attempt.signal]);
  }

  /** Stops the attempt's time limit; the caller's signal still applies. */
  endAttempt(): void {
    if (this.#window === undefined) return;
    this.#context.deadlines.release(this.#window, this.#attempt!);
    this.#window = undefined;
  }

  /** Whether the current attempt ran out of time. */
  get #timedOut(): boolean {
    const signal = this.#attempt?.signal;
    return signal?.aborted === true &&
      (signal.reason as Error | undefined)?.name === "TimeoutError";
  }

  /** Waits for a slot in the rate window; a listener hears how long. */
  async waitFor(slot: Promise<number>): Promise<number> {
    const listener = this.#context.onEvent;
    if (listener === undefined) return await slot;
    const started = this.#context.now();
    const ticket = await slot;
    emit(listener, {
      type: "rate.wait",
      delayMs: this.#context.now() - started,
    });
    return ticket;
  }

  /** Sends one attempt; `undefined` when no answer came (see `failure`). */
  send(
    accessToken: string,
    signal: AbortSignal,
  ): Promise<Response | undefined> {
    const listener = this.#context.onEvent;
    return listener === undefined
      ? this.#sendOnce(accessToken, signal)
      : this.#sendHeard(listener, accessToken, signal);
  }

  async #sendHeard(
    listener: EventListener,
    accessToken: string,
    signal: AbortSignal,
  ): Promise<Response | undefined> {
    const started = this.#context.now();
    const response = await this.#sendOnce(accessToken, signal);
    emit(listener, {
      type: "api.request",
      method: this.method,
      base: this.#exchange.kind,
      path: this.#target.pathname,
      status: response?.status ?? 0,
      attempt: this.#attempts,
      durationMs: this.#context.now() - started,
    });
    return response;
  }

  async #sendOnce(
    accessToken: string,
    signal: AbortSignal,
  ): Promise<Response | undefined> {
    const send = this.#context.fetch;
    this.#attempts++;
    try {
      const sent = send(this.#target.href, {
        ...this.#exchange.init,
        headers: withBearer(this.#exchange.init.headers, accessToken),
        redirect: "manual",
        signal,
      });
      // The runtime's own fetch stops at its signal; a fetch of the caller's
      // might not, and must not hold an attempt past its time limit.
      return await (this.#context.ownFetch
        ? sent
        : raceAbort(sent, signal, discard));
    } catch (error) {
      this.signal?.throwIfAborted();
      this.#failure = error;
      return undefined;
    }
  }

  /** What the attempt came to, for {@linkcode nextStep}. */
  attempted(response: Response | undefined): Attempted {
    if (response === undefined) {
      this.signal?.throwIfAborted();
      if (this.#timedOut) {
        this.#failure = new DOMException(
          `no answer within ${this.#context.deadlines.ms} ms`,
          "TimeoutError",
        );
      }
      return NO_ANSWER;
    }
    const status = response.status;
    // The service counts more than this limiter saw (other processes on
    // the same address): no request before the window has room. A
    // Retry-After is the retry's own wait.
    if (status === 429) this.#context.rateLimiter?.refused();
    return {
      kind: "answer",
      status,
      retryAfter: mayRetry(status)
        ? retryAfterMs(response.headers, this.#context.now())
        : undefined,
      redirect: status >= 300 && status < 400
        ? followable(response, this.#target, this.#exchange.base, this.method)
        : undefined,
    };
  }

  /**
   * Asks the provider's ledger whether this 401 may cost a fresh token;
   * when it may, the answer is cleaned up for the next attempt.
   */
  async renew(response: Response, accessToken: string): Promise<boolean> {
    if (!await this.#context.renewAfterUnauthorized(accessToken)) return false;
    this.#renewed = true;
    const listener = this.#context.onEvent;
    if (listener !== undefined) {
      emit(listener, { type: "api.renewal", path: this.#target.pathname });
    }
    await discard(response);
    return true;
  }

  /** Carries out a retry, a redirect or a renewal; returns the wait before the next attempt. */
  async proceed(
    step: Exclude<Step, { do: "deliver" | "fail" }>,
    response: Response | undefined,
  ): Promise<number> {
    if (step.do === "follow") {
      this.#redirects++;
      this.#target = step.to;
    } else if (step.do === "retry") {
      this.#retries++;
      this.#heardRetry(response?.status ?? 0, step.wait);
    }
    if (response !== undefined && step.do !== "renew") await discard(response);
    return step.do === "retry" ? step.wait : 0;
  }

  #heardRetry(status: number, delayMs: number): void {
    const listener = this.#context.onEvent;
    if (listener === undefined) return;
    emit(listener, {
      type: "api.retry",
      reason: status !== 0 ? "status" : this.#timedOut ? "timeout" : "network",
      status,
      delayMs,
    });
  }

  /** The error for a request that got no answer after its retries. */
  noAnswer(): ApiError {
    const { context } = this.#exchange;
    const attempts = this.#attempts;
    return new ApiError(
      `${context}: ${this.method} ${displayUrl(this.#target)} got no answer${
        attempts > 1 ? ` in ${attempts} attempts` : ""
      }: ${describeCause(this.#failure, [])}`,
      {
        status: 0,
        url: displayUrl(this.#target),
        cause: this.#failure,
        reason: this.#timedOut ? "timeout" : "network",
        attempts,
      },
    );
  }
}

const NO_ANSWER: Attempted = Object.freeze({ kind: "no answer" });
const DELIVER: Step = Object.freeze({ do: "deliver" });
/** Options for a getToken without a signal: one object, not one per call. */
const NO_OPTIONS = Object.freeze({});

/** An answer not handed back must be read or cancelled, or it leaks. */
async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}
