// Internal: the one attempt loop of the module. Token requests and API
// requests both go through it. It owns what every request shares: each
// attempt's time limit (a body read within it), the wait before the next
// attempt, and the events that tell a listener about both. Each side gives
// it one attempt and a decision of what comes next, which the side makes
// with a pure function of its own (the client's `nextStep`, the token
// side's `nextTokenStep`). Here too, the rule both sides retry by (which
// statuses, how long to back off, a `Retry-After` read), and the bounded
// read of an answer's body (64 KiB at the token endpoint, 32 MiB for a list
// page).

import type {
  ApiRetryEvent,
  EventListener,
  PartnerApiEvent,
  TokenRetryEvent,
} from "./events.ts";
import { emit } from "./_emit.ts";
import {
  type AttemptLimits,
  type Deadline,
  delay,
  SharedDeadlines,
} from "./_deadlines.ts";
import { checkNumber } from "./_check.ts";

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
export interface AttemptPlan<O, R> {
  /** The caller's signal: it ends the request, the waits included. */
  readonly signal: AbortSignal | undefined;
  readonly limits: AttemptLimits;
  /** Hears every attempt and retry; `undefined`: nobody (and no clock is read). */
  readonly listener: EventListener | undefined;
  readonly now: () => number;
  /**
   * Before each attempt, outside its time limit: what an attempt needs
   * and may wait for without failing (a token, a slot in the rate window).
   */
  before?(): Promise<void>;
  /**
   * One attempt, under `deadline`: what came of it. It throws only what
   * ends the request at once (the caller's abort, a refusal before
   * sending).
   */
  attempt(deadline: Deadline, attempt: number): Promise<O>;
  /**
   * What comes after `outcome`, still under the attempt's `deadline`: the
   * answer handed back is read within it. The side decides with a pure
   * function and carries the decision out here.
   */
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
  /** Runs once an attempt is over, whatever came of it (e.g. a rate slot answered). */
  after?(): void;
}

/**
 * Sends `plan`'s attempts until one is done or fails: each under its own
 * time limit, the next after the wait its decision names.
 *
 * @throws What the plan's decision fails with, or the caller's signal's reason.
 */
export async function sendAttempts<O, R>(plan: AttemptPlan<O, R>): Promise<R> {
  const { listener, signal } = plan;
  for (let attempt = 1;; attempt++) {
    if (plan.before !== undefined) await plan.before();
    const deadline = plan.limits.start(signal);
    let next: Next<R>;
    try {
      const started = listener === undefined ? 0 : plan.now();
      const outcome = await plan.attempt(deadline, attempt);
      if (listener !== undefined) {
        const took = plan.now() - started;
        emit(listener, plan.heard(outcome, attempt, took, deadline));
      }
      const decided = plan.next(outcome, deadline, attempt);
      // A decision made at once (the usual answer) costs no extra turn.
      next = decided instanceof Promise ? await decided : decided;
    } finally {
      deadline.clear();
      plan.after?.();
    }
    if (next.do === "done") return next.value;
    if (next.do === "fail") throw next.error;
    if (listener !== undefined && next.retry !== undefined) {
      emit(listener, next.retry);
    }
    if (next.wait > 0) await delay(next.wait, signal);
  }
}

/**
 * Time limits of exactly `ms` for requests that are few (token requests):
 * the module's one kind, {@linkcode SharedDeadlines}, each attempt in a
 * window of its own, read on `now` (the provider's clock, as every time
 * reading). Not the platform's timeout signal: its timer cannot be cleared
 * when the attempt ends early, and fake timers cannot drive it.
 */
export function attemptLimits(ms: number, now: () => number): AttemptLimits {
  return new SharedDeadlines(ms, now, 0);
}

/**
 * The one builder of retry events, for both sides: what went wrong (no
 * answer, or an answer to retry with its `status`; 0 when none came) and
 * the wait before the next attempt.
 */
export function retryEvent<K extends "api.retry" | "token.retry">(
  type: K,
  reason: "network" | "timeout" | "status",
  status: number,
  delayMs: number,
): (ApiRetryEvent | TokenRetryEvent) & { readonly type: K } {
  return { type, reason, status, delayMs } as
    & (ApiRetryEvent | TokenRetryEvent)
    & { readonly type: K };
}

/** How retries back off, checked and complete. */
export interface Backoff {
  /** Retries after the first attempt. */
  readonly retries: number;
  /** Delay before the first retry, in ms, before jitter. */
  readonly initialDelay: number;
  /** No backoff wait is longer. */
  readonly maxDelay: number;
  /** The longest `Retry-After` waited for; a longer one ends the retries (the client returns the answer). */
  readonly maxRetryAfter: number;
}

const DEFAULT_BACKOFF: Backoff = Object.freeze({
  retries: 2,
  initialDelay: 500,
  maxDelay: 10_000,
  maxRetryAfter: 30_000,
});

/**
 * Checks a `retry` option (token provider and client take the same shape):
 * `false` for none, else each field or its default (2 retries, 500 ms,
 * at most 10 s, `Retry-After` up to 30 s).
 *
 * @throws {RangeError} For a count or delay out of range.
 */
