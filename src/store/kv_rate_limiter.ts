// The fleet rate limiter on Deno KV: each take reads the window's one value, decides (_window_rules.ts), and writes
// back if nobody wrote meanwhile; answers wait in keys of their own for the next take.

import { optionNames, requireKnownOptions } from "../core/_check.ts";
import type { RateLimiter } from "../core/rate_limiter.ts";
import type { FleetRateLimiterOptions } from "./fleet_options.ts";
import { FleetRateLimiter } from "./_fleet_rate.ts";
import {
  type FleetConfig,
  fleetConfig,
  type SharedWindow,
} from "./_fleet_config.ts";
import {
  answerSends,
  emptyState,
  refuseSends,
  type Reseed,
  reseedSends,
  slotShare,
  type TakeReply,
  type TakeRequest,
  takeTurn,
  windowSpan,
  type WindowState,
} from "./_window_rules.ts";
import { answerOf, ClockView, readState } from "./_kv_view.ts";
import { KV_LATE, kvPrefix, requireKv } from "./_kv_store.ts";
import { answerWithin } from "../core/_deadlines.ts";

/**
 * Options of {@linkcode createKvRateLimiter}.
 *
 * @example A scaled limit under an application's prefix
 * ```ts
 * import { createKvRateLimiter, type KvRateLimiterOptions } from "@partner-api/client/kv";
 * import { deepStrictEqual, ok } from "node:assert/strict";
 *
 * using kv = await Deno.openKv(":memory:");
 * const options: KvRateLimiterOptions = { requests: 90, interval: 3000, prefix: ["my-app", "rate"] };
 * await using limiter = createKvRateLimiter(kv, options);
 * deepStrictEqual(limiter.limit, { requests: 90, interval: 3000 });
 * limiter.answered(await limiter.take());
 * ok((await Array.fromAsync(kv.list({ prefix: ["my-app", "rate"] }))).length > 0); // the window rests there
 * ```
 */
export interface KvRateLimiterOptions extends FleetRateLimiterOptions {
  /**
   * Requests the whole fleet may send in any window, at most 1,000 (the window rests in one KV value); every process
   * sharing the prefix gives the same.
   * @default {900}
   */
  requests?: number;
  /**
   * The key the window rests under: processes with the same prefix share one budget.
   * @default {["partner-api", "rate"]}
   */
  prefix?: readonly (string | number)[];
  /**
   * The clock, in epoch ms; processes need not agree, and a clock stepped back reads as no time passing.
   * @default {Date.now, read through the runtime's monotone clock}
   */
  now?: () => number;
}

const CONTEXT = "Cannot create KV rate limiter";
const LIMITER_OPTIONS = optionNames<KvRateLimiterOptions>()(
  "requests prefix now interval onEvent reserve",
);
const LIMITER_ELSEWHERE =
  "limiter runs on Deno and Deno Deploy only; elsewhere use createRedisRateLimiter";
/** One KV value holds the window: 64 KiB at most. */
const MOST_REQUESTS = 1000;

/**
 * Creates a {@linkcode RateLimiter} that every process using the same KV database and `prefix` shares, for
 * `createClient({ rateLimit })`: never more than `requests` sends in any `interval` ms across the fleet, whatever the
 * members' clocks. Callers wait in order, never fail, and can give up with their signal. A process whose KV fails paces
 * alone at its last known share (`rate.degraded`, then `rate.restored`). See docs/fleets.md ("One limit for the fleet").
 *
 * `await using` it before closing the database: it waits for the answers still being written. Callers still waiting
 * then, and any take after, reject with an `AbortError` (`DOMException`).
 * @param kv An open KV database, e.g. `await Deno.openKv()`.
 * @throws {RangeError} When `requests` or `interval` is out of range, or `prefix` leaves no room for its keys in KV's 2,048 bytes.
 * @throws {TypeError} When `prefix` is not an array of KV key parts, or outside Deno.
 *
 * @example Two limiters (as two processes) share one budget
 * ```ts
 * import { createKvRateLimiter } from "@partner-api/client/kv";
 * import { rejects } from "node:assert/strict";
 *
 * using kv = await Deno.openKv(":memory:");
 * await using a = createKvRateLimiter(kv, { requests: 2, interval: 60_000 });
 * await using b = createKvRateLimiter(kv, { requests: 2, interval: 60_000 });
 * a.answered(await a.take());
 * b.answered(await b.take());
 * const third = new AbortController();
 * const waiting = (async () => await a.take(third.signal))(); // the fleet's window is full
 * third.abort();
 * await rejects(waiting, { name: "AbortError" });
 * ```
 */
export function createKvRateLimiter(
  kv: Deno.Kv,
  options: KvRateLimiterOptions = {},
): RateLimiter & AsyncDisposable {
  requireKv(kv, CONTEXT, LIMITER_ELSEWHERE);
  requireKnownOptions(options, LIMITER_OPTIONS, CONTEXT);
  const config = fleetConfig(options, CONTEXT, MOST_REQUESTS);
  // The limiter adds "answers" and a send's name (41 bytes as KV encodes them).
  const prefix = kvPrefix(options.prefix, ["partner-api", "rate"], 41, CONTEXT);
  return new FleetRateLimiter(new KvWindow(kv, prefix, config), config);
}

