// Internal: sending one API request with the bearer token: per-attempt time
// limit, retries of idempotent requests, one renewal after a 401, redirects
// under the same base. The decisions are in _api_policy.ts.

import { ApiError } from "./errors.ts";
import type { TokenProvider } from "./token.ts";
import { delay, retryAfterMs } from "./_retry.ts";
import { raceAbort } from "./_abort.ts";
import { displayUrl } from "./_url.ts";
import { serverText } from "./_redact.ts";
import { followable } from "./_path.ts";
import {
  type Attempted,
  type AuthLedger,
  isReplayable,
  onUnauthorized,
  recordAccepted,
  type RetryPolicy,
  retryWait,
} from "./_api_policy.ts";

/** What every request of one client shares. */
export interface SendContext {
  readonly tokenProvider: TokenProvider;
  readonly fetch: typeof fetch;
  readonly retry: RetryPolicy;
  /** Time limit of one attempt, in ms. */
  readonly requestTimeout: number;
  readonly ledger: AuthLedger;
  readonly now: () => number;
}

/** One request to send. */
export interface Exchange<T> {
  /** The base the token is bound to; redirects are followed under it only. */
  readonly base: URL;
  readonly url: URL;
  readonly init: RequestInit;
  /** Start of error messages, e.g. "Cannot fetch". */
  readonly context: string;
  /**
   * What must finish within the attempt's time limit once the answer is the
   * one to hand back: nothing for `fetch`, reading the body for a list page.
   * A failure here counts as no answer, and is retried like one.
   */
  readonly finish: (response: Response, accessToken: string) => Promise<T>;
}

/** The answer handed back, with the token it was sent with (to keep it out of errors). */
export interface Delivered<T> {
  readonly response: Response;
  readonly value: T;
  readonly accessToken: string;
}

/**
 * Sends `exchange` until it has an answer to hand back.
 *
 * @throws {ApiError} `status` 0 with the last failure as `cause` when no
 * answer arrived after the retries.
 * @throws {TokenRequestError} When no token could be had.
 * @throws The caller's signal's reason when it aborts.
 */
export async function sendExchange<T>(
  context: SendContext,
  exchange: Exchange<T>,
): Promise<Delivered<T>> {
  const run = new Run(context, exchange);
  while (true) {
    await run.pause();
    const { accessToken } = await context.tokenProvider.getToken(
      run.signal === undefined ? {} : { signal: run.signal },
    );
    const attempt = startAttempt(context.requestTimeout, run.signal);
    try {
      const response = await run.send(accessToken, attempt.signal);
      const step = response === undefined
        ? run.afterNoAnswer(attempt)
        : await run.afterAnswer(response, accessToken);
      if (step === "again") continue;
      if (step !== "deliver") throw step;
      try {
        const value = await raceAbort(
          exchange.finish(response!, accessToken),
          attempt.signal,
        );
        return { response: response!, value, accessToken };
      } catch (error) {
        // The service's own refusal is final; a body cut off or too slow
        // is no answer, and retried like one.
        if (error instanceof ApiError) throw error;
        run.failure = error;
        const next = run.afterNoAnswer(attempt);
        if (next !== "again") throw next;
      }
    } finally {
      attempt.clear();
    }
  }
}

/** One request's progress: the explicit state of the send loop. */
class Run<T> {
  readonly #context: SendContext;
  readonly #exchange: Exchange<T>;
  readonly signal: AbortSignal | undefined;
  readonly method: string;
  readonly replayable: boolean;
  target: URL;
  retries = 0;
  redirects = 0;
  /** Whether a 401 already cost this request a fresh token. */
  renewed = false;
  /** The wait before the next attempt, once one was decided. */
  wait = 0;
  failure: unknown;

  constructor(context: SendContext, exchange: Exchange<T>) {
    this.#context = context;
    this.#exchange = exchange;
    this.signal = exchange.init.signal ?? undefined;
    this.method = (exchange.init.method ?? "GET").toUpperCase();
    this.replayable = isReplayable(exchange.init.body);
    this.target = exchange.url;
  }

