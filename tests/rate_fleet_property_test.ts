// The fleet rate limiter's property, over fleets of KV limiters on one real
// database (each limiter a process with its own clock) under fake time: the
// store misbehaves while they send. Moves: values that are not a window
// (poisoned keys), blocks and sends stamped years ahead (far blocks),
// members whose clocks are minutes off or step back a day (skewed
// members), and the window lost while they send (store restarts).
//
// Invariant: never more sends than the limit in any window by the server's
// clock (from a send's grant to its answer and an interval after, on the
// fake's own time), and no live caller waits past its deadline. Members
// send live or in the background (`priority: "low"`): no background send
// leaves fewer than the reserve free while a live caller waits (issue 47).
// A background caller may wait as long as live ones keep the window busy.

import { deepStrictEqual, ok } from "node:assert/strict";
import fc from "fast-check";
import { createKvRateLimiter } from "../src/store/kv.ts";
import { mostAtOnce } from "./_windows.ts";
import type { Clock } from "@sinonjs/fake-timers";
import type { RateLimiter } from "../src/client/rate_limit.ts";
import { withFakeTimers } from "./_helpers.ts";
import { drive, trackedIo } from "./_fast_setup.ts";
import { runs } from "./_property_runs.ts";

const MINUTE = 60_000;
/** How long an unanswered send may hold its slot (the limiters' hold). */
const HOLD = MINUTE;
const KEY = ["partner-api", "rate", "window"];

/** Something that happens to the store or a member's clock mid-run. */
type Move =
  | { kind: "poison"; value: unknown }
  | { kind: "far-block" }
  | { kind: "far-sends"; answered: 0 | 1 }
  | { kind: "restart" }
  | { kind: "step"; member: number; by: number };

const poisons = fc.constantFrom<unknown>(
  "not a window",
  42,
  null,
  { sends: "soon", line: [], holders: [], block: 0 },
  { sends: [[1, 2]], line: [["x", "soon"]], holders: [[null, 1]], block: NaN },
  [1, 2, 3],
);

const moves = fc.array(
  fc.record({
    at: fc.double({ min: 0, max: 1, noNaN: true }),
    move: fc.oneof(
      poisons.map((value): Move => ({ kind: "poison", value })),
      fc.constant<Move>({ kind: "far-block" }),
      fc.constantFrom<0 | 1>(0, 1).map((answered): Move => ({
        kind: "far-sends",
        answered,
      })),
      fc.constant<Move>({ kind: "restart" }),
      fc.record({
        member: fc.nat({ max: 5 }),
        // A clock stepped back between two of its readings by less than the
        // time between them cannot be told from no step at all (an injected
        // clock; the default reads the runtime's monotone one): a second
        // and more is always seen.
        by: fc.integer({ min: 1000, max: 25 * 60 * MINUTE }),
      }).map(({ member, by }): Move => ({ kind: "step", member, by })),
    ),
  }),
  { maxLength: 4 },
);

const fleets = fc.record({
  requests: fc.integer({ min: 1, max: 8 }),
  interval: fc.integer({ min: 100, max: 2000 }),
  // Each member's clock: minutes behind or ahead of the server's.
  skews: fc.array(fc.integer({ min: -10 * MINUTE, max: 10 * MINUTE }), {
    minLength: 2,
    maxLength: 5,
  }),
  latencies: fc.array(fc.integer({ min: 0, max: 60 }), {
    minLength: 1,
    maxLength: 8,
  }),
  // Which members send in the background.
  lows: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
  moves,
});

type Fleet = typeof fleets extends fc.Arbitrary<infer T> ? T : never;

/** The kinds of move the runs made: the few quick runs must reach each. */
const reached = new Set<Move["kind"]>();

/** Writes what `move` makes of the store, or of a member's clock. */
async function apply(
  kv: Deno.Kv,
  move: Move,
  now: number,
  offsets: number[],
): Promise<void> {
  reached.add(move.kind);
  const far = now + 300 * 365 * 24 * 60 * MINUTE;
  // What is planted goes into the window as it stands (a check-and-set):
  // writing back an older copy would be a rollback, another move.
  const plant = async (change: (value: Record<string, unknown>) => unknown) => {
    while (true) {
      const entry = await kv.get<Record<string, unknown>>(KEY);
      const value = entry.value ??
        { sends: [], line: [], holders: [], block: 0 };
      const write = kv.atomic().check(entry).set(KEY, change(value));
      if ((await write.commit()).ok) return;
    }
  };
  switch (move.kind) {
    case "poison":
      return void await kv.set(KEY, move.value);
    case "restart":
      return void await kv.delete(KEY);
    case "far-block":
      return await plant((value) => ({ ...value, block: far }));
    case "far-sends":
      return await plant((value) => ({
        ...value,
        sends: [
          ...(Array.isArray(value.sends) ? value.sends : []),
          ...Array.from(
            { length: 3 },
            (_, i) => [`planted:${i}`, far, move.answered, -1],
          ),
        ],
      }));
    case "step":
      offsets[move.member % offsets.length]! -= move.by;
  }
}

/** What a run shares between its members, the mover and the checks. */
interface Run {
  readonly timers: Clock;
  readonly end: number;
  /** How long a caller may wait for its slot. */
  readonly deadline: number;
  readonly latencies: readonly number[];
  /** [granted, answered] of every send, on the server's (the fake) clock. */
  readonly spans: [number, number][];
  /** When each caller that waited past its deadline gave up. */
  readonly late: number[];
  /** The members granted at least once. */
  readonly first: Set<number>;
  step: number;
  readonly requests: number;
  readonly interval: number;
  /** Slots a background send leaves free. */
  readonly reserve: number;
  /** Live callers waiting now, sends granted and not answered yet. */
  liveWaiting: number;
  inFlight: number;
  /** Background sends that left less than the reserve while a live caller waited. */
  readonly past: string[];
}

