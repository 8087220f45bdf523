// Internal: the lines of callers waiting for a slot of a rate window, live first: a linked list makes leaving O(1), and
// callers sharing a signal share one listener, so N leaving cost O(N) in all.

import { MAX_TIMER_MS, requireSignal } from "./_check.ts";
import { checkPriority, PRIORITIES } from "./_rate_options.ts";

/** A caller waiting for a slot, a link of its line: handed its ticket, or rejected when it leaves. */
interface Waiter {
  readonly resolve: (ticket: number) => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  /** Pauses begun before it came: one more, and it waited for the window. */
  readonly pauses: number;
  waited?: boolean;
  previous?: Waiter | undefined;
  next?: Waiter | undefined;
}

/** A first-in first-out line whose members leave when their signal aborts. */
export class WaitQueue {
  #head: Waiter | undefined;
  #tail: Waiter | undefined;
  #size = 0;
  /** The callers queued on each signal, and the one listener that ends them. */
  readonly #watches = new Map<AbortSignal, [Set<Waiter>, () => void]>();
  readonly #onAbort: (waiter: Waiter, reason: unknown) => void;

  /** `onAbort` hears of each caller whose signal aborted, once it has left. */
  constructor(onAbort: (waiter: Waiter, reason: unknown) => void) {
    this.#onAbort = onAbort;
  }

  get size(): number {
    return this.#size;
  }

  /** Queues `waiter` at the end; it leaves by itself when its signal aborts. */
  push(waiter: Waiter): void {
    waiter.previous = this.#tail;
    if (this.#tail === undefined) this.#head = waiter;
    else this.#tail.next = waiter;
    this.#tail = waiter;
    this.#size++;
    if (waiter.signal !== undefined) this.#watch(waiter.signal).add(waiter);
  }

  shift(): Waiter | undefined {
    const waiter = this.#head;
    if (waiter === undefined) return undefined;
    this.#unlink(waiter);
    this.#unwatch(waiter);
    return waiter;
  }

  /** The callers queued on `signal`, watched by one listener. */
  #watch(signal: AbortSignal): Set<Waiter> {
    const known = this.#watches.get(signal);
    if (known !== undefined) return known[0];
    const nodes = new Set<Waiter>();
    const listener = () => {
      this.#watches.delete(signal);
      for (const node of nodes) this.#unlink(node);
      for (const node of nodes) this.#onAbort(node, signal.reason);
    };
    this.#watches.set(signal, [nodes, listener]);
    signal.addEventListener("abort", listener, { once: true });
    return nodes;
  }

  #unwatch(node: Waiter): void {
    const { signal } = node;
    const [nodes, listener] = (signal && this.#watches.get(signal)) ?? [];
    nodes?.delete(node);
    if (nodes?.size !== 0) return;
    this.#watches.delete(signal!);
    signal!.removeEventListener("abort", listener!);
  }

  #unlink(node: Waiter): void {
    if (node.previous === undefined) this.#head = node.next;
    else node.previous.next = node.next;
    if (node.next === undefined) this.#tail = node.previous;
    else node.next.previous = node.previous;
    node.previous = node.next = undefined;
    this.#size--;
  }
}

/** Each promise of a slot a limiter's `take` made, and its caller. */
const callers = new WeakMap<Promise<number>, Waiter>();

/** Whether the caller promised `slot` waited for the window (a store's round trip is no wait); another limiter's promise did. */
export function waited(slot: Promise<number>): boolean {
  return callers.get(slot)?.waited ?? true;
}

/** Whether `slot` is a promise of this library's line, which rejects once its caller's signal aborts (another limiter's may not). */
export function hearsSignal(slot: Promise<number>): boolean {
  return callers.has(slot);
}

/**
 * A `take`'s refusal of a `priority` Fetch does not know ("LOW" went ahead as live, past the reserve), or of a `signal`
 * that is no AbortSignal (once queued, it failed every caller after it); else none.
 */
export function takeRefusal(
  signal: unknown,
  priority: unknown,
): Promise<never> | undefined {
  try {
    if (!KNOWN.has(priority)) checkPriority(priority, undefined, TAKE);
    requireSignal(signal, TAKE);
  } catch (error) {
    return Promise.reject(error);
  }
  return undefined;
}

const TAKE = "Cannot take a slot";
/** The priorities a take may name (none: live), checked by one lookup on the hot path. */
const KNOWN = new Set<unknown>([undefined, ...PRIORITIES]);

/** workerd (Cloudflare's runtime): each waiting caller needs a timer of its own. */
const OWN_TIMERS =
  (globalThis as { navigator?: { userAgent?: unknown } }).navigator
    ?.userAgent === "Cloudflare-Workers";

