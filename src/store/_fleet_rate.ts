// A fleet rate limiter's part in each process: callers queue in order, one take asks the store (which decides
// atomically) for as many as wait. Its sends of the last window pace it alone when the store fails, and are written back.

import type { RateLimit, RateLimiter } from "../core/rate_limiter.ts";
import type { RatePriority } from "../core/_rate_options.ts";
import * as rateWindow from "../core/_rate_window.ts";
import * as rateLines from "../core/_rate_lines.ts";
import { emit } from "../core/_emit.ts";
import type { FleetConfig, SharedWindow } from "./_fleet_config.ts";
import {
  type Cause,
  countLoss,
  failureOf,
  type Losses,
  toSay,
} from "./_store_failure.ts";
import { Answers } from "./_answers.ts";
import { HOLD, type TakeReply, windowSpan } from "./_window_rules.ts";

/** What a take of a disposed limiter rejects with. */
const disposed = () =>
  new DOMException("The rate limiter was disposed", "AbortError");

/** The first pause after the store failed, doubled on each failure after. */
const FIRST_PAUSE = 500;
const LONGEST_PAUSE = 30_000;
/** Sends asked for in one take, at most. */
const MOST_PER_TAKE = 64;
/** Write-backs the store may ask for in a row (each at once after the last) before it counts as failing. */
const MOST_ASKS = 3;

/** A member's share of `requests` among `holders` (at least two: another may join while the store is down). */
const shareOf = (requests: number, holders: number) =>
  Math.max(1, Math.floor(requests / Math.max(2, holders)));

/** A {@linkcode RateLimiter} over a {@linkcode SharedWindow}; disposing waits for its writes to the store. */
export class FleetRateLimiter implements RateLimiter, AsyncDisposable {
  readonly limit: RateLimit;
  /** An unanswered send counts for HOLD at most: the fleet's rules drop it then. */
  readonly hold = HOLD;
  readonly #shared: SharedWindow;
  readonly #config: FleetConfig;
  /** This process's own sends: its pace alone, and what it writes back. */
  readonly #own: rateWindow.Window;
  readonly #lines = new rateLines.PriorityLines((waiter, reason, line) => {
    waiter.reject(reason);
    this.#liveLeft ||= line === this.#lines.live;
    // Once all the callers an abort ends have left (one signal, both lines); a promise job: no fake clock holds it.
    if (!this.#leaving) void Promise.resolve().then(() => this.#afterLeaving());
    this.#leaving = true;
  }, () => this.#config.now());
  /** The wait is the store's (a lost write, a window lost again), not the window's: its callers wait for no slot. */
  #storeWait = false;
  /** Callers left since the last look; a live one among them. */
  #leaving = false;
  #liveLeft = false;
  /** The store may hold a background place of its: a live take served in full keeps it, for the crawl waiting. */
  #backgroundPlace = false;
  /** Tickets whose send is in the store, unanswered. */
  readonly #inStore = new Set<number>();
  readonly #writes = new Set<Promise<void>>();
  /** Its answers on their way to the store. */
  readonly #answers: Answers;
  /** The line is being served (synchronously set and cleared). */
  #busy = false;
  #pumping: Promise<void> = Promise.resolve();
  #share: number;
  #aloneUntil = -Infinity;
  #failures = 0;
  /** The window's epoch as the store last said it. */
  #epoch = "";
  /** It sent alone since its last take: the store must hear of it first. */
  #returning = false;
  /** Between rate.degraded and rate.restored; the settings to mend it said meanwhile. */
  #degraded = false;
  readonly #settings = new Set<string>();
  /** Alone, the line paused for want of an answer (its share's latest send unanswered): the answer ends the pause. */
  #forAnswer = false;
  /** Back from pacing alone, it keeps to its share until then: another may pace alone still, unknown to the store. */
  #keepShareUntil = -Infinity;
  /** When a take last said another process was in the window (one that may pace alone when the store fails). */
  #othersSeenAt = -Infinity;
  /** When it last took from the store (-Infinity: never). */
  #lastTakeAt = -Infinity;
  /** Write-backs in a row that the store asked for again at once, and takes in a row it granted nothing, a ms away. */
  #reseeds = 0;
  #empties = 0;
  /** Windows lost in a run, no grant since (not counting write-backs back from alone). */
  #losses: Losses = { losses: 0, since: -Infinity };
  /** A fall for lost windows ends no sooner than this, an interval past the last loss or return from alone. */
  #lostUntil = -Infinity;
  #disposed = false;

