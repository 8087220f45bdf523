// Internal: one piece of work that any number of callers wait for.

import { raceAbort, unrefTimer } from "../core/_deadlines.ts";
import { MAX_TIMER_MS } from "../core/_check.ts";

/** One run of the work. */
export interface Flight<T> {
  /** Settles with the work's own outcome, or the abandonment error. */
  readonly promise: Promise<T>;
  /** The caller's steady clock's reading after which nobody should join it (a wall clock's step moves it not). */
  readonly deadline: number;
  /** The error the flight itself ended with, once it has. */
  failure?: { readonly error: unknown };
  /** One handler per flight, not per caller: a burst of joins stays cheap. */
  readonly recover: (error: unknown, signal?: AbortSignal) => Promise<T>;
  /** What every caller without a signal gets: one promise per flight. */
  shared?: Promise<T>;
}

/** What a flight is started with: its `deadline`, and the work. */
export interface FlightPlan<T> extends Pick<Flight<T>, "deadline"> {
  /** The work; it should stop when `signal` aborts. */
  readonly run: (signal: AbortSignal) => Promise<T>;
  /** Real milliseconds after which the flight is abandoned if it has not settled. */
  readonly budget: number;
  /** The error waiting callers get when the flight is abandoned. */
  readonly abandoned: () => unknown;
  /**
   * Called instead of rejecting when a join fails with anything but the flight's
   * outcome (a runtime refusing an ended request's promise): it may start anew.
   */
  readonly rejoin: (signal: AbortSignal | undefined) => Promise<T>;
}

/**
 * At most one run of the work at a time, joined by every caller while it runs. A caller that gives up leaves; nothing a
 * caller does stops the work: a token request under way counts against the quota, so its token is kept for the next.
 */
export class SingleFlight<T> {
  #current: Flight<T> | undefined;

  get current(): Flight<T> | undefined {
    return this.#current;
  }

  /** Starts the work; the flight is dropped once it settles. */
  start(plan: FlightPlan<T>): Flight<T> {
    const controller = new AbortController();
    // The callbacks below run once the flight exists: none is called before `start` returns.
    const watchdog = longTimer(() => {
      const error = plan.abandoned();
      flight.failure = { error };
      controller.abort(error);
      this.drop(flight);
    }, plan.budget);
    const work = plan.run(controller.signal).finally(() => {
      watchdog.clear();
      this.drop(flight);
    });
    work.catch((error) => flight.failure ??= { error });
    const flight: Flight<T> = {
      deadline: plan.deadline,
      // Abandoned, it rejects with the abort's reason: the abandonment error.
      promise: raceAbort(work, controller.signal),
      recover: (error, signal) => {
        if (flight.failure?.error === error) throw error;
        this.drop(flight);
        return plan.rejoin(signal);
      },
    };
    this.#current = flight;
    return flight;
  }

  /** Waits for `flight`; a caller's aborted signal rejects with its reason, the flight goes on. */
  join(flight: Flight<T>, signal: AbortSignal | undefined): Promise<T> {
    if (signal === undefined) {
      // Shared: 100,000 callers of one flight cost one promise, not 100,000.
      return flight.shared ??= flight.promise.catch(flight.recover);
    }
    return raceAbort(flight.promise, signal).catch((error) => {
      if (signal.aborted && error === signal.reason) throw error;
      return flight.recover(error, signal);
    });
  }

  /** Forgets `flight` if it is the current one, so the next caller starts anew. */
  drop(flight: Flight<T>): void {
    if (this.#current === flight) this.#current = undefined;
  }
}

/** Calls `fire` after `ms`, in steps a timer can wait (a longer delay fires at once); unref'd. */
function longTimer(fire: () => void, ms: number): { clear(): void } {
  let timer: ReturnType<typeof setTimeout>;
  const arm = (left: number) => {
    const step = Math.min(left, MAX_TIMER_MS);
    timer = setTimeout(() => left > step ? arm(left - step) : fire(), step);
    unrefTimer(timer);
  };
  arm(ms);
  return { clear: () => clearTimeout(timer) };
}
