// Internal: the fleet rate limiter on Deno KV. KV runs no script, so the
// fleet's window rests in one value that each take reads, decides on with
// the pure functions below (the same rules as the Redis script), and writes
// back only if nobody wrote it meanwhile (`kv.atomic().check()`). Answers go
// to keys of their own, which never collide, and the next take folds them
// in. KV has no clock of its own: the processes' clocks decide.

import type { EventListener } from "../core/events.ts";
import type { RateLimit, RateLimiter } from "../core/_rate_window.ts";
import { requireFunction } from "../core/_check.ts";
import {
  checkFleetLimit,
  FleetRateLimiter,
  type SharedWindow,
  type TakeReply,
} from "./_fleet_rate.ts";

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
export interface KvRateLimiterOptions {
  /**
   * Requests the whole fleet may send in any window, at most 1,000 (the
   * window rests in one KV value). Every process sharing the prefix must
   * give the same limit.
   *
   * @default {900}
   */
  requests?: number;
  /**
   * The window's length, in ms.
   *
   * @default {300000}
   */
  interval?: number;
  /**
   * The key the window rests under: processes with the same prefix share
   * one budget.
   *
   * @default {["partner-api", "rate"]}
   */
  prefix?: readonly (string | number)[];
  /**
   * The clock, in epoch ms. Processes on one database must agree on the
   * time (NTP does it).
   *
   * @default {Date.now}
   */
  now?: () => number;
  /** Receives `rate.degraded` when KV fails and the process paces alone. */
  onEvent?: EventListener;
}

const CONTEXT = "Cannot create KV rate limiter";
/** One KV value holds the window: 64 KiB at most. */
const MOST_REQUESTS = 1000;

/**
 * Creates a {@linkcode RateLimiter} that every process using the same KV
 * database and `prefix` shares, for `createClient({ rateLimit })`: never more
 * than `requests` sends in any window of `interval` ms across the fleet.
 *
 * - Each take reads the window and writes it back with an atomic check
 *   (a read, a list of the answers waiting, and one write, again when
 *   another process wrote first); a send counts from its answer (one write
 *   to a key of its own, folded in by the next take).
 * - Callers wait for their slot, never fail, and can give up with their
 *   signal; a process sleeps until the time its turn can come.
 * - Processes take turns in a line kept in the value: under contention
 *   each of `N` processes gets its share (at least `1 / (2N)`).
 * - When KV fails, the process paces itself alone at its last known share
 *   and emits `rate.degraded`.
 *
 * Deno only. `await using` it before closing the database: it waits for
 * the answers still being written.
 *
 * @param kv An open KV database, e.g. `await Deno.openKv()`.
 * @param options The limit, the prefix, the clock.
 * @returns The limiter, to pass as `rateLimit` to one or more clients.
 * @throws {RangeError} When `requests` or `interval` is out of range.
 * @throws {TypeError} Outside Deno.
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
  if (!("Deno" in globalThis) || typeof kv?.atomic !== "function") {
    throw new TypeError(
      `${CONTEXT}: Deno KV is needed (this limiter runs on Deno and Deno Deploy only); elsewhere use createRedisRateLimiter`,
    );
  }
  const limit = checkFleetLimit(options, CONTEXT, MOST_REQUESTS);
  const now = requireFunction(options.now, CONTEXT, "now") ?? Date.now;
  const holder = crypto.randomUUID().slice(0, 13);
  const prefix = [...(options.prefix ?? ["partner-api", "rate"])];
  return new FleetRateLimiter(new KvWindow(kv, prefix, limit, holder, now), {
    limit,
    holder,
    now,
    onEvent: requireFunction(options.onEvent, CONTEXT, "onEvent"),
  });
}

/** How long an unanswered send counts as taken at most (as on Redis). */
const HOLD = 60_000;
/** How long a process keeps its place in line after its turn came. */
const GRACE = 1000;
/** Writes lost to other processes before a take gives way for a moment. */
const MOST_ATTEMPTS = 8;
/** Answers folded into the window by one take, at most. */
const MOST_FOLDED = 500;
/**
 * An answer is not given up so soon: until it is written, its slot stays
 * taken for the whole hold.
 */
