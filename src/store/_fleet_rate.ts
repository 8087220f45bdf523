// Internal: the part of a fleet rate limiter that lives in each process. The
// fleet's window lives in a store (Redis, KV) behind SharedWindow, which
// decides each take atomically; here the process's own callers queue in
// order, one take at a time goes to the store for as many of them as wait,
// and the store's answer says how long until it is worth asking again, so
// nobody polls blindly. When the store fails, the process paces itself
// alone at its last known share of the limit, never unlimited.

import type { RateLimit, RateLimiter } from "../core/_rate_window.ts";
import {
  emptyWindow,
  recordAnswer,
  recordSend,
  slotWait,
  type Window,
} from "../core/_rate_window.ts";
import { WaitQueue } from "../core/_wait_queue.ts";
import { emit } from "../core/_emit.ts";
import { checkNumber, optionError } from "../core/_check.ts";
import type { EventListener } from "../core/events.ts";

/** What the store answers to a take. */
export interface TakeReply {
  /** Sends granted: the first `granted` of those asked for. */
  readonly granted: number;
  /** ms until it is worth asking again for the rest. */
  readonly wait: number;
  /** Processes that took or waited in the last window, this one included (0: unknown). */
  readonly holders: number;
}

/**
 * The fleet's window in a store. A send is named `<holder>:<ticket>`; it
 * counts as unanswered (from the end of the store's hold) until `answer`.
 */
export interface SharedWindow {
  readonly store: "redis" | "kv";
  /** Takes slots for `sends`, in order, as far as the window and the line allow. */
  take(sends: readonly string[]): Promise<TakeReply>;
  /** The sends were answered: their slots count from now. */
  answer(sends: readonly string[]): Promise<void>;
  /** The service refused a request for its rate: no send for a while. */
  refuse(): Promise<void>;
}

/** What a fleet limiter needs besides its store. */
export interface FleetConfig {
  readonly limit: RateLimit;
  /** Names this process's sends in the store. */
  readonly holder: string;
  readonly now: () => number;
  readonly onEvent: EventListener | undefined;
}

/** A timer cannot wait longer (2^31 - 1 ms). */
const LONGEST_INTERVAL = 2_147_483_647;

/**
 * The limit of a fleet limiter's options: the service's by default.
 *
 * @throws {RangeError} When `requests` is not a positive integer up to
 * `most`, or `interval` not one up to 2,147,483,647 ms.
 */
export function checkFleetLimit(
  options: { requests?: number; interval?: number },
  context: string,
  most: number,
): RateLimit {
  const requests = checkNumber(
    options.requests,
    900,
    "positive integer",
    context,
    "requests",
  );
  const interval = checkNumber(
    options.interval,
    300_000,
    "positive integer",
    context,
    "interval",
  );
  for (
    const [option, value, top] of [
      ["requests", requests, most],
      ["interval", interval, LONGEST_INTERVAL],
    ] as const
  ) {
    if (value > top) {
      throw optionError(
        RangeError,
        context,
        option,
        `must be at most ${top}`,
        String(value),
      );
    }
  }
  return Object.freeze({ requests, interval });
}

/** The first pause after the store failed, doubled on each failure after. */
const FIRST_PAUSE = 500;
const LONGEST_PAUSE = 30_000;
/** Sends asked for in one take, at most. */
const MOST_PER_TAKE = 64;

interface Waiter {
  readonly resolve: (ticket: number) => void;
  readonly reject: (reason: unknown) => void;
}

/**
 * A {@linkcode RateLimiter} over a {@linkcode SharedWindow}; disposing of it
 * waits for its writes to the store.
 */
