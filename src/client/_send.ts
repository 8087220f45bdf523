// Internal: sending one API request with the bearer token, through the
// module's one attempt loop (core/_attempt_loop.ts, which owns the time
// limits, waits and events): a token and a rate slot before each attempt,
// retries of idempotent requests, one renewal after a 401, redirects under
// the same base. The decisions are `nextStep` in _policy.ts.

import { ApiError } from "../core/errors.ts";
import { retryAfterMs } from "../core/_retry.ts";
import { type Deadline, raceAbort } from "../core/_abort.ts";
import type { Next } from "../core/_attempt_loop.ts";
import { sendAttempts } from "../core/_attempt_loop.ts";
import { emit } from "../core/_emit.ts";
import { displayUrl } from "../core/_url.ts";
import { describeCause } from "../core/_cause.ts";
import { followable } from "./_path.ts";
import { withBearer } from "./_bearer.ts";
import type { Exchange, SendContext } from "./_exchange.ts";
import {
  type Attempted,
  isReplayable,
  mayRetry,
  nextStep,
  type Progress,
  type Step,
} from "./_policy.ts";

/**
 * Sends `exchange` until it has an answer to hand back, and returns what
 * `finish` made of it.
 *
 * @throws {ApiError} `status` 0 with the last failure as `cause` when no
 * answer arrived after the retries.
 * @throws {TokenRequestError} When no token could be had.
 * @throws The caller's signal's reason when it aborts.
 */
export function sendExchange<T>(
  context: SendContext,
  exchange: Exchange<T>,
): Promise<T> {
  const request = requestOf(context, exchange);
  return sendAttempts<Response | undefined, T>({
    signal: request.signal,
    limits: context.deadlines,
    listener: context.onEvent,
    now: context.now,
    before: () => prepare(request),
    attempt: (deadline) => attempt(request, deadline),
    next: (response, deadline, attempts) =>
      afterAttempt(request, response, deadline, attempts),
    heard: (response, attempt, durationMs, deadline) => ({
      type: "api.request",
      method: request.method,
      base: exchange.kind,
      path: request.target.pathname,
      ...serverOf(request.target),
      status: response?.status ?? 0,
      ...(response === undefined
        ? { reason: deadline.timedOut ? "timeout" : "network" }
        : {}),
      attempt,
      durationMs,
    }),
    // The limit ends with the attempt: for fetch once the headers are in,
    // for a list page once its body is read. The rate window counts the
    // request from here: the service has it by now.
    after: () => {
      if (request.ticket !== undefined) {
        context.rateLimiter!.answered(request.ticket);
      }
      request.ticket = undefined;
    },
  });
}

/**
 * One request under way, with what it is sent through and for: local to
 * its call, changed only by the steps below.
 */
interface ApiRequest<T = unknown> extends Progress {
  readonly context: SendContext;
  readonly exchange: Exchange<T>;
  readonly signal: AbortSignal | undefined;
  retries: number;
  redirects: number;
  renewed: boolean;
  /** Where the next attempt goes (redirects move it). */
  target: URL;
  /** The token of the current attempt. */
  accessToken: string;
  /** The current attempt's slot in the rate window. */
  ticket: number | undefined;
  /** Why the last attempt got no answer. */
  failure: unknown;
}

function requestOf<T>(
  context: SendContext,
  exchange: Exchange<T>,
): ApiRequest<T> {
  return {
    context,
    exchange,
    signal: exchange.init.signal ?? undefined,
    method: (exchange.init.method ?? "GET").toUpperCase(),
    replayable: isReplayable(exchange.init.body),
    retries: 0,
    redirects: 0,
    renewed: false,
    target: exchange.url,
    accessToken: "",
    ticket: undefined,
    failure: undefined,
  };
}

/**
 * Before each attempt, outside its time limit: the token before the slot
 * (a call that fails without one sends nothing, and must not hold a slot of
 * the window for an interval), then a slot in the rate window (waiting for
 * the window is not failing).
 */
async function prepare(
  request: ApiRequest,
): Promise<void> {
  const { signal } = request;
  ({ accessToken: request.accessToken } = await request.context.tokenProvider
    .getToken(signal === undefined ? NO_OPTIONS : { signal }));
  const slot = request.context.rateLimiter?.take(signal);
  request.ticket = typeof slot === "object"
    ? await waitFor(request.context, slot)
    : slot;
}

/**
 * One attempt with the bearer token, under `deadline`: the answer, or
 * `undefined` (and `failure`) when none came.
 */
async function attempt<T>(
  request: ApiRequest<T>,
  deadline: Deadline,
): Promise<Response | undefined> {
  try {
    const { context, exchange } = request;
    const sent = context.fetch(request.target.href, {
      ...exchange.init,
      headers: withBearer(exchange.init.headers, request.accessToken),
      redirect: "manual",
      signal: deadline.signal,
    });
    // The runtime's own fetch stops at its signal; a fetch of the caller's
    // might not, and must not hold an attempt past its time limit.
    return await (context.ownFetch
      ? sent
      : raceAbort(sent, deadline.signal, discard));
  } catch (error) {
    request.signal?.throwIfAborted();
    request.failure = error;
    return undefined;
  }
}

/**
 * Decides with {@linkcode nextStep} and carries the step out: at once for
 * an answer handed back as it is (the usual case), else after the awaits
 * the step needs.
 */
function afterAttempt<T>(
  request: ApiRequest<T>,
  response: Response | undefined,
  deadline: Deadline,
  attempts: number,
): Next<T> | Promise<Next<T>> {
  const step = nextStep(
    attempted(request, response),
    request,
    request.context.retry,
  );
  if (step.do === "deliver") {
    return deliver(request, response!, deadline, attempts);
  }
  return carryOut(request, response, deadline, attempts, step);
}