export function backoffFrom(
  retry:
    | {
      retries?: number;
      initialDelay?: number;
      maxDelay?: number;
      maxRetryAfter?: number;
    }
    | false
    | undefined,
  context: string,
): Backoff {
  if (retry === false) return { ...DEFAULT_BACKOFF, retries: 0 };
  const given = retry ?? {};
  const delay = (
    value: number | undefined,
    field: "initialDelay" | "maxDelay" | "maxRetryAfter",
  ) =>
    checkNumber(
      value,
      DEFAULT_BACKOFF[field],
      "non-negative time in ms, at most 2147483647",
      context,
      field,
    );
  return {
    retries: checkNumber(
      given.retries,
      DEFAULT_BACKOFF.retries,
      "non-negative integer",
      context,
      "retries",
    ),
    initialDelay: delay(given.initialDelay, "initialDelay"),
    maxDelay: delay(given.maxDelay, "maxDelay"),
    maxRetryAfter: delay(given.maxRetryAfter, "maxRetryAfter"),
  };
}

/**
 * Answers worth another attempt, on both sides: the server could not answer
 * for now (408, 500, 502, 503, 504), or its rate window was full (429).
 * Other statuses say something a retry cannot change. The token side never
 * meets a 429 here: from the token endpoint it is the quota (DESIGN, "Token":
 * no token request until the bucket resets), a `QuotaExceededError`, not a
 * status to retry.
 */
const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

/** Whether an answer with `status` is worth another attempt. */
export function isRetryStatus(status: number): boolean {
  return RETRY_STATUSES.has(status);
}

/**
 * The one retry rule of both sides, for a failure worth another attempt:
 * `undefined` when no retry is left (`retries` made so far) or the server
 * asked for a longer wait than `maxRetryAfter` (the answer is then final:
 * the client hands it back, the provider fails with it); else the
 * `Retry-After` asked for, or a backoff with jitter.
 */
export function retryDelay(
  backoff: Backoff,
  retries: number,
  random: () => number,
  retryAfter: number | undefined,
): number | undefined {
  if (retries >= backoff.retries) return undefined;
  if (retryAfter === undefined) return backoffDelay(backoff, retries, random);
  return retryAfter <= backoff.maxRetryAfter ? retryAfter : undefined;
}

/**
 * The wait before retry number `attempt` (0-based): exponential, with jitter
 * between half and all of it so that a fleet does not retry in step.
 */
export function backoffDelay(
  backoff: Backoff,
  attempt: number,
  random: () => number,
): number {
  const full = Math.min(backoff.maxDelay, backoff.initialDelay * 2 ** attempt);
  return full * (0.5 + random() / 2);
}

/**
 * An IMF-fixdate (RFC 9110 5.6.7), the one date form `Retry-After` is read
 * in: "Sun, 06 Nov 1994 08:49:37 GMT".
 */
const IMF_FIXDATE =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$/;

/**
 * Reads `Retry-After` as milliseconds from `now` (the caller's injected
 * clock, so that a date is measured against the same time as every other
 * decision). Only delta-seconds (digits) and an IMF-fixdate are read; any
 * other form (`1.5`, `-5`, `+60`, a loose date) is `undefined`, as if
 * absent, so that it can neither shorten nor lift a wait that other signals
 * set. A date in the past is 0. Absurd values come back as they are:
 * callers clamp to their own limits.
 */
export function retryAfterMs(
  headers: Headers,
  now: number,
): number | undefined {
  const value = headers.get("retry-after")?.trim();
  if (value === undefined) return undefined;
  if (/^[0-9]+$/.test(value)) return Number(value) * 1000;
  if (!IMF_FIXDATE.test(value)) return undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Reads at most `max` bytes of `response`'s body as text. A larger body
 * (declared, or found while reading) is cancelled without reading the rest,
 * and gives `undefined`. A body cut off rejects with the reader's error.
 */
export async function readBounded(
  response: Response,
  max: number,
): Promise<string | undefined> {
  const declared = Number(response.headers.get("content-length") ?? 0);
  // A body of a declared length ends there, unless the runtime inflates it
  // (content-encoding) or the length is not what frames it (a chunked
  // transfer-encoding wins over it): then the runtime may read it whole, its
  // own fast way (the reader's stream steps showed in a list's profile).
  const { headers } = response;
  if (
    declared > 0 && declared <= max && !headers.has("content-encoding") &&
    !headers.has("transfer-encoding")
  ) {
    return await response.text();
  }
  const reader = response.body?.getReader();
  if (reader === undefined) return "";
  const chunks: Uint8Array[] = [];
  let size = declared > max ? declared : 0;
  try {
    while (size <= max) {
      const read = await reader.read();
      if (read.done) return new TextDecoder().decode(concat(chunks, size));
      size += read.value.byteLength;
      chunks.push(read.value);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  }
  reader.cancel().catch(() => {});
  return undefined;
}

/** The bytes of `chunks`, `size` in all, as one array. */
function concat(
  chunks: readonly Uint8Array[],
  size: number,
): Uint8Array {
  const all = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return all;
}
