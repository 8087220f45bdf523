// The KV limiter's window as one process reads it. KV has no clock and members' clocks may be
// minutes apart, so a process trusts only its own stamps and dates the others' by when it saw them.

import type { RateLimit } from "../core/rate_limiter.ts";
import {
  GRACE,
  HOLD,
  type Place,
  type Send,
  slotShare,
  type WindowState,
} from "./_window_rules.ts";
import { isTime } from "../core/token_values.ts";
import { fieldsOf } from "../core/_check.ts";

/** The epoch of a window written by a version without epochs (0.3). */
const FIRST_EPOCH = "v1";
/** More entries than this in a list is not a window of ours (a 64 KiB value). */
const MOST_ENTRIES = 4096;

/** The stored value as a window, broken entries left out; `undefined`: not a window (one lost). */
export function readState(value: unknown): WindowState | undefined {
  const stored = fieldsOf(value) ?? {};
  const { sends, line, holders, block } = stored;
  if (
    !isList(sends) || !isList(line) || !isList(holders) || !isTime(block)
  ) return undefined;
  return {
    epoch: typeof stored.epoch === "string" ? stored.epoch : FIRST_EPOCH,
    sends: sends.filter(isNamed).map((send): Send => [
      send[0],
      send[1],
      // 0.3 wrote no answered flag: dated at sight as if answered.
      send[2] === 1 || send.length === 2 ? 1 : 0,
      isTime(send[3]) && send[3] >= 0 ? send[3] : -1,
    ]),
    line: line.filter(isNamed).map((place): Place => [
      place[0],
      place[1],
      isTime(place[2]) ? place[2] : 0,
      place[3] === 0 ? 0 : 1,
    ]),
    holders: holders.filter(isNamed).map(([holder, at]) => [holder, at]),
    block,
    shortUntil: isTime(stored.shortUntil) ? stored.shortUntil : 0,
    reseeded: isTime(stored.reseeded) && stored.reseeded > 0
      ? Math.floor(stored.reseeded)
      : 0,
  };
}

/** An answer waiting to be folded in: `[send, at, span]`; a number is 0.3's `at`. */
export function answerOf(
  key: Deno.KvKey,
  value: unknown,
): [string, number, number][] {
  const send = String(key.at(-1));
  if (isTime(value)) return [[send, value, -1]];
  if (!Array.isArray(value)) return [];
  const [at, span] = value;
  return isTime(at) && isTime(span) ? [[send, at, span]] : [];
}

/** An entry that starts with a name and a time. */
function isNamed(entry: unknown): entry is [string, number, ...unknown[]] {
  return Array.isArray(entry) && typeof entry[0] === "string" &&
    isTime(entry[1]);
}

function isList(value: unknown): value is unknown[] {
  return Array.isArray(value) && value.length <= MOST_ENTRIES;
}

/** When this process first saw a stamp of another member. */
interface Sighting {
  readonly stamp: number;
  readonly at: number;
}

/** One process's reading of the window: its own stamps as they are, the others' by when it first saw them. */
export class ClockView {
  readonly #own: string;
  /** Sends of others: when first seen, and first seen answered. */
  readonly #sends = new Map<
    string,
    { first: number; open: number | undefined; answered?: number }
  >();
  readonly #places = new Map<string, Sighting>();
  readonly #holders = new Map<string, Sighting>();
  /** The block and the short window, by kind. */
  readonly #stamps = new Map<string, Sighting>();

  constructor(holder: string) {
    this.#own = holder;
  }

