// The rules of the fleet's window, pure, on one clock: KV runs them, the Redis scripts are them in
// Lua. A store is never trusted past them: no block, wait or place outlasts an interval and the hold.

import type { RateLimit } from "../core/rate_limiter.ts";

/** How long an unanswered send counts as taken at most, in ms: past any request's time limit. */
export const HOLD = 60_000;
/** How long a process keeps its place in line after its turn came, in ms. */
export const GRACE = 1000;

/** How long what a window holds may matter: an interval, the hold, a moment. */
export function windowSpan({ interval }: RateLimit): number {
  return interval + HOLD + GRACE;
}

/**
 * A send: name (`<holder>:<ticket>`), ms it counts from, answered, and ms from writing to answer on
 * its owner's clock (-1: unknown), which a process on another clock can go by.
 */
export type Send = readonly [
  name: string,
  from: number,
  answered: 0 | 1,
  span: number,
];

/** A place in line: the holder, the ms it lapses, and for how long from its writing it was given. */
export type Place = readonly [
  holder: string,
  lapses: number,
  span: number,
  /** 0: it waits for background sends only; absent or 1: live ones. */
  live?: 0 | 1,
];

/** Whether a place waits for live sends (a place of 0.3 did). */
function isLive(place: Place): boolean {
  return place[3] !== 0;
}

/** The fleet's window, as one KV value holds it. */
export interface WindowState {
  /** Names this life of the window: a new one after the store lost it. */
  readonly epoch: string;
  /** Sends, a send's name unique. */
  readonly sends: readonly Send[];
  /** Processes waiting for a turn, in order. */
  readonly line: readonly Place[];
  /** Processes seen, as `[holder, ms last seen]`. */
  readonly holders: readonly (readonly [string, number])[];
  /** No send before this (after a refusal). */
  readonly block: number;
  /** Until when the window is short of what it lost (0: not): only sends written back count, so one not back keeps its slots. */
  readonly shortUntil: number;
  /** Sends written back while the window is short. */
  readonly reseeded: number;
}

export function emptyState(epoch: string): WindowState {
  return {
    epoch,
    sends: [],
    line: [],
    holders: [],
    block: 0,
    shortUntil: 0,
    reseeded: 0,
  };
}

/** What a process asks the store for. */
export interface TakeRequest {
  /** The sends wanted, in order; none: it waits no more, out of the line. */
  readonly sends: readonly string[];
  /** The epoch of the window it knows (`""`: none yet). */
  readonly epoch: string;
  /** It paced alone meanwhile: it writes back what it sent before it takes. */
  readonly returning: boolean;
  /** Background sends: only while no live one waits in the fleet, the reserve kept free. */
  readonly low?: boolean;
}

/** A take as the rules see it: who asks, and the reserve it keeps. */
export interface TakeAsk extends TakeRequest {
  readonly holder: string;
  /** Slots a background send leaves free in the window. */
  readonly reserve?: number;
  /** While others wait in line, no send before this ms (KV: a slot's share after the asker's last). */
  readonly spacedUntil?: number;
}

/** What the store answers to a take. */
export interface TakeReply {
  /** Sends granted: the first `granted` of those asked for. */
  readonly granted: number;
  /** ms until it is worth asking again for the rest. */
  readonly wait: number;
  /** Processes that took or waited in the last window, the asker included (0: unknown). */
  readonly holders: number;
  readonly epoch: string;
  /** The asker must write back its sends first: nothing was granted. */
  readonly reseed: boolean;
}