  constructor(shared: SharedWindow, config: FleetConfig) {
    this.limit = config.limit;
    this.#shared = shared;
    this.#config = config;
    this.#own = rateWindow.emptyWindow(config.limit.requests);
    this.#answers = new Answers((sends) => shared.answer(sends), config.now);
    // Before the store says how many share it, a fleet has at least two members: never the whole limit.
    this.#share = shareOf(config.limit.requests, 0);
  }

  take(signal?: AbortSignal, priority?: RatePriority): Promise<number> {
    const refused = rateLines.takeRefusal(signal, priority);
    if (refused !== undefined) return refused;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#disposed) return Promise.reject(disposed());
    const { live, low } = this.#lines, line = this.#lines.of(priority);
    // The first live caller behind a background wait asks at once: that wait, and its empty takes, were not its.
    if (line === live && live.size === 0 && low.size > 0) {
      this.#lines.resume();
      this.#empties = 0;
    }
    const slot = this.#lines.join(line, signal);
    this.#wake();
    return slot;
  }

  answered(ticket: number): void {
    rateWindow.recordAnswer(this.#own, ticket, this.#config.now());
    if (this.#inStore.delete(ticket)) {
      const telling = this.#answers.add(`${this.#config.holder}:${ticket}`);
      if (telling) this.#write(telling);
    }
    // The pause's timer is only the store's next look: it kept a share of 1 to a send per look (up to 30 s).
    if (this.#forAnswer) this.#lines.resume();
    this.#wake();
  }

  refused(): void {
    const { requests, interval } = this.limit;
    const now = this.#config.now();
    this.#own.blockedUntil = Math.max(
      this.#own.blockedUntil,
      now + interval / requests,
    );
    rateWindow.capAtRefusal(this.#own, interval, now);
    this.#write(this.#shared.refuse());
  }

  /** Ends the callers waiting (and later ones) with an `AbortError`, then waits for the writes and the take under way. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#disposed = true;
    for (let waiter; (waiter = this.#lines.next.shift());) {
      waiter.reject(disposed()); // live callers first: `next` is the live line while anybody waits in it
    }
    this.#afterLeaving(); // clears the pause's timer, and leaves the fleet's line
    while (this.#writes.size > 0 || this.#busy) {
      await Promise.all([...this.#writes, this.#pumping]);
    }
  }

  /** Once callers left: a pause they waited for ends if nobody is left, or the live ones left the background ones. */
  #afterLeaving(): void {
    const { size, timer, live } = this.#lines, liveLeft = this.#liveLeft;
    this.#leaving = this.#liveLeft = false;
    if (timer === undefined || (size > 0 && (!liveLeft || live.size > 0))) {
      return;
    }
    this.#lines.resume();
    // Its place in the fleet's line may wait for who left: with background callers left, their take at once makes it
    // theirs; with nobody left, it goes at once (its lapse is the backstop).
    if (size > 0) this.#wake();
    else if (this.#config.now() >= this.#aloneUntil) this.#leave(); // else its store failed: the lapse will do
  }

  /** Starts handing out slots, unless that is under way or timed already. */
  #wake(): void {
    const { timer, size } = this.#lines;
    if (this.#busy || timer !== undefined || size === 0) return;
    this.#busy = true;
    this.#lines.resume();
    this.#pumping = this.#pump();
  }

  async #pump(): Promise<void> {
    // The flag drops in the step of the last look at the line: a caller queued after starts the next round.
    try {
      while (this.#lines.size > 0) {
        this.#storeWait = this.#forAnswer = false;
        const wait = this.#config.now() < this.#aloneUntil
          ? this.#takeAlone()
          : await this.#takeShared();
        // Infinity: alone, the send to leave first unanswered; answered() wakes the line.
        if (wait > 0 && this.#lines.size > 0) {
          return this.#lines.pause(wait, () => this.#wake(), !this.#storeWait);
        }
      }
    } finally {
      this.#busy = false;
    }
  }

  /** One slot from this process's share (less its part of the reserve, for background callers), or the wait. */
  #takeAlone(): number {
    const line = this.#lines.next;
    const { wait } = this.#room(line, this.#aloneUntil);
    if (wait === 0) {
      this.#returning = true;
      this.#lines.serve(line, rateWindow.recordSend(this.#own, Infinity));
    }
    return wait;
  }