  /** The window as this process's clock has it, at `now`. */
  see(state: WindowState, now: number, limit: RateLimit): WindowState {
    const mine = `${this.#own}:`;
    const seenAt = (holder: string, seen: number) =>
      holder === this.#own ? seen : sighting(this.#holders, holder, seen, now);
    const holders = state.holders.map(([holder, seen]) =>
      [holder, seenAt(holder, seen)] as const
    );
    forgetMissing(this.#holders, state.holders.map(([holder]) => holder));
    // Its own, on its own clock: a stamp past the hold is not its, and is dropped (kept, it would hold the fleet for
    // a minute). The others' are dated by sight, or by their member's latest take seen (an interval earlier at most).
    const sends = state.sends.flatMap((send): Send[] => {
      const [name, from, answered, span] = send;
      if (name.startsWith(mine)) return from > now + HOLD ? [] : [send];
      const seen = this.#sends.get(name) ??
        { first: now, open: answered === 1 ? undefined : now };
      this.#sends.set(name, seen);
      if (answered === 0) return [[name, seen.first + HOLD, 0, span]];
      seen.answered = Math.min(
        seen.answered ?? now,
        this.#beforeTake(name, from, limit),
      );
      // Seen written and unanswered at `open`: answered within its span of it.
      const within = seen.open !== undefined && span >= 0
        ? seen.open + span
        : Infinity;
      return [[name, Math.min(seen.answered, within), 1, span]];
    });
    forgetMissing(this.#sends, state.sends.map(([name]) => name));
    const longest = limit.interval + HOLD;
    const line = state.line.map((place): Place => {
      const [holder, lapses, span, live] = place;
      if (holder === this.#own) return place;
      const at = sighting(this.#places, holder, lapses, now);
      // A place lasts what its writer gave it, from when it was seen.
      const until = at + Math.min(span > 0 ? span : longest, longest);
      return [holder, until, span, live === 0 ? 0 : 1];
    });
    forgetMissing(this.#places, state.line.map(([holder]) => holder));
    const shortLasts = limit.interval + GRACE;
    return {
      ...state,
      sends,
      line,
      holders,
      block: this.#seeStamp("block", state.block, now, slotShare(limit)),
      shortUntil: this.#seeStamp("short", state.shortUntil, now, shortLasts),
    };
  }

  /** What to write after `next` was worked out on the view of `stored`: the others' stamps as they wrote them. */
  restore(next: WindowState, stored: WindowState, seen: WindowState) {
    const sends = new Map(stored.sends.map((send) => [send[0], send]));
    const places = new Map(stored.line.map((place) => [place[0], place]));
    const holders = new Map(stored.holders);
    const mine = `${this.#own}:`;
    return {
      ...next,
      sends: next.sends.map((send) =>
        send[0].startsWith(mine) ? send : sends.get(send[0]) ?? send
      ),
      line: next.line.map((place) =>
        place[0] === this.#own ? place : places.get(place[0]) ?? place
      ),
      holders: next.holders.map(([holder, at]) =>
        [holder, holder === this.#own ? at : holders.get(holder) ?? at] as const
      ),
      // Unchanged by the take: the block as stored while it lasts here.
      block: next.block !== seen.block
        ? next.block
        : seen.block > 0
        ? stored.block
        : 0,
      // A short window as stored while it lasts here; over here, it is over for everyone (seen after the loss). One
      // the change began is next's own (spread first): the others' stamps put back above stay as they wrote them.
      ...(next.shortUntil !== seen.shortUntil
        ? {}
        : seen.shortUntil > 0
        ? { shortUntil: stored.shortUntil }
        : { shortUntil: 0, reseeded: 0 }),
    };
  }

  /**
   * When another member's send answered at `answer` (its clock) was answered at the latest, on this clock: as long
   * before this process first saw that member's latest take as its clock says the answer came before that take (dated
   * by sight alone, a crawl that joined late got 1 or 2 sends a window beside 13). Never early: a steady clock never
   * counts more time than passed.
   */
  #beforeTake(name: string, answer: number, { interval }: RateLimit): number {
    const take = this.#holders.get(name.slice(0, name.lastIndexOf(":")));
    if (take === undefined) return Infinity;
    // Strictly before: a clock that stands still stamps later takes the same, and the first sight of that stamp may
    // come before the answer (38 sends of 20 at once).
    const before = take.stamp - answer;
    return before > 0 ? take.at - Math.min(before, interval) : Infinity;
  }

  /** A block or a short window lasts `lasts` from when it was first seen. */
  #seeStamp(kind: string, stamp: number, now: number, lasts: number): number {
    if (stamp <= 0) return (this.#stamps.delete(kind), 0);
    const until = sighting(this.#stamps, kind, stamp, now) + lasts;
    return until > now ? until : 0;
  }
}

/** When `holder`'s `stamp` was first seen (now, if it is new). */
function sighting(
  sightings: Map<string, Sighting>,
  holder: string,
  stamp: number,
  now: number,
): number {
  const last = sightings.get(holder);
  if (last?.stamp === stamp) return last.at;
  sightings.set(holder, { stamp, at: now });
  return now;
}

function forgetMissing(map: Map<string, unknown>, present: readonly string[]) {
  const kept = new Set(present);
  for (const key of map.keys()) if (!kept.has(key)) map.delete(key);
}