/** The rules of a take, as the Redis script has them: pure, on `now`. */
export function takeTurn(
  state: WindowState,
  ask: TakeAsk,
  now: number,
  limit: RateLimit,
) {
  const { interval } = limit;
  const { holder, sends: wanted } = ask;
  // A send dated past the hold was never written by a take: dropped.
  const sends = state.sends.filter(([, from]) =>
    from > now - interval && from <= now + HOLD
  );
  const holders = [
    ...state.holders.filter(([id, seen]) =>
      seen > now - interval && id !== holder
    ),
    [holder, now] as const,
  ];
  const line = state.line.filter(([, lapses]) => lapses >= now);
  const next = { ...state, sends, holders, line };
  // A member that knew another life of the window, or paced alone, writes back before anyone takes.
  const stranger = ask.epoch !== "" && ask.epoch !== state.epoch;
  if (ask.returning || stranger) return outcome(next, 0, 0, true);
  const low = ask.low === true;
  // Ahead of a live take stand live places only: no background crawl elsewhere holds it up.
  const order = low ? line : line.filter(isLive);
  // Sends the window may hold now: the limit, or while it is short, as many as were written back.
  const capacity = state.shortUntil > now
    ? Math.min(limit.requests, state.reseeded)
    : limit.requests;
  const room = state.block > now ? 0 : capacity - sends.length;
  // A background send leaves the reserve free, and waits while a live one waits anywhere (ms to each one's turn).
  const liveTurns = line.filter((p) => isLive(p) && p[0] !== holder)
    .map(([, lapses]) => lapses - GRACE - now);
  const free = !low ? room : liveTurns.length ? 0 : room - (ask.reserve ?? 0);
  const place = order.findIndex(([id]) => id === holder);
  const ahead = place < 0 ? order.length : place;
  // While others wait in line, one send per turn: turns are fair.
  const most = order.length > (place < 0 ? 0 : 1) ? 1 : wanted.length;
  // A spacing further ahead than a share was dated on another clock (a Redis failed over to one behind): none.
  const spacing = ask.spacedUntil ?? 0;
  const spacedUntil = order.some(([id]) => id !== holder) &&
      spacing <= now + slotShare(limit)
    ? spacing
    : 0;
  const granted = spacedUntil > now
    ? 0
    : Math.max(0, Math.min(most, wanted.length, free - ahead));
  for (const send of wanted.slice(0, granted)) {
    sends.push([send, now + HOLD, 0, -1]);
  }
  const around = { free, liveTurns, now, limit, spacedUntil };
  const { wait, line: after } = waitInLine(next, ask, granted, around);
  return outcome({ ...next, line: after }, granted, wait, false);
}

/** Where a take stands in line (out of it if granted all, at the end if some), and its wait. */
function waitInLine(
  state: WindowState,
  { holder, low, sends }: TakeAsk,
  granted: number,
  { free, liveTurns, now, limit, spacedUntil }: {
    free: number;
    liveTurns: number[];
    now: number;
    limit: RateLimit;
    spacedUntil: number;
  },
): { wait: number; line: readonly Place[] } {
  // Given some, or new in line, it goes to the end; else it keeps its place. Ahead of it: the places before.
  const at = state.line.findIndex(([id]) => id === holder);
  // A live take's own background place is no place among the live ones: it joins behind them.
  const placed = at >= 0 && (low || isLive(state.line[at]!));
  const moves = granted > 0 || !placed;
  const others = state.line.filter(([id]) => id !== holder);
  if (granted === sends.length) {
    // A live take served in full keeps its process's background place: its crawl still waits (else a live call each
    // 1.5 s sent the crawl to the end of the line each time).
    const crawlWaits = !low && granted > 0 && at >= 0 &&
      !isLive(state.line[at]!);
    return { wait: 0, line: crawlWaits ? state.line : others };
  }
  const before = moves ? others : state.line.slice(0, at);
  const wait = Math.max(turnWait(), spacedUntil - now);
  const place: Place = [holder, now + wait + GRACE, wait + GRACE, low ? 0 : 1];
  const line = moves
    ? [...others, place]
    : state.line.map((p) => p[0] === holder ? place : p);
  return { wait, line };

  /** How long until its turn can come, in ms: never past an interval and the hold. */
  function turnWait(): number {
    const { interval } = limit;
    // The live ones go first: a background take waits for the first one's turn (it asked again every slot's share:
    // about 1,000 store round trips a window for nothing), at least a share, at most a window.
    if (low && liveTurns.length > 0) {
      const liveTurn = Math.min(...liveTurns, interval + HOLD);
      return Math.max(1, slotShare(limit), liveTurn);
    }
    if (state.block > now) return state.block - now;
    // Slots free beyond those of the places ahead: its turn is now.
    const index = (low ? before : before.filter(isLive)).length -
      (free - granted);
    if (index < 0) return 1;
    // The turn comes when the (index + 1)-th send leaves.
    const from =
      state.sends.map(([, from]) => from).sort((a, b) => a - b)[index];
    if (from === undefined) {
      // Beyond what a short window holds: more may be written back soon.
      if (state.shortUntil <= now) return interval;
      const soon = Math.max(slotShare(limit), GRACE);
      return Math.max(1, Math.min(state.shortUntil - now, soon));
    }
    // Unanswered: it leaves no sooner than an interval from now.
    return from > now ? interval : Math.max(1, from + interval - now);
  }
}