  /** Kept to its share (alone, or back from it) until `until`: the wait for a slot, at most till then, and how many are free. */
  #room(line: rateLines.WaitQueue, until: number) {
    const now = this.#config.now();
    if (now >= until) return { wait: 0, free: Infinity };
    const { interval, requests } = this.limit;
    const reserve = line === this.#lines.low
      ? Math.ceil(this.#config.reserve * this.#share / requests)
      : 0;
    const share = Math.max(1, this.#share - reserve);
    const { wait, free } = rateWindow.shareRoom(
      this.#own,
      interval,
      now,
      share,
      this.#share - share,
    );
    this.#forAnswer = wait === Infinity;
    return { wait: wait && Math.min(wait, Math.max(1, until - now)), free };
  }

  /** Slots from the store for as many as wait of one priority (live first), or the wait. */
  async #takeShared(): Promise<number> {
    const line = this.#lines.next, low = line === this.#lines.low;
    const room = this.#room(line, this.#keepShareUntil);
    if (room.wait > 0) return room.wait;
    const most = Math.min(MOST_PER_TAKE, this.limit.requests, room.free);
    const count = Math.min(line.size, most);
    const { holder } = this.#config, first = this.#own.sent;
    const sends = Array.from(
      { length: count },
      (_, i) => `${holder}:${first + i}`,
    );
    const ask = { sends, epoch: this.#epoch, returning: this.#returning, low };
    let reply: TakeReply;
    try {
      await this.#answers.tellUnsaid();
      reply = await this.#shared.take(ask);
      if (reply.reseed) return await this.#reseed(reply.epoch);
    } catch (error) {
      return this.#goAlone(failureOf(error));
    }
    this.#taken(reply);
    if (reply.granted > 0) this.#losses = { losses: 0, since: -Infinity };
    // Nothing granted, each time a ms away, in a row: asks no more often than a slot comes (465 a second).
    const slot = this.limit.interval / this.limit.requests;
    const empty = reply.granted === 0 && reply.wait < slot;
    this.#empties = empty ? this.#empties + 1 : 0;
    this.#storeWait = reply.holders === 0; // a store that lost the write judged nothing
    for (let i = 0; i < reply.granted; i++) {
      // (Tickets follow `first`: only this loop records sends meanwhile.)
      const ticket = rateWindow.recordSend(this.#own, Infinity);
      this.#inStore.add(ticket);
      // A caller who left while the store answered: its slot is spent.
      if (!this.#lines.serve(line, ticket)) this.answered(ticket);
    }
    if (reply.granted < count) this.#backgroundPlace = low;
    else if (low) this.#backgroundPlace = false;
    // All it asked for left meanwhile: so does its place, or the other line's take (at once) makes it theirs. A
    // background place a live take kept goes too once its crawl left (it held other crawls 1.3 s on KV).
    const placed = reply.granted < count || this.#backgroundPlace;
    if (placed && this.#lines.size === 0) this.#leave();
    // A live caller came while background slots were asked for: at once.
    if ((low && this.#lines.live.size > 0) || line.size === 0) return 0;
    if (reply.granted === count) return 0;
    return Math.max(1, reply.wait, Math.min(slot, 2 ** (this.#empties - 1)));
  }

  /** What a take that granted (or named a wait) tells this process. */
  #taken(reply: TakeReply): void {
    this.#reseeds = 0;
    this.#epoch = reply.epoch;
    // While it keeps to its share, the store counts only the members back: those still alone are not among them.
    const now = this.#config.now(), keeping = now < this.#keepShareUntil;
    if (reply.holders > 0) {
      // Never the whole limit, even for a process alone in the last window.
      const share = shareOf(this.limit.requests, reply.holders);
      this.#share = keeping ? Math.min(this.#share, share) : share;
    }
    if (reply.holders > 1) this.#othersSeenAt = now;
    this.#lastTakeAt = now;
    this.#restored();
  }

  /** The store answered: the next failure pauses from the start, and a fall ends (one for lost windows once they hold). */
  #restored(): void {
    this.#failures = 0; // its pauses alone start afresh either way (else they grew to 30 s after a storm)
    if (!this.#degraded || this.#config.now() < this.#lostUntil) return;
    this.#lostUntil = -Infinity;
    this.#degraded = false;
    const { onEvent } = this.#config, { store } = this.#shared;
    if (onEvent) emit(onEvent, { type: "rate.restored", store });
  }

  /** The store lost the window (or this process paced alone): write back its sends, then take. */
  async #reseed(epoch: string): Promise<number> {
    const now = this.#config.now(), last = this.#lastTakeAt;
    const { holder } = this.#config, { times, sent, count } = this.#own;
    const sends: [string, number][] = [];
    for (let ticket = sent - count; ticket < sent; ticket++) {
      const time = times[ticket % times.length]!;
      // In flight (sent alone): written back held, so its answer is the store's to hear.
      if (time === Infinity) this.#inStore.add(ticket);
      const age = time === Infinity ? -1 : Math.max(0, now - time);
      if (age < this.limit.interval) sends.push([`${holder}:${ticket}`, age]);
    }
    // Took while the window it knew could still hold sends: what it knew may matter.
    const span = windowSpan(this.limit), recent = now - last < span;
    // A window back empty while this process had sends in it is a fall, as a failing store is; not its own write back
    // from alone. Losses in a row are one fall, which ends once the window held an interval.
    const lost = !this.#returning && (sends.length > 0 || recent);
    if (lost && (!this.#degraded || this.#lostUntil > -Infinity)) {
      this.#lostUntil = now + this.limit.interval;
    }
    // Asked again and again at once, or lost more often than ordinary losses come, none granted: a failing store.
    if (!this.#returning && (this.#reseeds >= MOST_ASKS || this.#lost(now))) {
      return this.#goAlone({ reason: "lost" });
    }
    if (lost) this.#degrade(now, { reason: "lost" });
    await this.#shared.reseed({ holder, epoch: this.#epoch, sends, recent });
    if (this.#returning) {
      // Alone, it saw no loss: the window holds an interval from now first (a pair every 2 s under FLUSHALL).
      if (this.#lostUntil > -Infinity) {
        this.#lostUntil = now + this.limit.interval;
      }
      // Another member its last takes saw (or one it kept to the share for at its last take) may pace alone still, or
      // have gone idle after: its sends count a window on. A process that never took knows of none, so keeps too.
      const others = last === -Infinity || last - this.#othersSeenAt < span ||
        last < this.#keepShareUntil;
      if (others) this.#keepShareUntil = now + span;
      if (this.#reseeds < MOST_ASKS) this.#restored(); // else once a take answers
    }
    this.#epoch = epoch;
    this.#returning = false;
    // Lost again at once (something keeps replacing it): back off; past the most, at once, to go alone.
    this.#storeWait = true;
    const asked = ++this.#reseeds;
    return asked === 1 || asked > MOST_ASKS ? 0 : 2 ** asked;
  }

  /** Counts a lost window: whether the store now counts as failing. */
  #lost(now: number): boolean {
    const { run, failing } = countLoss(this.#losses, now, this.limit.interval);
    this.#losses = run;
    return failing;
  }

  /** The store failed: pace alone at the last known share for a while (no wait: its callers go alone at once). */
  #goAlone(cause: Cause): 0 {
    const now = this.#config.now();
    const pause = Math.min(LONGEST_PAUSE, FIRST_PAUSE * 2 ** this.#failures++);
    this.#aloneUntil = now + pause;
    this.#degrade(now, cause);
    return 0;
  }

  /** Says once per fall that this process paces alone, and again for each setting to mend that shows. */
  #degrade(now: number, cause: Cause): void {
    const { onEvent } = this.#config;
    const { say, setting } = toSay(this.#degraded, this.#settings, cause);
    if (!say || this.#disposed) return; // disposed: its callers are gone, a take failed late
    if (!this.#degraded) this.#settings.clear();
    this.#degraded = true;
    if (setting !== undefined) this.#settings.add(setting);
    if (onEvent === undefined) return;
    emit(onEvent, {
      type: "rate.degraded",
      store: this.#shared.store,
      requests: this.#share,
      interval: this.limit.interval,
      retryAt: Math.ceil(Math.max(now, this.#aloneUntil)), // epoch ms: the steady clock reads fractions
      ...cause,
    });
  }

  /** Takes nothing, which takes it out of the fleet's line: one write, best effort. */
  #leave(): void {
    this.#backgroundPlace = false;
    this.#write(
      this.#shared.take({ sends: [], epoch: this.#epoch, returning: false }),
    );
  }

  /** Keeps a write to the store for disposal; its failure changes nothing. */
  #write(write: Promise<unknown>): void {
    const settled = write.then(() => {}, () => {});
    this.#writes.add(settled);
    settled.then(() => this.#writes.delete(settled));
  }
}
