// Internal: the clocks decisions read: a steady one for waits (a limiter that sent at 10:00 and then reads 09:00 must
// not wait an hour), and the system clock read once per synchronous turn.

/** The platform's monotone clock as epoch-like ms, where it has one: the `performance` in place at each read (sinon's). */
function monotoneEpoch(): (() => number) | undefined {
  const platform = globalThis as { performance?: Performance };
  if (!((platform.performance?.timeOrigin ?? 0) > 0)) return undefined;
  return () =>
    (platform.performance!.timeOrigin ?? 0) + platform.performance!.now();
}

/**
 * `now` (default `Date.now`) that never goes back: the system clock through the runtime's monotone clock when it has
 * one, so no step moves a wait; any other clock as it is, a step back taken as no time passing. `steps`: the steps back
 * it stopped so far (a span measured across one is not known).
 */
export function steadyClock(
  now?: () => number,
): (() => number) & { readonly steps: number } {
  const system = now === undefined || now === Date.now;
  const read = (system ? monotoneEpoch() : undefined) ?? now ?? Date.now;
  let last = -Infinity;
  let offset = 0;
  const steady = Object.assign(() => {
    const reading = read() + offset;
    if (reading < last) {
      offset += last - reading;
      steady.steps++;
      return last;
    }
    return last = reading;
  }, { steps: 0 });
  return steady;
}

/** Whether `steadyClock(now)` reads the platform's monotone clock: then every such clock of the process agrees. */
export function readsMonotoneClock(now: () => number): boolean {
  return now === Date.now && monotoneEpoch() !== undefined;
}

/** `read` (default `now`) read once a synchronous turn (a burst reads it once); with an injected `now`, as it is. */
export function turnClock(
  now: () => number,
  read: () => number = now,
): () => number {
  if (now !== Date.now) return read;
  let reading: number | undefined;
  return () => {
    if (reading === undefined) {
      reading = read();
      queueMicrotask(() => reading = undefined);
    }
    return reading;
  };
}

/** How long, on `steady`, each named thing (a lock) was seen unchanged: a stamp says nothing once a clock stepped. */
export function unchangedFor(
  steady: () => number,
): (name: string, state: string) => number {
  const sightings = new Map<string, { state: string; at: number }>();
  return (name, state) => {
    let sighting = sightings.get(name);
    if (sighting?.state !== state) {
      sighting = { state, at: steady() };
      sightings.set(name, sighting);
    }
    return steady() - sighting.at;
  };
}

/** A lock another process stamped: its owner and last refresh (on that process's wall clock). */
export interface LockSighting {
  readonly owner: string;
  readonly refreshedAt: number;
}

/**
 * Judges locks as a process can trust it: refreshed more than `after` ms ago by `now`, or seen unchanged that long on
 * this process's steady clock (a lock stamped ahead of `now`, as after a wall clock stepped back, holds no longer).
 */
export function staleJudge(
  now: () => number,
  after: number,
): (name: string, lock: LockSighting) => boolean {
  const unchanged = unchangedFor(steadyClock(now));
  return (name, { owner, refreshedAt }) =>
    now() - refreshedAt > after ||
    unchanged(name, `${owner} ${refreshedAt}`) > after;
}

/**
 * Wall times this process set itself (a cooldown's end, a renewal's stamp), read back on the steady clock: a wall clock
 * stepped back 1 h makes no 10 s cooldown last an hour (and the earlier of the two: a suspend lengthens none either).
 * A time it did not set (a token's expiry, another process's) reads as it is.
 */
export class LocalTimes {
  readonly #steady: () => number;
  /** Wall time set, and the steady reading it stands for. */
  readonly #marks = new Map<number, number>();

  constructor(now: () => number) {
    this.#steady = steadyClock(now);
  }

  /** Marks `wall`, set at `at` (a reading of `now`) as this process's own; returns it. */
  mark(wall: number, at: number): number {
    this.#marks.delete(wall);
    this.#marks.set(wall, this.#steady() + wall - at);
    // 16 kept: a provider sets a few at a time.
    if (this.#marks.size > 16) {
      this.#marks.delete(this.#marks.keys().next().value!);
    }
    return wall;
  }

  /**
   * `wall` as the wall clock reads it at `now`: moved by a step back since marked, never later than `wall` (a host
   * suspended for hours, which the monotone clock does not count on Linux, ends a 429's block at the service's reset,
   * not hours after it); a step forward ends a wait early, which costs one request at most.
   */
  read(wall: number | undefined, now: number): number | undefined {
    const steady = this.onSteady(wall, now);
    return steady === undefined ? undefined : Math.min(wall!, steady);
  }

  /** `wall` on the steady clock alone: how long ago a wait really ended (a failure's escalation), which no step lengthens. */
  onSteady(wall: number | undefined, now: number): number | undefined {
    const steady = wall === undefined ? undefined : this.#marks.get(wall);
    return steady === undefined ? wall : now + steady - this.#steady();
  }

  /** `value` with its time `key` read as {@linkcode LocalTimes.read} (or `onSteady`) does. */
  readIn<K extends string, T extends { readonly [key in K]: number }>(
    value: T | undefined,
    key: K,
    now: number,
    how: "read" | "onSteady" = "read",
  ): T | undefined {
    return value && { ...value, [key]: this[how](value[key], now) };
  }
}
