// Internal: the sliding window's pure arithmetic, for every limiter, and the
// line of callers waiting for a slot: a linked list makes leaving O(1), and
// callers sharing a signal share one listener, so N leaving cost O(N) in all.

/** A ring of the latest `requests` times each counts from; `Infinity` until answered (it may count till then). */
export interface Window {
  readonly times: Float64Array;
  /** Index of the next time to write: the oldest once the ring is full. */
  head: number;
  count: number;
  /** Requests recorded so far: the next ticket. */
  sent: number;
  /** No slot before this (after a refusal). */
  blockedUntil: number;
}

/** An empty window for at most `requests` sends. */
export function emptyWindow(requests: number): Window {
  return {
    times: new Float64Array(requests),
    head: 0,
    count: 0,
    sent: 0,
    blockedUntil: -Infinity,
  };
}

/** ms from `now` until a slot is free for at most `share` sends a window (`Infinity`: awaiting an answer). */
export function slotWait(
  window: Window,
  interval: number,
  now: number,
  share: number = window.times.length,
): number {
  const { times, head, count } = window;
  // The send a new one replaces must have left the window (an answer awaited: it may count till then), whatever the share;
  // under a share, the share-th latest time too, which out-of-order answers may put anywhere.
  const replaced = count < times.length ? -Infinity : times[head]! + interval;
  const shared = count < share || share === times.length
    ? -Infinity
    : latest(window, share, now - interval) + interval;
  return Math.max(0, replaced - now, shared - now, window.blockedUntil - now);
}

/** The `nth` latest time after `since` (`-Infinity`: fewer); sorted only when there are that many. */
function latest(window: Window, nth: number, since: number): number {
  const { times, head, count } = window;
  const at = (i: number) => times[(head - i + times.length) % times.length]!;
  let recent = 0;
  for (let i = 1; i <= count && recent < nth; i++) if (at(i) > since) recent++;
  if (recent < nth) return -Infinity;
  const all: number[] = [];
  for (let i = 1; i <= count; i++) if (at(i) > since) all.push(at(i));
  return all.sort((a, b) => b - a)[nth - 1]!;
}

/** Records a request that counts from `time`; returns its ticket. */
export function recordSend(window: Window, time: number): number {
  window.times[window.head] = time;
  window.head = (window.head + 1) % window.times.length;
  window.count = Math.min(window.count + 1, window.times.length);
  return window.sent++;
}

/** The request of `ticket` was answered at `now`: it counts from then. */
export function recordAnswer(window: Window, ticket: number, now: number) {
  const { times } = window;
  // Only a ticket still in the ring: others are long out of the window.
  if (ticket >= window.sent - times.length && ticket < window.sent) {
    const index = ticket % times.length;
    if (times[index] === Infinity) times[index] = now;
  }
}

interface Node<T> {
  readonly item: T;
  readonly signal: AbortSignal | undefined;
  previous: Node<T> | undefined;
  next: Node<T> | undefined;
}

/** The callers queued on one signal, and the one listener that ends them. */
interface Watch<T> {
  readonly nodes: Set<Node<T>>;
  readonly listener: () => void;
}

/** A first-in first-out line whose members leave when their signal aborts. */
export class WaitQueue<T> {
  #head: Node<T> | undefined;
  #tail: Node<T> | undefined;
  #size = 0;
  readonly #watches = new Map<AbortSignal, Watch<T>>();
  readonly #onAbort: (item: T, reason: unknown) => void;

  /** `onAbort` hears of each item whose signal aborted, once it has left. */
  constructor(onAbort: (item: T, reason: unknown) => void) {
    this.#onAbort = onAbort;
  }

  /** How many wait. */
  get size(): number {
    return this.#size;
  }

  /** Queues `item` at the end; it leaves by itself when `signal` aborts. */
  push(item: T, signal: AbortSignal | undefined): void {
    const node: Node<T> = {
      item,
      signal,
      previous: this.#tail,
      next: undefined,
    };
    if (this.#tail === undefined) this.#head = node;
    else this.#tail.next = node;
    this.#tail = node;
    this.#size++;
    if (signal !== undefined) this.#watch(signal).nodes.add(node);
  }

  shift(): T | undefined {
    const node = this.#head;
    if (node === undefined) return undefined;
    this.#unlink(node);
    this.#unwatch(node);
    return node.item;
  }

  #watch(signal: AbortSignal): Watch<T> {
    let watch = this.#watches.get(signal);
    if (watch === undefined) {
      const nodes = new Set<Node<T>>();
      const listener = () => {
        this.#watches.delete(signal);
        for (const node of nodes) this.#unlink(node);
        for (const node of nodes) this.#onAbort(node.item, signal.reason);
      };
      watch = { nodes, listener };
      this.#watches.set(signal, watch);
      signal.addEventListener("abort", listener, { once: true });
    }
    return watch;
  }

  #unwatch(node: Node<T>): void {
    if (node.signal === undefined) return;
    const watch = this.#watches.get(node.signal);
    if (watch === undefined) return;
    watch.nodes.delete(node);
    if (watch.nodes.size === 0) {
      this.#watches.delete(node.signal);
      node.signal.removeEventListener("abort", watch.listener);
    }
  }

  #unlink(node: Node<T>): void {
    if (node.previous === undefined) this.#head = node.next;
    else node.previous.next = node.next;
    if (node.next === undefined) this.#tail = node.previous;
    else node.next.previous = node.previous;
    node.previous = node.next = undefined;
    this.#size--;
  }
}

/** A caller waiting for a slot: handed its ticket, or rejected when it leaves. */
export interface Waiter {
  readonly resolve: (ticket: number) => void;
  readonly reject: (reason: unknown) => void;
}

/** Two lines of callers, each in order: live ones first, background ones while no live one waits. */
export class PriorityLines<T = Waiter> {
  readonly live: WaitQueue<T>;
  readonly low: WaitQueue<T>;

  constructor(onAbort: (item: T, reason: unknown) => void) {
    this.live = new WaitQueue(onAbort);
    this.low = new WaitQueue(onAbort);
  }

  /** How many wait in both. */
  get size(): number {
    return this.live.size + this.low.size;
  }

  /** The line a caller of `priority` joins. */
  of(priority: string | undefined): WaitQueue<T> {
    return priority === "low" ? this.low : this.live;
  }

  /** The line served next: the live one while anybody waits in it. */
  get next(): WaitQueue<T> {
    return this.live.size > 0 ? this.live : this.low;
  }
}
