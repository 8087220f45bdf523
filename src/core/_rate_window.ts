// Internal: the sliding window's pure arithmetic, for every limiter (the callers waiting for a slot: _rate_lines.ts).

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
  /**
   * After a refusal at `at`: the most sends that may count at once, as the service let through, and the cap before the
   * first of the refusals that came with it (`capAtRefusal`).
   */
  cap: {
    readonly most: number;
    readonly at: number;
    readonly base: number;
    /** The first 429 of the group `base` is for (those a slot apart or less from it). */
    readonly since: number;
  };
  /** The ring's answered times, ascending from `from` (a share's check reads one, not a sort of all). */
  readonly answered: number[];
  from: number;
  /** The ring's sends awaiting their answer (`Infinity`). */
  unanswered: number;
}

/** An empty window for at most `requests` sends. */
export function emptyWindow(requests: number): Window {
  return {
    times: new Float64Array(requests),
    head: 0,
    count: 0,
    sent: 0,
    blockedUntil: -Infinity,
    cap: noCap(requests),
    answered: [],
    from: 0,
    unanswered: 0,
  };
}

/** A window's cap before any refusal: its limit. */
function noCap(limit: number): Window["cap"] {
  return { most: limit, at: -Infinity, base: limit, since: -Infinity };
}

/**
 * ms from `now` until a slot is free for at most `share` sends a window (`Infinity`: awaiting an answer), `reserve` more
 * kept for others (background's: the live calls' reserve).
 */
export function slotWait(
  window: Window,
  interval: number,
  now: number,
  share: number = window.times.length,
  reserve = 0,
): number {
  // No cap: no answer to build (a take's hot path).
  if (window.cap.most === window.times.length) {
    return waitFor(window, interval, now, share, Infinity);
  }
  return capped(window, interval, now, share, reserve).wait;
}

/** When `cappedShare` of `share` comes to `target`, on the window's clock (its inverse). */
function capGivesBack(
  window: Window,
  interval: number,
  share: number,
  target: number,
): number {
  const limit = window.times.length, { most, at } = window.cap;
  // The cap `target` needs, and what it may then still keep back: floor(taken / 2^halvings) ≤ kept.
  const kept = limit - Math.ceil(target * limit / share);
  const halvings = Math.log2((limit - most) / (kept + 1));
  return Math.floor(at + interval * (1 + halvings)) + 1;
}

/**
 * `share` under the window's cap, and ms until a slot is free for it (a send leaving, or the cap giving one back). The
 * reserve is kept whole, up to half of both: lowered in proportion, six 429s left live calls 2 of 90 beside a crawl.
 */
function capped(
  window: Window,
  interval: number,
  now: number,
  share: number,
  reserve = 0,
) {
  const whole = cappedShare(window, interval, now, share + reserve);
  const part = reserve === 0
    ? whole
    : cappedShare(window, interval, now, share);
  const most = Math.min(part, whole - Math.min(reserve, Math.floor(whole / 2)));
  // The whole that gives one more: twice it less one, while the reserve takes half; else it plus the reserve.
  const next = most + 1 <= reserve ? 2 * most + 1 : most + 1 + reserve;
  const sooner = most < share
    ? Math.max(
      capGivesBack(window, interval, share + reserve, next),
      capGivesBack(window, interval, share, most + 1),
    )
    : Infinity;
  return { most, wait: waitFor(window, interval, now, most, sooner) };
}

/**
 * The service refused a send for its rate at `now` (a 429; others on the address use the rest). No more sends count at
 * once than did then or the cap in force allows, the refused one aside, nor fewer than half the cap before the first of
 * 429s a slot apart (they answer one moment: 10 in flight took 900 to 6; and one that had sent 1 would be held to 1,
 * waiting minutes). Each share is lowered in proportion; from an interval after the last 429, each interval without
 * another gives back half of what the cap took. Without it, a service stricter than the limit met a 429 a slot (200 of
 * 300 calls failed at 50 against 900); with it, a 429 a halving on the way down.
 */
export function capAtRefusal(window: Window, interval: number, now: number) {
  const limit = window.times.length, held = capAt(window, interval, now);
  // A slot from the group's first, not its last: 429s coming on less than a slot apart hold no cap at half for ever.
  const together = now - window.cap.since <= interval / limit;
  const [base, since] = together
    ? [window.cap.base, window.cap.since]
    : [held, now];
  const most = Math.min(held - 1, counting(window, interval, now) - 1);
  window.cap = {
    most: Math.max(most, Math.ceil(base / 2)),
    at: now,
    base,
    since,
  };
}