/** Hands the answer back through `finish`, within the attempt's time limit. */
function deliver<T>(
  request: ApiRequest<T>,
  response: Response,
  deadline: Deadline,
  attempts: number,
): Next<T> | Promise<Next<T>> {
  const bodyFailed = (error: unknown): Next<T> | Promise<Next<T>> => {
    // The service's own refusal is final; a body cut off or too slow is no
    // answer, and retried like one (the caller's abort ends it).
    if (error instanceof ApiError) throw error;
    request.signal?.throwIfAborted();
    request.failure = error;
    const step = nextStep(NO_ANSWER, request, request.context.retry);
    return carryOut(request, undefined, deadline, attempts, step);
  };
  try {
    const done = request.exchange.finish(
      response,
      request.accessToken,
      attempts,
    );
    if (!(done instanceof Promise)) return { do: "done", value: done };
    return raceAbort(done, deadline.signal).then(
      (value): Next<T> => ({ do: "done", value }),
      bodyFailed,
    );
  } catch (error) {
    return bodyFailed(error);
  }
}

/** Carries out a renewal, a redirect, a retry or a failure. */
async function carryOut<T>(
  request: ApiRequest<T>,
  response: Response | undefined,
  deadline: Deadline,
  attempts: number,
  step: Step,
): Promise<Next<T>> {
  if (step.do === "renew") {
    if (await renew(request, response!)) return AGAIN;
    return await deliver(request, response!, deadline, attempts);
  }
  // No answer is never delivered: after one, it is retry or fail.
  if (step.do !== "retry" && step.do !== "follow") {
    return {
      do: "fail",
      error: noAnswer(request, deadline, attempts),
    };
  }
  if (response !== undefined) await discard(response);
  if (step.do === "follow") {
    request.redirects++;
    request.target = step.to;
    return AGAIN;
  }
  request.retries++;
  return retryStep(step.wait, response, deadline);
}

/** What the attempt came to, for {@linkcode nextStep}. */
function attempted<T>(
  request: ApiRequest<T>,
  response: Response | undefined,
): Attempted {
  if (response === undefined) {
    request.signal?.throwIfAborted();
    return NO_ANSWER;
  }
  const status = response.status;
  // The service counts more than this limiter saw (other processes on the
  // same address): no request before the window has room. A Retry-After
  // is the retry's own wait.
  if (status === 429) request.context.rateLimiter?.refused();
  return {
    kind: "answer",
    status,
    retryAfter: mayRetry(status)
      ? retryAfterMs(response.headers, request.context.now())
      : undefined,
    redirect: status >= 300 && status < 400
      ? followable(
        response,
        request.target,
        request.exchange.base,
        request.method,
      )
      : undefined,
  };
}

/** A retry after `wait` ms, and the event that tells of it. */
function retryStep(
  wait: number,
  response: Response | undefined,
  deadline: Deadline,
): Next<never> {
  const status = response?.status ?? 0;
  return {
    do: "again",
    wait,
    retry: {
      type: "api.retry",
      reason: status !== 0
        ? "status"
        : deadline.timedOut
        ? "timeout"
        : "network",
      status,
      delayMs: wait,
    },
  };
}

/** Waits for a slot in the rate window; a listener hears how long. */
async function waitFor(
  context: SendContext,
  slot: Promise<number>,
): Promise<number> {
  const listener = context.onEvent;
  if (listener === undefined) return await slot;
  const started = context.now();
  const ticket = await slot;
  emit(listener, {
    type: "rate.wait",
    delayMs: context.now() - started,
  });
  return ticket;
}

/**
 * Asks the provider's ledger whether this 401 may cost a fresh token; when
 * it may, the answer is cleaned up for the next attempt.
 */
async function renew(
  request: ApiRequest,
  response: Response,
): Promise<boolean> {
  if (!await request.context.renewAfterUnauthorized(request.accessToken)) {
    return false;
  }
  request.renewed = true;
  const listener = request.context.onEvent;
  if (listener !== undefined) {
    emit(listener, { type: "api.renewal", path: request.target.pathname });
  }
  await discard(response);
  return true;
}

/** The error for a request that got no answer after its retries. */
function noAnswer(
  request: ApiRequest,
  deadline: Deadline,
  attempts: number,
): ApiError {
  const { timedOut } = deadline;
  const cause = timedOut
    ? new DOMException(
      `no answer within ${request.context.deadlines.ms} ms`,
      "TimeoutError",
    )
    : request.failure;
  const url = displayUrl(request.target);
  return new ApiError(
    `${request.exchange.context}: ${request.method} ${url} got no answer${
      attempts > 1 ? ` in ${attempts} attempts` : ""
    }: ${describeCause(cause, [])}`,
    {
      status: 0,
      url,
      cause,
      reason: timedOut ? "timeout" : "network",
      attempts,
    },
  );
}

const NO_ANSWER: Attempted = Object.freeze({ kind: "no answer" });
const AGAIN: Next<never> = Object.freeze({ do: "again", wait: 0 });
/** Options for a getToken without a signal: one object, not one per call. */
const NO_OPTIONS = Object.freeze({});

/** An answer not handed back must be read or cancelled, or it leaks. */
async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}

/** Where a request went, as its event says: host and port. */
function serverOf(url: URL): { host: string; port: number } {
  const port = url.port === ""
    ? (url.protocol === "https:" ? 443 : 80)
    : Number(url.port);
  return { host: url.hostname.replace(/^\[(.*)\]$/, "$1"), port };
}