const MOST_ANSWER_ATTEMPTS = 100;

/** The fleet's window as one KV value. */
export interface WindowState {
  /** Sends, as `[name, ms it counts from]`, a send's name unique. */
  readonly sends: readonly (readonly [string, number])[];
  /** Processes waiting for a turn, in order, as `[holder, ms the place lapses]`. */
  readonly line: readonly (readonly [string, number])[];
  /** Processes seen, as `[holder, ms last seen]`. */
  readonly holders: readonly (readonly [string, number])[];
  /** No send before this (after a refusal). */
  readonly block: number;
}

const EMPTY: WindowState = { sends: [], line: [], holders: [], block: 0 };

/** The rules of a take, as the Redis script has them: pure, on `now`. */
export function takeTurn(
  state: WindowState,
  holder: string,
  wanted: readonly string[],
  now: number,
  limit: RateLimit,
): TakeReply & { state: WindowState } {
  const { requests, interval } = limit;
  const sends = state.sends.filter(([, from]) => from > now - interval);
  const holders = [
    ...state.holders.filter(([id, seen]) =>
      seen > now - interval && id !== holder
    ),
    [holder, now] as const,
  ];
  let line = state.line.filter(([, lapses]) => lapses >= now);
  const free = state.block > now ? 0 : requests - sends.length;
  const place = line.findIndex(([id]) => id === holder);
  const ahead = place < 0 ? line.length : place;
  // While others wait in line, one send per turn: turns are fair.
  const most = line.length > (place < 0 ? 0 : 1) ? 1 : wanted.length;
  const granted = Math.max(0, Math.min(most, free - ahead));
  for (const send of wanted.slice(0, granted)) sends.push([send, now + HOLD]);
  let wait = 0;
  if (granted === wanted.length) {
    line = line.filter(([id]) => id !== holder);
  } else {
    if (granted > 0 || place < 0) {
      line = [...line.filter(([id]) => id !== holder), [holder, Infinity]];
    }
    wait = turnWait(sends, line, holder, free - granted, now, state, interval);
    line = line.map((entry) =>
      entry[0] === holder ? [holder, now + wait + GRACE] as const : entry
    );
  }
  const next = { sends, line, holders, block: state.block };
  return { state: next, granted, wait, holders: holders.length };
}

/** How long until `holder`'s turn can come, in ms. */
function turnWait(
  sends: readonly (readonly [string, number])[],
  line: readonly (readonly [string, number])[],
  holder: string,
  free: number,
  now: number,
  state: WindowState,
  interval: number,
): number {
  if (state.block > now) return state.block - now;
  // The turn comes when the (index + 1)-th send leaves.
  const index = Math.max(0, line.findIndex(([id]) => id === holder) - free);
  const from = sends.map(([, from]) => from).sort((a, b) => a - b)[index] ??
    now + 1;
  // Unanswered: it leaves no sooner than an interval from now.
  return from > now ? interval : Math.max(1, from + interval - now);
}

/** Answers, as `[send, ms answered]`: each send counts from its answer. */
export function answerSends(
  state: WindowState,
  answers: readonly (readonly [string, number])[],
): WindowState {
  const answered = new Map(answers);
  return {
    ...state,
    sends: state.sends.map((entry) => {
      const at = answered.get(entry[0]) ?? Infinity;
      return at < entry[1] ? [entry[0], at] as const : entry;
    }),
  };
}

/** A refusal: a window with room is taken as full for one slot's share. */
export function refuseSends(
  state: WindowState,
  now: number,
  { requests, interval }: RateLimit,
): WindowState {
  const live = state.sends.filter(([, from]) => from > now - interval);
  if (live.length >= requests) return state;
  const block = Math.max(state.block, now + Math.ceil(interval / requests));
  return { ...state, block };
}