/** The answer to a take, and the window after it. */
function outcome(
  state: WindowState,
  granted: number,
  wait: number,
  reseed: boolean,
) {
  const { holders, epoch } = state;
  return { state, granted, wait, holders: holders.length, epoch, reseed };
}

/** Answers as `[send, ms answered, ms from its writing (-1: unknown)]`: each counts from then. */
export function answerSends(
  state: WindowState,
  answers: readonly (readonly [string, number, number])[],
): WindowState {
  if (answers.length === 0) return state;
  const answered = new Map(answers.map(([send, ...answer]) => [send, answer]));
  return {
    ...state,
    sends: state.sends.map((send) => {
      const answer = answered.get(send[0]);
      if (answer === undefined || send[2] === 1) return send;
      return [send[0], answer[0], 1, answer[1]];
    }),
  };
}

/** A refusal: a window with room is taken as full for one slot's share. */
export function refuseSends(
  state: WindowState,
  now: number,
  limit: RateLimit,
): WindowState {
  const live = state.sends.filter(([, from]) => from > now - limit.interval);
  if (live.length >= limit.requests) return state;
  return { ...state, block: Math.max(state.block, now + slotShare(limit)) };
}

/** The longest block a refusal writes: one slot's share of the interval. */
export function slotShare({ requests, interval }: RateLimit): number {
  return Math.ceil(interval / requests);
}

/** What a member writes back after the store lost its window, or after pacing alone. */
export interface Reseed {
  readonly holder: string;
  /** The epoch it knew. */
  readonly epoch: string;
  /** Its sends of the last window, as `[name, ms since answered]`; -1: unanswered. */
  readonly sends: readonly (readonly [string, number])[];
  /** It took while the window it knew could still hold sends: they may be lost. */
  readonly recent: boolean;
}

/** Writes back a member's sends the window lacks; the first back from an older epoch makes it short. */
export function reseedSends(
  state: WindowState,
  reseed: Reseed,
  now: number,
  { interval }: RateLimit,
): WindowState {
  const known = new Set(state.sends.map(([name]) => name));
  const added: Send[] = [];
  for (const [name, age] of reseed.sends) {
    if (known.has(name) || age >= interval) continue;
    known.add(name);
    added.push(age < 0 ? [name, now + HOLD, 0, -1] : [name, now - age, 1, -1]);
  }
  const lost = reseed.epoch !== "" && reseed.epoch !== state.epoch;
  const shortUntil = lost && reseed.recent && state.shortUntil === 0
    ? now + interval + GRACE
    : state.shortUntil;
  return {
    ...state,
    sends: [...state.sends, ...added],
    shortUntil,
    reseeded: shortUntil > now ? state.reseeded + added.length : state.reseeded,
  };
}