  /** Sends one attempt; `undefined` when no answer came (see `failure`). */
  async send(
    accessToken: string,
    signal: AbortSignal,
  ): Promise<Response | undefined> {
    const send = this.#context.fetch;
    const headers = new Headers(this.#exchange.init.headers);
    headers.set("authorization", `Bearer ${accessToken}`);
    try {
      return await raceAbort(
        send(this.target, {
          ...this.#exchange.init,
          headers,
          redirect: "manual",
          signal,
        }),
        signal,
        discard,
      );
    } catch (error) {
      this.signal?.throwIfAborted();
      this.failure = error;
      return undefined;
    }
  }

  /** After no answer: "again" (after `pause`), or the error to throw. */
  afterNoAnswer(attempt: Attempt): "again" | ApiError {
    this.signal?.throwIfAborted();
    if (attempt.timedOut) this.failure = attempt.signal.reason;
    return this.#retry({ kind: "no answer" }) ?? this.#noAnswer();
  }

  /** After an answer: "again", "deliver", or the error to throw. */
  async afterAnswer(
    response: Response,
    accessToken: string,
  ): Promise<"again" | "deliver"> {
    const base = this.#exchange.base.href;
    const { ledger, tokenProvider } = this.#context;
    if (response.status === 401) {
      if (
        this.replayable && !this.renewed &&
        onUnauthorized(ledger, base, accessToken) === "renew"
      ) {
        this.renewed = true;
        ledger.probation.add(base);
        await discard(response);
        await tokenProvider.invalidate(accessToken);
        return "again";
      }
      return "deliver";
    }
    recordAccepted(ledger, base, accessToken);
    const retryAfter = retryAfterMs(response.headers, this.#context.now());
    if (this.#retry({ kind: "answer", status: response.status, retryAfter })) {
      await discard(response);
      return "again";
    }
    const next = response.status >= 300 && response.status < 400
      ? followable(response, this.target, this.#exchange.base, this.method)
      : undefined;
    if (next === undefined || this.redirects >= MAX_REDIRECTS) return "deliver";
    this.redirects++;
    this.target = next;
    await discard(response);
    return "again";
  }

  /** Waits as decided before the next attempt, abortably. */
  async pause(): Promise<void> {
    const wait = this.wait;
    this.wait = 0;
    if (wait > 0) await delay(wait, this.signal);
  }

  #retry(attempted: Attempted): "again" | undefined {
    const wait = retryWait(attempted, {
      retries: this.retries,
      method: this.method,
      replayable: this.replayable,
    }, this.#context.retry);
    if (wait === undefined) return undefined;
    this.retries++;
    this.wait = wait;
    return "again";
  }

  #noAnswer(): ApiError {
    const { context } = this.#exchange;
    const attempts = this.retries + 1;
    return new ApiError(
      `${context}: ${this.method} ${displayUrl(this.target)} got no answer${
        attempts > 1 ? ` in ${attempts} attempts` : ""
      }: ${describeCause(this.failure)}`,
      { status: 0, url: displayUrl(this.target), cause: this.failure },
    );
  }
}

const MAX_REDIRECTS = 5;

/** An attempt's time limit, following the caller's signal too. */
interface Attempt {
  readonly signal: AbortSignal;
  readonly timedOut: boolean;
  clear(): void;
}

function startAttempt(ms: number, caller: AbortSignal | undefined): Attempt {
  const timer = new AbortController();
  let timedOut = false;
  // Not AbortSignal.timeout: it cannot be cleared, and fake timers cannot drive it.
  const id = setTimeout(() => {
    timedOut = true;
    timer.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError"));
  }, ms);
  return {
    // `any` keeps following the caller after the timer is cleared, so an
    // abort still reaches a body being read.
    signal: caller === undefined
      ? timer.signal
      : AbortSignal.any([caller, timer.signal]),
    get timedOut() {
      return timedOut;
    },
    clear: () => clearTimeout(id),
  };
}

/** An answer not handed back must be read or cancelled, or it leaks. */
async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}

/** The causes of a network failure, outermost first, as one line: "fetch failed: connect ECONNREFUSED". */
export function describeCause(error: unknown): string {
  const parts: string[] = [];
  for (let at = error, depth = 0; at !== undefined && depth < 4; depth++) {
    const message = at instanceof Error ? at.message : String(at);
    if (message !== "" && !parts.some((part) => part.includes(message))) {
      parts.push(message);
    }
    at = at instanceof Error ? at.cause : undefined;
  }
  return serverText(parts.join(": ") || "unknown error", []);
}