export class FleetRateLimiter implements RateLimiter, AsyncDisposable {
  readonly limit: RateLimit;
  readonly #shared: SharedWindow;
  readonly #config: FleetConfig;
  /** This process's own sends: its pace when alone. */
  readonly #own: Window;
  readonly #queue = new WaitQueue<Waiter>((waiter, reason) => {
    waiter.reject(reason);
    if (this.#queue.size === 0) this.#stop();
  });
  /** Tickets whose send is in the store, unanswered. */
  readonly #inStore = new Set<number>();
  readonly #writes = new Set<Promise<void>>();
  /** Answered sends not yet told to the store: told together. */
  readonly #answers: string[] = [];
  #telling = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The line is being served (synchronously set and cleared). */
  #busy = false;
  #pumping: Promise<void> = Promise.resolve();
  #share: number;
  #aloneUntil = -Infinity;
  #failures = 0;

  constructor(shared: SharedWindow, config: FleetConfig) {
    this.limit = config.limit;
    this.#shared = shared;
    this.#config = config;
    this.#own = emptyWindow(config.limit.requests);
    // Before the store has said how many share it, the whole limit is the
    // only one known.
    this.#share = config.limit.requests;
  }

  take(signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<number>((resolve, reject) => {
      this.#queue.push({ resolve, reject }, signal);
      this.#wake();
    });
  }

  answered(ticket: number): void {
    recordAnswer(this.#own, ticket, this.#config.now());
    if (this.#inStore.delete(ticket)) {
      this.#answers.push(`${this.#config.holder}:${ticket}`);
      if (!this.#telling) {
        this.#telling = true;
        this.#write(this.#tell());
      }
    }
    this.#wake();
  }

  refused(): void {
    const { requests, interval } = this.limit;
    const own = this.#own;
    own.blockedUntil = Math.max(
      own.blockedUntil,
      this.#config.now() + interval / requests,
    );
    this.#write(this.#shared.refuse());
  }

  /** Waits for the writes (answers, refusals) and the take under way. */
  async [Symbol.asyncDispose](): Promise<void> {
    while (this.#writes.size > 0 || this.#busy) {
      await Promise.all([...this.#writes, this.#pumping]);
    }
  }

  /** Starts handing out slots, unless that is under way or timed already. */
  #wake(): void {
    if (this.#busy || this.#timer !== undefined) return;
    if (this.#queue.size === 0) return;
    this.#busy = true;
    this.#pumping = this.#pump();
  }

  async #pump(): Promise<void> {
    // The flag drops in the same step as the last look at the line (no
    // await between): a caller queued after it starts the next round.
    try {
      while (this.#queue.size > 0) {
        const wait = this.#config.now() < this.#aloneUntil
          ? this.#takeAlone()
          : await this.#takeShared();
        // Infinity: alone, with the send to leave first unanswered:
        // answered() wakes the line again.
        if (wait === Infinity) return;
        if (wait > 0 && this.#queue.size > 0) {
          this.#timer = setTimeout(() => {
            this.#timer = undefined;
            this.#wake();
          }, wait);
          return;
        }
      }
    } finally {
      this.#busy = false;
    }
  }

  /** One slot from this process's share, or how long until one is free. */
  #takeAlone(): number {
    const { interval } = this.limit;
    const wait = slotWait(this.#own, interval, this.#config.now(), this.#share);
    if (wait === 0) {
      this.#queue.shift()!.resolve(recordSend(this.#own, Infinity));
    }
    return wait;
  }

  /** Slots from the store for as many as wait, or how long until more. */
  async #takeShared(): Promise<number> {
    const { requests } = this.limit;
    const count = Math.min(this.#queue.size, MOST_PER_TAKE, requests);
    const first = this.#own.sent;
    const sends = Array.from(
      { length: count },
      (_, i) => `${this.#config.holder}:${first + i}`,
    );
    let reply: TakeReply;
    try {
      reply = await this.#shared.take(sends);
    } catch {
      this.#goAlone();
      return 0;
    }
    this.#failures = 0;
    if (reply.holders > 0) {
      this.#share = Math.max(1, Math.floor(requests / reply.holders));
    }
    for (let i = 0; i < reply.granted; i++) {
      // (Tickets follow `first`: only this loop records sends meanwhile.)
      const ticket = recordSend(this.#own, Infinity);
      this.#inStore.add(ticket);
      const waiter = this.#queue.shift();
      // A caller who left while the store answered: its slot is spent.
      if (waiter === undefined) this.answered(ticket);
      else waiter.resolve(ticket);
    }
    return reply.granted === count ? 0 : Math.max(1, reply.wait);
  }

  /** The store failed: pace alone at the last known share for a while. */
  #goAlone(): void {
    const now = this.#config.now();
    const pause = Math.min(LONGEST_PAUSE, FIRST_PAUSE * 2 ** this.#failures);
    this.#aloneUntil = now + pause;
    if (this.#failures++ === 0 && this.#config.onEvent !== undefined) {
      emit(this.#config.onEvent, {
        type: "rate.degraded",
        store: this.#shared.store,
        requests: this.#share,
        interval: this.limit.interval,
        retryAt: this.#aloneUntil,
      });
    }
  }

  /**
   * Tells the store of the answers, as many at once as came meanwhile: one
   * write for a burst of answers, not one each.
   */
  async #tell(): Promise<void> {
    try {
      while (this.#answers.length > 0) {
        await this.#shared.answer(this.#answers.splice(0, MOST_PER_TAKE))
          .catch(() => {}); // the hold frees the slot in the end
      }
    } finally {
      this.#telling = false;
    }
  }

  /** Keeps a write to the store for disposal; its failure changes nothing. */
  #write(write: Promise<void>): void {
    const settled = write.then(() => {}, () => {});
    this.#writes.add(settled);
    settled.then(() => this.#writes.delete(settled));
  }

  #stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
