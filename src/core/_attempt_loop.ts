// Internal: the one attempt loop of token and API requests (each attempt's time limit, the wait before the next, their
// events), the shared retry rule and the bounded body read. Each side decides its next step (`nextStep`, `nextTokenStep`).

import type { EventListener, PartnerApiEvent } from "./events.ts";
import { emit } from "./_emit.ts";
import { type AttemptLimits, type Deadline, delay } from "./_deadlines.ts";
import { checkNumber, type NumberRule, requireKnownOptions } from "./_check.ts";

/** What comes after an attempt. */
export type Next<R> =
  | { readonly do: "done"; readonly value: R }
  /** Another attempt after `wait` ms; `retry` says why, for the listener. */
  | {
    readonly do: "again";
    readonly wait: number;
    readonly retry?: PartnerApiEvent;
  }
  | { readonly do: "fail"; readonly error: unknown };

/** One request, as a side hands it to {@linkcode sendAttempts}. */
export interface AttemptPlan<O, R, B = void> {
  /** The caller's signal: it ends the request, the waits included. */
  readonly signal: AbortSignal | undefined;
  readonly limits: AttemptLimits;
  /** Hears every attempt and retry; `undefined`: nobody (and no clock is read). */
  readonly listener: EventListener | undefined;
  readonly now: () => number;
  /** Before each attempt, outside its time limit: what to wait for (a token), handed to `ready` (a rate slot). */
  before?(): Promise<B>;
  /** With what `before` waited for (called only after it): a wait of its own, if any. */
  ready?(value: B): Promise<void> | void;
  /** One attempt, under `deadline`; throws only what ends the request at once. */
  attempt(deadline: Deadline, attempt: number): Promise<O>;
  /** What comes after `outcome`, still under `deadline` (an answer is read within it). */
  next(
    outcome: O,
    deadline: Deadline,
    attempt: number,
  ): Next<R> | Promise<Next<R>>;
  /** The event that tells of an attempt, given how long it took and its limit. */
  heard(
    outcome: O,
    attempt: number,
    durationMs: number,
    deadline: Deadline,
  ): PartnerApiEvent;
  /** Whether the attempt is told after `next` decided (its body is read there, and may fail it); else before. */
  tellsAfterNext?(outcome: O): boolean;
  /** Runs once an attempt is over, whatever came of it (e.g. a rate slot answered). */
  after?(): void;
}

/** Sends `plan`'s attempts until one is done or fails, each under its own time limit. */
export async function sendAttempts<O, R, B = void>(
  plan: AttemptPlan<O, R, B>,
): Promise<R> {
  const { listener, signal } = plan;
  for (let attempt = 1;; attempt++) {
    if (plan.before !== undefined) {
      const ready = plan.ready?.(await plan.before());
      if (ready !== undefined) await ready;
    }
    const deadline = plan.limits.start(signal);
    let next: Next<R>;
    try {
      const started = listener === undefined ? 0 : plan.now();
      const outcome = await plan.attempt(deadline, attempt);
      const tell = () => {
        if (listener === undefined) return;
        const took = plan.now() - started;
        emit(listener, plan.heard(outcome, attempt, took, deadline));
      };
      // Told before what it leads to (a renewal, a retry), or, where a body is read within it, once that is decided.
      const late = plan.tellsAfterNext?.(outcome) === true;
      if (!late) tell();
      try {
        const decided = plan.next(outcome, deadline, attempt);
        // A decision made at once (the usual answer) costs no extra turn.
        next = decided instanceof Promise ? await decided : decided;
      } finally {
        if (late) tell();
      }
    } finally {
      deadline.clear();
      plan.after?.();
    }
    if (next.do === "done") return next.value;
    if (next.do === "fail") throw next.error;
    if (next.retry !== undefined) emit(listener!, next.retry); // built for a listener only
    if (next.wait > 0) await delay(next.wait, signal);
  }
}

/** Another attempt after `wait` ms, for both sides; its retry event (`status` 0: no answer) is built for a listener only. */
export function retryStep(
  listener: EventListener | undefined,
  type: "api.retry" | "token.retry",
  reason: "network" | "timeout" | "status",
  status: number,
  wait: number,
): Next<never> {
  if (listener === undefined) return { do: "again", wait };
  return { do: "again", wait, retry: { type, reason, status, delayMs: wait } };
}