/** Two lines of callers, each in order: live ones first, background ones while no live one waits. */
export class PriorityLines {
  readonly live: WaitQueue;
  readonly low: WaitQueue;
  /** Pauses for the window (a timer, or an answer awaited) counted twice, begun and ended: odd while one lasts. */
  #pauses = 0;
  /** The pause's timer, if it has one (set here only). */
  timer: ReturnType<typeof setTimeout> | undefined;
  /** When the pause's timer is due (on `now`), and what it wakes: a caller's own timer does it where that one died. */
  #pauseEnd = 0;
  #wake: (() => void) | undefined;
  /** Each waiting caller's own timer, to time again when a pause begins (workerd). */
  readonly #ownTimers = new Set<() => void>();

  /** The limiter's clock: a caller's own timer (workerd) goes by it. */
  readonly #now: () => number;

  /** `onAbort` hears of each caller whose signal aborted, once it has left `line`; `now` is the limiter's clock. */
  constructor(
    onAbort: (waiter: Waiter, reason: unknown, line: WaitQueue) => void,
    now: () => number,
  ) {
    this.#now = now;
    this.live = new WaitQueue((waiter, why) => onAbort(waiter, why, this.live));
    this.low = new WaitQueue((waiter, why) => onAbort(waiter, why, this.low));
  }

  get size(): number {
    return this.live.size + this.low.size;
  }

  /** The line a caller of `priority` joins. */
  of(priority: string | undefined): WaitQueue {
    return priority === "low" ? this.low : this.live;
  }

  /** The line served next: the live one while anybody waits in it. */
  get next(): WaitQueue {
    return this.live.size > 0 ? this.live : this.low;
  }

  /** Queues a caller in `line` (a pause under way counts: it waits for its end). */
  join(line: WaitQueue, signal?: AbortSignal): Promise<number> {
    const pauses = this.#pauses - (this.#pauses % 2);
    let waiter: Waiter;
    const slot = new Promise<number>((resolve, reject) => {
      const stop = OWN_TIMERS ? this.#ownTimer() : undefined;
      // Settling stops the caller's own timer (workerd).
      const end = <T>(settle: (value: T) => void) =>
        stop === undefined ? settle : (value: T) => (stop(), settle(value));
      waiter = { resolve: end(resolve), reject: end(reject), signal, pauses };
    });
    line.push(waiter!);
    callers.set(slot, waiter!);
    return slot;
  }

  /** Hands `ticket` to the first of `line`; `false`: nobody is there. */
  serve(line: WaitQueue, ticket: number): boolean {
    const waiter = line.shift();
    if (waiter !== undefined) waiter.waited = this.#pauses > waiter.pauses;
    waiter?.resolve(ticket);
    return waiter !== undefined;
  }

  /**
   * The limiter waits `wait` ms, then `wake`s (`Infinity`: for an answer, which wakes it): for the window, unless
   * `forWindow` is false (a store that lost a write: its callers wait for no slot).
   */
  pause(wait: number, wake: () => void, forWindow = true): void {
    if (forWindow && this.#pauses % 2 === 0) this.#pauses++;
    if (wait === Infinity) return;
    // Never past what a timer can wait: a longer delay fires at once.
    const delay = Math.min(wait, MAX_TIMER_MS);
    [this.#pauseEnd, this.#wake] = [this.#now() + delay, wake];
    this.timer = setTimeout(() => (this.resume(), wake()), delay);
    // Callers waiting already look again at this pause's end, not at their next poll.
    for (const arm of this.#ownTimers) arm();
  }

  /**
   * On workerd, a caller's own timer while it waits (its stop returned): the runtime cancels a request with nothing of
   * its own pending as hung, and the slot later handed to it was never answered, jamming the line for good. At the
   * pause's end it wakes the line itself: the pause's timer may be a request's that has ended.
   */
  #ownTimer(): () => void {
    let timer: ReturnType<typeof setTimeout>;
    const arm = () => {
      if (!this.#ownTimers.has(arm)) return; // served or gone, maybe by its own wake
      clearTimeout(timer);
      const paused = this.timer !== undefined;
      // No pause timed (an answer awaited): it looks again each second.
      const left = paused ? this.#pauseEnd - this.#now() : 1000;
      timer = setTimeout(() => {
        if (this.timer !== undefined && this.#now() >= this.#pauseEnd) {
          this.resume();
          this.#wake?.();
        }
        arm();
      }, Math.max(1, left));
    };
    this.#ownTimers.add(arm);
    arm();
    return () => {
      clearTimeout(timer);
      this.#ownTimers.delete(arm);
    };
  }

  /** Ends the pause: the limiter serves the line again. */
  resume(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.#pauses += this.#pauses % 2;
  }
}
