// Internal: the one attempt loop of the module. Token requests and API
// requests both go through it. It owns what every request shares: each
// attempt's time limit (a body read within it), the wait before the next
// attempt, and the events that tell a listener about both. Each side gives
// it one attempt and a decision of what comes next, which the side makes
// with a pure function of its own (the client's `nextStep`, the token
// side's `nextTokenStep`).

import type {
  ApiRetryEvent,
  EventListener,
  PartnerApiEvent,
  TokenRetryEvent,
} from "./events.ts";
import { emit } from "./_emit.ts";
import { delay } from "./_retry.ts";
import type { AttemptLimits, Deadline } from "./_abort.ts";
import { SharedDeadlines } from "./_deadlines.ts";

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
 * window of its own. Not the platform's timeout signal: its timer cannot
 * be cleared when the attempt ends early, and fake timers cannot drive it.
 */
export function attemptLimits(ms: number): AttemptLimits {
  return new SharedDeadlines(ms, Date.now, 0);
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