/** Writes lost to other processes before a take gives way for a moment. */
const MOST_ATTEMPTS = 8;
/** Answers folded into the window by one take, at most. */
const MOST_FOLDED = 500;
/** An answer is not given up so soon: until written, its slot stays taken for the hold. */
const MOST_ANSWER_ATTEMPTS = 100;

/**
 * A KV call unanswered this long is a failing store (the member paces alone): the longest a member alone waits before
 * it asks again. Not the token store's 2 s: at 2 s, a slow store sent members alone at half each, twice the limit.
 */
const KV_WAIT = 30_000;

/** A take that lost every write to others. */
const LOST_TAKE = { granted: 0, wait: 5, holders: 0, reseed: false };

/** The fleet's window in one KV value, changed by atomic check-and-set. */
class KvWindow implements SharedWindow {
  readonly store = "kv";
  readonly #kv: Deno.Kv;
  readonly #key: Deno.KvKey;
  /** Where answers wait to be folded in, one key each. */
  readonly #answers: Deno.KvKey;
  readonly #config: FleetConfig;
  readonly #view: ClockView;
  /** This process's sends not answered yet: when written, on which clock. */
  readonly #written = new Map<string, { at: number; steps: number }>();
  /** When this process was last granted a send, on its clock. */
  #granted = -Infinity;

  constructor(kv: Deno.Kv, prefix: Deno.KvKey, config: FleetConfig) {
    this.#kv = kv;
    this.#key = [...prefix, "window"];
    this.#answers = [...prefix, "answers"];
    this.#config = config;
    this.#view = new ClockView(config.holder);
  }

  async take(request: TakeRequest): Promise<TakeReply> {
    const { holder, reserve, limit } = this.#config;
    // While others wait, a send a slot's share after its last at the soonest: the others, who date its sends by when
    // they see its takes, then see them soon enough to take their turns (a burst of 16 made them wake late by as long).
    const spacedUntil = this.#granted + slotShare(limit);
    const ask = { ...request, holder, reserve, spacedUntil };
    let reply: TakeReply | undefined;
    let writtenAt = 0;
    const written = await this.#change((state, now) => {
      const { state: next, ...turn } = takeTurn(state, ask, now, limit);
      reply = turn;
      writtenAt = now;
      return next;
    });
    // Lost to others each time: ask again in a moment, nothing learned.
    if (!written) return { ...LOST_TAKE, epoch: request.epoch };
    if (reply!.granted > 0) this.#granted = writtenAt;
    for (const send of request.sends.slice(0, reply!.granted)) {
      this.#written.set(send, { at: writtenAt, steps: this.#config.now.steps });
    }
    return reply!;
  }

  async reseed(reseed: Reseed): Promise<void> {
    await this.#change((state, now) =>
      reseedSends(state, reseed, now, this.#config.limit)
    );
  }

  /** One write with no check (answers never wait for the window's lock): when, and how long after the send. */
  async answer(sends: readonly string[]): Promise<void> {
    const now = this.#config.now();
    const answers = sends.map((send) => {
      const written = this.#written.get(send);
      this.#written.delete(send);
      const span = written?.steps === this.#config.now.steps
        ? Math.max(0, now - written.at)
        : -1;
      return [send, [now, span]] as const;
    });
    const expireIn = windowSpan(this.#config.limit);
    const told = await this.#tries(MOST_ANSWER_ATTEMPTS, async () => {
      const write = this.#kv.atomic();
      for (const [send, answer] of answers) {
        write.set([...this.#answers, send], answer, { expireIn });
      }
      return (await write.commit()).ok;
    });
    // Locked through every try, the store heard none: a failure keeps them to tell later (else each slot is held a minute).
    if (!told) throw new Error("the database stayed locked");
  }

  async refuse(): Promise<void> {
    await this.#change((state, now) =>
      refuseSends(state, now, this.#config.limit)
    );
  }

  /**
   * Reads the value and waiting answers, changes it on this process's clock, and writes it back if nobody wrote
   * meanwhile; `false` after a few tries. A value that is not a window gets a new epoch.
   */
  async #change(change: (state: WindowState, now: number) => WindowState) {
    return await this.#tries(MOST_ATTEMPTS, async () => {
      const entry = await this.#kv.get(this.#key);
      const answers = await Array.fromAsync(
        this.#kv.list({ prefix: this.#answers }, { limit: MOST_FOLDED }),
      );
      const stored = answerSends(
        readState(entry.value) ?? emptyState(crypto.randomUUID()),
        answers.flatMap(({ key, value }) => answerOf(key, value)),
      );
      const now = this.#config.now();
      const seen = this.#view.see(stored, now, this.#config.limit);
      const next = this.#view.restore(change(seen, now), stored, seen);
      const write = this.#kv.atomic().check(entry)
        .set(this.#key, next, { expireIn: windowSpan(this.#config.limit) });
      for (const answer of answers) write.delete(answer.key);
      return (await write.commit()).ok;
    });
  }

  /** `write` until it commits, `most` times at most; a lock another process holds costs a moment's wait. */
  async #tries(most: number, write: () => Promise<boolean>): Promise<boolean> {
    for (let attempt = 1; attempt <= most; attempt++) {
      try {
        if (await answerWithin(write, KV_WAIT, KV_LATE)) return true;
      } catch (error) {
        // Anything but another process's write lock is a failing store.
        if (!/locked|busy/i.test(String(error))) throw error;
        await new Promise((done) => setTimeout(done, Math.min(attempt, 10)));
      }
    }
    return false;
  }
}