/** The fleet's window in one KV value, changed by atomic check-and-set. */
class KvWindow implements SharedWindow {
  readonly store = "kv";
  readonly #kv: Deno.Kv;
  /** The window's key. */
  readonly #key: Deno.KvKey;
  /** Where answers wait to be folded in, one key each. */
  readonly #answers: Deno.KvKey;
  readonly #limit: RateLimit;
  readonly #holder: string;
  readonly #now: () => number;

  constructor(
    kv: Deno.Kv,
    prefix: Deno.KvKey,
    limit: RateLimit,
    holder: string,
    now: () => number,
  ) {
    this.#kv = kv;
    this.#key = [...prefix, "window"];
    this.#answers = [...prefix, "answers"];
    this.#limit = limit;
    this.#holder = holder;
    this.#now = now;
  }

  async take(sends: readonly string[]): Promise<TakeReply> {
    let reply: TakeReply | undefined;
    const written = await this.#change((state, now) => {
      const { state: next, ...turn } = takeTurn(
        state,
        this.#holder,
        sends,
        now,
        this.#limit,
      );
      reply = turn;
      return next;
    });
    // Lost to others each time: ask again in a moment, nothing learned.
    return written ? reply! : { granted: 0, wait: 5, holders: 0 };
  }

  /** One write with no check: answers never wait for the window's lock. */
  async answer(sends: readonly string[]): Promise<void> {
    const now = this.#now();
    const expireIn = this.#limit.interval + HOLD + GRACE;
    for (let attempt = 1; attempt <= MOST_ANSWER_ATTEMPTS; attempt++) {
      const write = this.#kv.atomic();
      for (const send of sends) {
        write.set([...this.#answers, send], now, { expireIn });
      }
      try {
        await write.commit();
        return;
      } catch (error) {
        await this.#giveWay(error, attempt);
      }
    }
  }

  async refuse(): Promise<void> {
    await this.#change((state, now) => refuseSends(state, now, this.#limit));
  }

  /**
   * Reads the value and the answers waiting, changes the value, and writes
   * it back (the answers folded in deleted) if nobody else wrote it
   * meanwhile; tries again a few times, then gives way (`false`).
   */
  async #change(
    change: (state: WindowState, now: number) => WindowState,
  ): Promise<boolean> {
    const expireIn = this.#limit.interval + HOLD + GRACE;
    for (let attempt = 1; attempt <= MOST_ATTEMPTS; attempt++) {
      try {
        const entry = await this.#kv.get<WindowState>(this.#key);
        const answers = await Array.fromAsync(
          this.#kv.list<number>({ prefix: this.#answers }, {
            limit: MOST_FOLDED,
          }),
        );
        const folded = answerSends(
          readState(entry.value),
          answers.map((answer) => [String(answer.key.at(-1)), answer.value]),
        );
        const write = this.#kv.atomic().check(entry)
          .set(this.#key, change(folded, this.#now()), { expireIn });
        for (const answer of answers) write.delete(answer.key);
        if ((await write.commit()).ok) return true;
      } catch (error) {
        await this.#giveWay(error, attempt);
      }
    }
    return false;
  }

  /**
   * Another process holds the file's write lock (SQLite): contention, not
   * a failing store; wait a moment. Anything else is a failing store.
   */
  async #giveWay(error: unknown, attempt: number): Promise<void> {
    if (!/locked|busy/i.test(String(error))) throw error;
    await new Promise((done) => setTimeout(done, Math.min(attempt, 10)));
  }
}

/** The stored value, or an empty window when it is missing or not one. */
function readState(value: unknown): WindowState {
  const state = value as Partial<WindowState> | null;
  return Array.isArray(state?.sends) && Array.isArray(state.line) &&
      Array.isArray(state.holders) && typeof state.block === "number"
    ? state as WindowState
    : EMPTY;
}
