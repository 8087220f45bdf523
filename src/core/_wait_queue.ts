// Internal: callers waiting for their turn, first come first served. Any of
// them may leave when its signal aborts, from anywhere in the line: a linked
// list makes leaving O(1), and callers sharing one signal share one listener
// on it (an EventTarget removes listeners in linear time each), so that N
// callers giving up cost O(N) in all.

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

  /** The first in line, without taking it out. */
  peek(): T | undefined {
    return this.#head?.item;
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

  /** Takes the first in line out, or `undefined` when none waits. */
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