/** The `retry` option (see the public RetryOptions), checked and complete. */
export interface Backoff {
  readonly retries: number;
  readonly initialDelay: number;
  readonly maxDelay: number;
  readonly maxRetryAfter: number;
}

const DEFAULT_BACKOFF: Backoff = Object.freeze({
  retries: 2,
  initialDelay: 500,
  maxDelay: 10_000,
  maxRetryAfter: 30_000,
});

/** Checks a `retry` option: `false` for none, else each field or its default. */
export function backoffFrom(
  retry: Partial<Backoff> | false | undefined,
  context: string,
): Backoff {
  if (retry === false) return { ...DEFAULT_BACKOFF, retries: 0 };
  // Anything else (0, null, true, a misspelt field) meant the default of 2 retries, silently.
  if (retry !== undefined) {
    requireKnownOptions(retry, Object.keys(DEFAULT_BACKOFF), context, "retry");
  }
  const given = retry ?? {};
  const check = (field: keyof Backoff, rule: NumberRule) =>
    checkNumber(given[field], DEFAULT_BACKOFF[field], rule, context, field);
  const time = "non-negative time in ms, at most 2147483647";
  return {
    retries: check("retries", "non-negative integer"),
    initialDelay: check("initialDelay", time),
    maxDelay: check("maxDelay", time),
    maxRetryAfter: check("maxRetryAfter", time),
  };
}

/** Checks a `timeout` option: each attempt's limit in ms, 30 s by default (the client's and the token endpoint's). */
export function timeoutFrom(timeout: number | undefined, context: string) {
  const rule = "positive time in ms, at most 2147483647";
  return checkNumber(timeout, 30_000, rule, context, "timeout");
}

/** Answers worth another attempt (a 429 from the token endpoint is the quota, never met here). */
export const isRetryStatus = (status: number): boolean =>
  [408, 429, 500, 502, 503, 504].includes(status);

/** The retry rule of both sides: `retryAfter`, else a backoff; `undefined` (final) with no retry left or past `maxRetryAfter`. */
export function retryDelay(
  backoff: Backoff,
  retries: number,
  random: () => number,
  retryAfter: number | undefined,
): number | undefined {
  if (retries >= backoff.retries) return undefined;
  if (retryAfter !== undefined) {
    return retryAfter <= backoff.maxRetryAfter ? retryAfter : undefined;
  }
  // Exponential, jittered so that a fleet does not retry in step.
  const full = Math.min(backoff.maxDelay, backoff.initialDelay * 2 ** retries);
  return full * (0.5 + random() / 2);
}

/** An IMF-fixdate (RFC 9110 5.6.7), the one date form `Retry-After` is read in. */
const IMF_FIXDATE =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$/;

/**
 * `Retry-After` as ms from `now`: delta-seconds or an IMF-fixdate; any other form is `undefined`, as if absent, so it
 * can neither shorten nor lift a wait other signals set. A past date is 0; callers clamp absurd values.
 */
export function retryAfterMs(headers: Headers, now: number) {
  const value = headers.get("retry-after")?.trim() ?? ""; // absent: no form
  if (/^[0-9]+$/.test(value)) return Number(value) * 1000;
  if (!IMF_FIXDATE.test(value)) return undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** At most `max` bytes of `response`'s body as text; a larger one is cancelled unread: `undefined`. */
export async function readBounded(response: Response, max: number) {
  const declared = Number(response.headers.get("content-length") ?? 0);
  // Inflated or chunked, a declared length frames nothing: the runtime reads fastest.
  const { headers } = response;
  if (
    declared > 0 && declared <= max && !headers.has("content-encoding") &&
    !headers.has("transfer-encoding")
  ) return await response.text();
  const reader = response.body?.getReader();
  if (reader === undefined) return "";
  const decoder = new TextDecoder();
  let text = "";
  let size = declared > max ? declared : 0;
  try {
    while (size <= max) {
      const read = await reader.read();
      if (read.done) return text + decoder.decode();
      size += read.value.byteLength;
      text += decoder.decode(read.value, { stream: true });
    }
    return undefined;
  } finally {
    reader.cancel().catch(() => {}); // a no-op once the body was read whole
  }
}

/** An answer not handed back must be read or cancelled, or it leaks. */
export async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}