/** One member: a caller at a time, each holding its slot for a latency. */
async function member(
  run: Run,
  limiter: RateLimiter,
  m: number,
  low: boolean,
) {
  const { timers } = run;
  while (timers.now < run.end) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), run.deadline);
    if (!low) run.liveWaiting++;
    const ticket = await Promise.resolve(
      limiter.take(controller.signal, low ? "low" : "auto"),
    ).catch(() => {
      if (!low) run.late.push(timers.now);
      return undefined;
    });
    if (!low) run.liveWaiting--;
    clearTimeout(timer);
    if (ticket === undefined) return;
    const granted = timers.now;
    run.first.add(m);
    run.inFlight++;
    if (low && run.liveWaiting > 0) {
      const held = run.inFlight +
        run.spans.filter(([, to]) => to > granted - run.interval).length;
      if (held > run.requests - run.reserve) {
        run.past.push(`slot ${held} of ${run.requests} at ${granted}`);
      }
    }
    const latency = run.latencies[run.step++ % run.latencies.length]!;
    await new Promise((resolve) => setTimeout(resolve, latency));
    run.inFlight--;
    run.spans.push([granted, timers.now]);
    limiter.answered(ticket);
  }
}

/**
 * Makes the moves over the run, once every member has taken: a process
 * whose very first take comes after the store lost the window cannot know
 * what it held.
 */
async function mover(
  run: Run,
  kv: Deno.Kv,
  moves: Fleet["moves"],
  offsets: number[],
) {
  const { timers } = run;
  while (run.first.size < offsets.length && timers.now < run.end) {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const from = timers.now;
  for (const { at, move } of [...moves].sort((a, b) => a.at - b.at)) {
    const when = from + Math.floor(at * Math.max(0, run.end - from));
    await new Promise((resolve) => setTimeout(resolve, when - timers.now));
    await apply(kv, move, timers.now, offsets);
  }
}

/** Runs the fleet for a few windows; returns what the server saw and who waited too long. */
async function runFleet(fleet: Fleet) {
  const { requests, interval, skews, latencies, moves, lows } = fleet;
  using kv = await Deno.openKv(":memory:");
  return await withFakeTimers(async (timers) => {
    timers.setSystemTime(Date.UTC(2026, 10, 21, 10)); // clocks read epoch ms
    using db = trackedIo(kv, 1);
    const offsets = [...skews];
    const limiters = offsets.map((_, m) =>
      createKvRateLimiter(db.kv, {
        requests,
        interval,
        now: () => timers.now + offsets[m]!,
      })
    );
    const run: Run = {
      timers,
      end: timers.now + 6 * interval,
      // Its turn, a window lost and written back, sends planted unanswered
      // (counted for the hold), a far block cut to one slot's share.
      deadline: 3 * (interval + HOLD) + skews.length * interval,
      latencies,
      spans: [],
      late: [],
      first: new Set(),
      step: 0,
      requests,
      interval,
      reserve: Math.min(requests - 1, Math.max(1, Math.ceil(requests / 10))),
      liveWaiting: 0,
      inFlight: 0,
      past: [],
    };
    const members = limiters.map((limiter, m) =>
      member(run, limiter, m, lows[m]!)
    );
    const moving = mover(run, db.kv, moves, offsets);
    await drive(timers, Promise.all([...members, moving]), db.idle);
    for (const limiter of limiters) {
      await drive(timers, limiter[Symbol.asyncDispose](), db.idle);
    }
    return run;
  });
}

Deno.test("fleet rate property: poisoned keys, far blocks, members skewed by up to 10 minutes (or stepped back a day), store restarts, live and background members: never more sends than the limit in any window by the server's clock, no background send past the reserve while a live caller waits, no live caller past its deadline", async () => {
  await fc.assert(
    fc.asyncProperty(fleets, async (fleet) => {
      const { spans, late, deadline, past } = await runFleet(fleet);
      const most = mostAtOnce(spans, fleet.interval);
      ok(most <= fleet.requests, `${most} sends held slots in one window`);
      deepStrictEqual(past, [], "background sends past the reserve");
      ok(
        late.length === 0,
        `${late.length} callers waited past ${deadline} ms`,
      );
      ok(spans.length > 0, "the fleet sent");
    }),
    {
      numRuns: runs(8, 100),
      seed: 38,
      // One fleet that meets every kind of move, then the drawn ones.
      examples: [[{
        requests: 3,
        interval: 400,
        skews: [-10 * MINUTE, 0, 10 * MINUTE],
        latencies: [5, 30],
        lows: [true, false, false, true, false],
        moves: [
          { at: 0.1, move: { kind: "far-block" } },
          { at: 0.3, move: { kind: "poison", value: "not a window" } },
          { at: 0.5, move: { kind: "far-sends", answered: 0 } },
          { at: 0.7, move: { kind: "step", member: 1, by: 25 * 60 * MINUTE } },
          { at: 0.9, move: { kind: "restart" } },
        ],
      }]],
    },
  );
  deepStrictEqual(
    [...reached].sort(),
    ["far-block", "far-sends", "poison", "restart", "step"],
    "every kind of move was made",
  );
});