/**
 * The window's cap at `now`: its limit less what the last refusal took, halved each interval from one after it (in the
 * first, the sends that drew the 429 still fill the window), a send at a time (half at once drew a 429 each).
 */
function capAt(window: Window, interval: number, now: number): number {
  const limit = window.times.length, { most, at } = window.cap;
  const halvings = Math.max(0, (now - at) / interval - 1);
  return limit - Math.floor((limit - most) / 2 ** halvings);
}

/** `share` under the window's cap: lowered in proportion to the whole limit (a fleet member's share is a part of it). */
function cappedShare(
  window: Window,
  interval: number,
  now: number,
  share: number,
): number {
  const limit = window.times.length;
  if (window.cap.most === limit) return share; // no cap: the hot path
  const cap = capAt(window, interval, now);
  if (cap < limit) return Math.max(1, Math.floor(share * cap / limit));
  window.cap = noCap(limit); // given back whole: the hot path again
  return share;
}

/** Sends that count at `now`: awaiting their answer, or answered within the interval. */
function counting(window: Window, interval: number, now: number): number {
  const { answered } = window;
  let at = answered.length;
  while (at > window.from && answered[at - 1]! + interval > now) at--;
  return window.unanswered + answered.length - at;
}

/** ms until a slot is free for `share`, or at `sooner`, when the share grows (a cap giving a send back). */
function waitFor(
  window: Window,
  interval: number,
  now: number,
  share: number,
  sooner: number,
): number {
  const { times, head, count } = window;
  // The send a new one replaces must have left the window (an answer awaited: it may count till then), whatever the share;
  // under a share, the share-th latest time too, which out-of-order answers may put anywhere.
  const replaced = count < times.length ? -Infinity : times[head]! + interval;
  const shared = count < share || share === times.length
    ? -Infinity
    : Math.min(latest(window, share) + interval, sooner);
  return Math.max(0, replaced - now, shared - now, window.blockedUntil - now);
}

/** For a process keeping to `share`: ms until its next slot (`slotWait`), and how many are free now (0 while it waits). */
export function shareRoom(
  window: Window,
  interval: number,
  now: number,
  share: number,
  reserve = 0,
): { wait: number; free: number } {
  const { most, wait } = capped(window, interval, now, share, reserve);
  if (wait > 0) return { wait, free: 0 };
  const { times, head, count } = window;
  // A send past the ring's room replaces its oldest, in ticket order: only one that left the window (as slotWait asks).
  let ring = times.length - count;
  for (let i = 0; i < count; i++, ring++) {
    const time = times[(head - count + i + times.length) % times.length]!;
    if (time + interval > now) break;
  }
  const free = most - counting(window, interval, now);
  return { wait, free: Math.max(1, Math.min(free, ring)) }; // (1: as slotWait said)
}

/** The `nth` latest time the window counts from (`-Infinity`: fewer), unanswered sends first; answered ones are in order. */
function latest(window: Window, nth: number): number {
  const { answered, unanswered } = window;
  if (nth <= unanswered) return Infinity;
  const at = answered.length - (nth - unanswered);
  return at >= window.from ? answered[at]! : -Infinity;
}

/** Records a request that counts from `time`; returns its ticket. */
export function recordSend(window: Window, time: number): number {
  const { times, head } = window;
  if (window.count === times.length) drop(window, times[head]!);
  keep(window, time);
  times[head] = time;
  window.head = (head + 1) % times.length;
  window.count = Math.min(window.count + 1, times.length);
  return window.sent++;
}

/** The request of `ticket` was answered at `now`: it counts from then. */
export function recordAnswer(window: Window, ticket: number, now: number) {
  const { times } = window;
  // Only a ticket still in the ring: others are long out of the window.
  if (ticket < window.sent - times.length || ticket >= window.sent) return;
  const index = ticket % times.length;
  if (times[index] !== Infinity) return;
  times[index] = now;
  window.unanswered--;
  keep(window, now);
}

/** Counts `time` among the window's, in order (after a clock stepped back, from the latest kept: only longer). */
function keep(window: Window, time: number): void {
  const { answered } = window;
  if (time === Infinity) window.unanswered++;
  else answered.push(Math.max(time, answered.at(-1) ?? time));
}

/**
 * Forgets `time`, which a full ring lets go: out of the window, as is the earliest answered time, which goes instead (a
 * fleet's grant may let go of one still in it: then the earliest counts longer, which only waits longer).
 */
function drop(window: Window, time: number): void {
  if (time === Infinity) return void window.unanswered--;
  if (++window.from * 2 <= window.answered.length) return;
  window.answered.splice(0, window.from);
  window.from = 0;
}
