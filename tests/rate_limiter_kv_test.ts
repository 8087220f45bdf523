// The fleet rate limiter on Deno KV: the take's rules directly (pure, on
// `now`), one invariant over simulated fleets (the window holds, every
// process gets its share), and limiters on one real KV database standing
// for processes.

import {
  deepStrictEqual,
  equal,
  ok,
  rejects,
  throws,
} from "node:assert/strict";
import fc from "fast-check";
import { createKvRateLimiter } from "../src/store/kv.ts";
import { createRedisRateLimiter } from "../src/store/redis.ts";
import {
  answerSends,
  emptyState,
  refuseSends,
  reseedSends,
  type TakeAsk,
  takeTurn as take,
  type WindowState,
} from "../src/store/_window_rules.ts";
import { ClockView } from "../src/store/_kv_view.ts";
import type { PartnerApiEvent } from "../src/core/events.ts";
import { checkFairFleet, crawlTogether, mostInAnyWindow } from "./_windows.ts";
import { withFakeTimers } from "./_helpers.ts";
import {
  clientOf,
  drive,
  inProcessFake,
  onFakeClock,
  realTurn,
  trackedIo,
} from "./_fast_setup.ts";
import { createRateLimiter } from "../src/client/rate_limit.ts";

const EMPTY: WindowState = emptyState("e");

/** A take by `holder` that knows the window's epoch. */
function takeTurn(
  state: WindowState,
  holder: string,
  wanted: readonly string[],
  now: number,
  limit: { requests: number; interval: number },
) {
  const ask: TakeAsk = { holder, sends: wanted, epoch: "e", returning: false };
  return take(state, ask, now, limit);
}
const LIMIT = { requests: 2, interval: 1000 };

Deno.test("takeTurn() grants while the window has room, then names the wait for the oldest send", () => {
  let turn = takeTurn(EMPTY, "a", ["a:0", "a:1", "a:2"], 0, LIMIT);
  equal(turn.granted, 2, "two free slots, nobody in line");
  equal(turn.wait, 1000, "both unanswered: no sooner than an interval");
  let state = answerSends(turn.state, [["a:0", 100, -1], ["a:1", 300, -1]]);
  turn = takeTurn(state, "a", ["a:2"], 400, LIMIT);
  deepStrictEqual([turn.granted, turn.wait], [0, 700], "until a:0 is 1 s old");
  state = turn.state;
  turn = takeTurn(state, "b", ["b:0"], 500, LIMIT);
  deepStrictEqual([turn.granted, turn.wait, turn.holders], [0, 800, 2]);
  turn = takeTurn(turn.state, "b", ["b:0"], 1100, LIMIT);
  equal(turn.granted, 0, "a is ahead in line: the freed slot is a's");
  turn = takeTurn(turn.state, "a", ["a:2"], 1100, LIMIT);
  equal(turn.granted, 1);
});

Deno.test("takeTurn() gives one send per turn while others wait, and drops a place that lapsed", () => {
  const one = { requests: 1, interval: 1000 };
  let turn = takeTurn(EMPTY, "b", ["b:0"], 0, one);
  turn = takeTurn(turn.state, "a", ["a:0", "a:1"], 10, one);
  equal(turn.granted, 0, "b's send holds the only slot");
  turn = takeTurn(turn.state, "c", ["c:0"], 20, one);
  deepStrictEqual(turn.state.line.map(([id]) => id), ["a", "c"]);
  const freed = answerSends(turn.state, [["b:0", 20, -1]]);
  turn = takeTurn(freed, "a", ["a:0", "a:1"], 1020, { ...one, requests: 3 });
  equal(turn.granted, 1, "c waits: one per turn");
  deepStrictEqual(turn.state.line.map(([id]) => id), ["c", "a"]);
  const lapsed = takeTurn(turn.state, "a", ["a:1"], 1020 + 5000, one);
  deepStrictEqual(
    lapsed.state.line.map(([id]) => id),
    ["a"],
    "c never came back: its place lapsed",
  );
});

Deno.test("takeTurn(): a background take while a live place waits elsewhere waits until that place's turn, not a slot's share (it asked the store again every share: about a thousand round trips a window)", () => {
  const limit = { requests: 10, interval: 3000 };
  const full = Array.from({ length: 10 }, (_, i) => `b:${i}`);
  let turn = takeTurn(EMPTY, "b", full, 0, limit); // in flight, unanswered
  turn = takeTurn(turn.state, "b", ["b:10"], 10, limit); // live, waits a window
  const liveTurn = 10 + turn.wait;
  const ask: TakeAsk = {
    holder: "a",
    sends: ["a:0"],
    epoch: "e",
    returning: false,
    low: true,
  };
  const background = take(turn.state, ask, 20, limit);
  equal(background.granted, 0);
  equal(20 + background.wait, liveTurn);
});

Deno.test("takeTurn() of no sends grants none and takes the asker out of the line, with room and others waiting too", () => {
  let turn = takeTurn(EMPTY, "b", ["b:0", "b:1"], 0, LIMIT);
  turn = takeTurn(turn.state, "a", ["a:0"], 10, LIMIT);
  turn = takeTurn(turn.state, "c", ["c:0"], 20, LIMIT);
  const freed = answerSends(turn.state, [["b:0", 20, -1], ["b:1", 20, -1]]);
  turn = takeTurn(freed, "c", [], 1100, LIMIT);
  deepStrictEqual(
    [turn.granted, turn.state.line.map(([id]) => id)],
    [0, ["a"]],
    "two slots free, a ahead: c asked for nothing, got nothing, and left",
  );
});

Deno.test("takeTurn() drops a send dated past the hold (never written by a take), and keeps one dated at it", () => {
  const hold = 60_000;
  const sends = Array.from(
    { length: 90 },
    (_, i) => [`ghost:${i}`, 3_600_000, 0, -1] as const,
  );
  const state: WindowState = {
    ...EMPTY,
    sends: [...sends, ["b:0", hold, 0, -1]],
  };
  const turn = takeTurn(state, "a", ["a:0", "a:1"], 0, {
    requests: 3,
    interval: 1000,
  });
  equal(turn.granted, 2, "the 90 entries an hour ahead hold no slot");
  deepStrictEqual(turn.state.sends.map(([name]) => name), [
    "b:0",
    "a:0",
    "a:1",
  ]);
});

Deno.test("refuseSends() blocks a window with room for one slot's share", () => {
  const state = refuseSends(EMPTY, 0, LIMIT);
  const turn = takeTurn(state, "a", ["a:0"], 100, LIMIT);
  deepStrictEqual([turn.granted, turn.wait], [0, 400]);
});

Deno.test("a KV member writes the others' stamps back as they wrote them, whatever its take or write-back changes", () => {
  // A member's view dates the others' entries by when it saw them (its clock may be minutes off theirs); what it
  // writes must keep their own stamps. A write-back that made the window short wrote its view's instead: another
  // member's send stamped 5,000,000 came back as 61,000, read on that member's clock as long gone.
  const limit = { requests: 20, interval: 60_000 };
  const stamp = fc.integer({ min: 0, max: 10_000_000 });
  const send = fc.tuple(
    fc.integer({ min: 0, max: 9 }).map((n) => `a:${n}`),
    stamp,
    fc.constantFrom<0 | 1>(0, 1),
    fc.integer({ min: -1, max: 5000 }),
  );
  const place = fc.tuple(
    fc.constantFrom("a", "c"),
    stamp,
    fc.integer({ min: 0, max: 5000 }),
    fc.constantFrom<0 | 1>(0, 1),
  );
  const stored = fc.record({
    epoch: fc.constant("e2"),
    sends: fc.uniqueArray(send, { selector: ([name]) => name, maxLength: 8 }),
    line: fc.uniqueArray(place, { selector: ([holder]) => holder }),
    holders: fc.uniqueArray(fc.tuple(fc.constantFrom("a", "c"), stamp), {
      selector: ([holder]) => holder,
    }),
    block: fc.constant(0),
    shortUntil: fc.oneof(fc.constant(0), stamp),
    reseeded: fc.integer({ min: 0, max: 5 }),
  });
  const change = fc.oneof(
    fc.record({ epoch: fc.constantFrom("e1", "e2"), recent: fc.boolean() }),
    fc.constant(undefined),
  );
  fc.assert(
    fc.property(stored, stamp, change, (state, now, reseed) => {
      const view = new ClockView("b");
      const seen = view.see(state as WindowState, now, limit);
      const next = reseed === undefined
        ? take(
          seen,
          { holder: "b", sends: ["b:0"], epoch: "e2", returning: false },
          now,
          limit,
        ).state
        : reseedSends(
          seen,
          { holder: "b", sends: [["b:1", 10]], ...reseed },
          now,
          limit,
        );
      const written = view.restore(next, state as WindowState, seen);
      const theirs = <E extends readonly [string, ...unknown[]]>(
        entries: readonly E[],
        own: (name: string) => boolean,
      ) => entries.filter(([name]) => !own(name));
      const isMine = (name: string) => name.startsWith("b:");
      for (const entry of theirs(written.sends, isMine)) {
        const before = state.sends.find(([name]) => name === entry[0]);
        if (before !== undefined) deepStrictEqual(entry, before);
      }
      for (const entry of theirs(written.line, (holder) => holder === "b")) {
        deepStrictEqual(entry, state.line.find(([h]) => h === entry[0]));
      }
      for (const entry of theirs(written.holders, (holder) => holder === "b")) {
        deepStrictEqual(entry, state.holders.find(([h]) => h === entry[0]));
      }
    }),
    { numRuns: 300, seed: 30 },
  );
});

Deno.test("simulated fleets: never more than the limit in any window, and each process at least 1/(2N) of the sends", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 6 }),
      fc.integer({ min: 1, max: 12 }),
      fc.integer({ min: 50, max: 1000 }),
      fc.array(fc.integer({ min: 0, max: 60 }), {
        minLength: 1,
        maxLength: 30,
      }),
      (processes, requests, interval, latencies) => {
        const limit = { requests, interval };
        const end = 20 * interval;
        let state = EMPTY;
        // Each process wants one send at a time, all the time: events are
        // [time, process, kind] with kind "ask" or the send to answer.
        const queue: [number, number, string][] = Array.from(
          { length: processes },
          (_, p) => [p, p, "ask"],
        );
        const spans: [number, number][] = [];
        const counts = Array<number>(processes).fill(0);
        let step = 0;
        while (queue.length > 0) {
          queue.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
          const [now, p, kind] = queue.shift()!;
          if (now > end) break;
          if (kind !== "ask") {
            state = answerSends(state, [[kind, now, -1]]);
            spans.at(Number(kind.split(":")[1]))![1] = now;
            queue.push([now, p, "ask"]);
            continue;
          }
          const send = `${p}:${spans.length}`;
          const turn = takeTurn(state, String(p), [send], now, limit);
          state = turn.state;
          if (turn.granted === 0) {
            queue.push([now + turn.wait, p, "ask"]);
            continue;
          }
          counts[p]!++;
          const answerAt = now + latencies[step++ % latencies.length]!;
          spans.push([now, answerAt]);
          queue.push([answerAt, p, send]);
        }
        checkFairFleet(spans, counts, limit);
      },
    ),
    { numRuns: 150, seed: 28 },
  );
});

Deno.test("3 clients with their own KV limiters on one database crawl the fake's limited list: no 429", async () => {
  const limit = { requests: 20, interval: 1000 };
  using kv = await Deno.openKv(":memory:");
  // Fake time: the database answers between the clock's steps.
  await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    // Fake time: each answer of the database takes 1 ms of it.
    using db = trackedIo(kv, 1);
    using api = inProcessFake({
      apiRateLimit: limit,
      items: { transactions: 900 },
      now,
    });
    const fleet = [0, 1, 2].map(() =>
      createKvRateLimiter(db.kv, { ...limit, now })
    );
    const statuses = await drive(
      timers,
      crawlTogether(api, fleet, now),
      db.idle,
    );
    equal(statuses.length, 30);
    equal(statuses.filter((status) => status === 429).length, 0);
    for (const limiter of fleet) {
      await drive(timers, limiter[Symbol.asyncDispose](), db.idle);
    }
  });
});

/** A KV limiter on `db` driven by `timers`, its events, and a `send` that takes a slot, notes when, and answers it. */
function sender(
  db: ReturnType<typeof trackedIo>,
  timers: Parameters<Parameters<typeof withFakeTimers>[0]>[0],
  limit: { requests: number; interval: number },
) {
  const events: PartnerApiEvent[] = [];
  const limiter = createKvRateLimiter(db.kv, {
    ...limit,
    now: () => timers.now,
    onEvent: (event) => events.push(event),
  });
  const run = <T>(work: T | PromiseLike<T>) => drive(timers, work, db.idle);
  /** When each slot was granted (and answered, at once). */
  const granted: number[] = [];
  const send = async () => {
    const ticket = await run(limiter.take());
    granted.push(timers.now);
    limiter.answered(ticket);
  };
  return { limiter, events, run, granted, send };
}

Deno.test("a KV caller gives up with its signal; a closed database means pacing alone, said once", async () => {
  const kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    using db = trackedIo(kv);
    const { limiter, events, run, granted, send } = sender(db, timers, {
      requests: 2,
      interval: 200,
    });
    await send();
    await send();
    const controller = new AbortController();
    const leaving = limiter.take(controller.signal) as Promise<number>;
    controller.abort(new Error("gave up"));
    await rejects(leaving, { message: "gave up" });
    await run(db.idle()); // its writes done (disposing would end its takes)
    kv.close();
    for (let i = 0; i < 3; i++) await send();
    equal(events.length, 1);
    equal(events[0]?.type, "rate.degraded");
    const most = mostInAnyWindow(granted, 200);
    equal(most, 2, "alone, still 2 per 200 ms");
    await run(limiter[Symbol.asyncDispose]());
  });
});

Deno.test("a KV member alone in the last window paces at half the limit once its database fails, never the whole: a member joining meanwhile paces at half too (alone at the whole, the two sent 30 in a window of 20: r71 F1)", async () => {
  const kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    using db = trackedIo(kv);
    const { limiter, events, run, granted, send } = sender(db, timers, {
      requests: 20,
      interval: 2000,
    });
    await send(); // the store says it is alone
    await run(db.idle());
    kv.close();
    await timers.tickAsync(2000); // its send left the window
    const alone = granted.length;
    for (let i = 0; i < 30; i++) await send();
    deepStrictEqual(events.map((event) => event.type), ["rate.degraded"]);
    equal((events[0] as { requests?: number }).requests, 10);
    equal(mostInAnyWindow(granted.slice(alone), 2000), 10);
    await run(limiter[Symbol.asyncDispose]());
  });
});

Deno.test("a KV member pacing alone at a share of 1 (a limit of 2, alone in the last window) sends one an interval after each answer, not one per look at its failing store, up to 30 s apart (r72 F2)", async () => {
  const kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    using db = trackedIo(kv);
    const limiter = createKvRateLimiter(db.kv, {
      requests: 2,
      interval: 1000,
      now: () => timers.now,
    });
    const run = <T>(work: T | PromiseLike<T>) => drive(timers, work, db.idle);
    limiter.answered(await run(limiter.take())); // the store says it is alone
    await run(db.idle());
    kv.close();
    await timers.tickAsync(2000);
    const start = timers.now;
    const granted: number[] = [];
    // Each take asked while the send before it is unanswered, answered 10 ms on.
    let previous = await run(limiter.take());
    while (timers.now - start < 30_000) {
      const next = limiter.take();
      await timers.tickAsync(10);
      limiter.answered(previous);
      previous = await run(next);
      granted.push(timers.now);
    }
    limiter.answered(previous);
    equal(mostInAnyWindow(granted, 1000), 1);
    ok(granted.length >= 25, `${granted.length} sends in 30 s`);
    await run(limiter[Symbol.asyncDispose]());
  });
});

/**
 * `kv` that fails every read and write while `down` is set (out of reach, its data kept), with `state.why`, or never
 * answers (`hangs`); each answers `slow` ms late.
 */
function outOfReach(kv: Deno.Kv) {
  const state = {
    down: false,
    why: "the database is out of reach",
    hangs: false,
    slow: 0,
  };
  const wrap = <T extends object>(target: T, calls: string[]): T => {
    const proxy: T = new Proxy(target, {
      get(object, key) {
        const value = Reflect.get(object, key, object);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (state.down && calls.includes(String(key))) {
            return state.hangs
              ? new Promise(() => {})
              : Promise.reject(new Error(state.why));
          }
          if (state.slow > 0 && calls.includes(String(key))) {
            return new Promise((late) => setTimeout(late, state.slow))
              .then(() => value.apply(object, args));
          }
          const result = value.apply(object, args);
          if (result === object) return proxy;
          return key === "atomic" ? wrap(result, ["commit"]) : result;
        };
      },
    });
    return proxy;
  };
  return { kv: wrap(kv, ["get", "getMany", "set", "delete"]), state };
}

/** A KV limiter over `kv` on the fake clock, and the types of the events it emits. */
function heardLimiter(
  kv: Deno.Kv,
  timers: { readonly now: number },
  requests: number,
  interval: number,
) {
  const events: string[] = [];
  const limiter = createKvRateLimiter(kv, {
    requests,
    interval,
    now: () => timers.now,
    onEvent: (event) => events.push(event.type),
  });
  return { limiter, events };
}

/** A KV limiter of 2 a second over `db` out of reach on demand, and the grants of its sends for `ms`, each answered at once. */
function limiterOutOfReach(
  db: ReturnType<typeof trackedIo>,
  timers: Parameters<Parameters<typeof withFakeTimers>[0]>[0],
) {
  const reach = outOfReach(db.kv);
  const limiter = createKvRateLimiter(reach.kv, {
    requests: 2,
    interval: 1000,
    now: () => timers.now,
  });
  const run = <T>(work: T | PromiseLike<T>) => drive(timers, work, db.idle);
  const grantsFor = async (ms: number) => {
    const start = timers.now;
    const granted: number[] = [];
    while (timers.now - start < ms) {
      limiter.answered(await run(limiter.take()));
      granted.push(timers.now);
    }
    return granted;
  };
  return { reach, limiter, run, grantsFor };
}

for (
  const [why, name] of [
    [
      "the database is out of reach",
      "answers a KV database could not take while out of reach are told before the next take once it is back: their slots free then, not a minute after their sends (the fleet sent nothing for 52 s after it came back: r74 F1)",
    ],
    [
      "database is locked",
      "answers a KV database refused as locked through every try (about 1 s) are told before the next take once it is free: their slots free then, not a minute after their sends (they were dropped, found in the size pass)",
    ],
  ]
) {
  Deno.test(name!, async () => {
    const kv = await Deno.openKv(":memory:");
    await withFakeTimers(async (timers) => {
      using db = trackedIo(kv);
      const { reach, limiter, run, grantsFor } = limiterOutOfReach(db, timers);
      const sent = [await run(limiter.take()), await run(limiter.take())];
      Object.assign(reach.state, { down: true, why });
      for (const ticket of sent) limiter.answered(ticket);
      await run(db.idle());
      await timers.tickAsync(1500);
      reach.state.down = false;
      await timers.tickAsync(1500);
      const granted = await grantsFor(10_000);
      ok(granted.length >= 15, `${granted.length} sends in 10 s`);
      equal(mostInAnyWindow(granted, 1000), 2);
      await run(limiter[Symbol.asyncDispose]());
    });
    kv.close();
  });
}

Deno.test("a KV database that stops answering holds no caller: past the store's time limit its member paces alone, and sends at the limit once it answers (a take waited for good)", async () => {
  const kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    using db = trackedIo(kv);
    const { reach, limiter, run, grantsFor } = limiterOutOfReach(db, timers);
    limiter.answered(await run(limiter.take()));
    Object.assign(reach.state, { down: true, hangs: true });
    const sent: number[] = [];
    for (let i = 0; i < 3; i++) {
      const take = Promise.resolve(limiter.take()).then((ticket) => {
        sent.push(timers.now);
        limiter.answered(ticket);
      });
      await timers.tickAsync(35_000);
      equal(sent.length, i + 1, "the take was granted, pacing alone");
      await take;
    }
    reach.state.down = false;
    await timers.tickAsync(31_000); // the longest pause before it asks again
    const granted = await grantsFor(5_000);
    equal(mostInAnyWindow(granted, 1000), 2);
    await run(limiter[Symbol.asyncDispose]());
  });
  kv.close();
});

Deno.test("a KV limiter disposed while its database hangs ends at the store's bound, and says nothing after: its callers are gone (rate.degraded came at the bound: r96 F3)", async () => {
  const kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    using db = trackedIo(kv);
    const reach = outOfReach(db.kv);
    const { limiter, events } = heardLimiter(reach.kv, timers, 2, 1000);
    limiter.answered(await drive(timers, limiter.take(), db.idle));
    await drive(timers, db.idle()); // the answer told
    Object.assign(reach.state, { down: true, hangs: true });
    const waiting = Promise.resolve(limiter.take()).catch((error) => error);
    await timers.tickAsync(10);
    const disposing = limiter[Symbol.asyncDispose]();
    equal((await waiting).name, "AbortError");
    await drive(timers, disposing, db.idle); // within the store's bound: no hang
    deepStrictEqual(events, []);
  });
  kv.close();
});

Deno.test("a KV database that answers slowly (2.5 s an operation) is no failing store: its members keep to the store's window, none paces alone (at a 2 s bound each went alone at half: twice the limit, r96 F1)", async () => {
  const kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    using db = trackedIo(kv);
    const reach = outOfReach(db.kv);
    const heard = [0, 1].map(() => heardLimiter(reach.kv, timers, 4, 20_000));
    const members = heard.map(({ limiter }) => limiter);
    reach.state.slow = 2500;
    const granted: number[] = [];
    const sends = members.flatMap((limiter) =>
      [0, 1, 2, 3].map(async () => {
        const ticket = await limiter.take();
        granted.push(timers.now);
        limiter.answered(ticket);
      })
    );
    await drive(timers, Promise.all(sends), db.idle);
    deepStrictEqual(heard.flatMap(({ events }) => events), []);
    equal(mostInAnyWindow(granted, 20_000), 4);
    for (const limiter of members) {
      await drive(timers, limiter[Symbol.asyncDispose](), db.idle);
    }
  });
  kv.close();
});

Deno.test("a send a KV member made alone, still unanswered when its database returns, is written back held, and its answer is told: the window has both slots again (it kept one for a minute: r76 F1)", async () => {
  const kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    using db = trackedIo(kv);
    const { reach, limiter, run, grantsFor } = limiterOutOfReach(db, timers);
    limiter.answered(await run(limiter.take()));
    await timers.tickAsync(1500);
    reach.state.down = true;
    const alone = await run(limiter.take()); // sent alone, in flight
    reach.state.down = false;
    await timers.tickAsync(1000); // back to the store: written back held
    limiter.answered(await run(limiter.take()));
    limiter.answered(alone);
    await run(db.idle());
    await timers.tickAsync(1500);
    const granted = await grantsFor(5_000);
    equal(mostInAnyWindow(granted, 1000), 2);
    await run(limiter[Symbol.asyncDispose]());
  });
  kv.close();
});

Deno.test("two KV members, both known to the database, through outages in a row: never more than the limit in any window, however their pauses drift apart (the first back took the slots the other's sends alone had used, unknown to the database: 30 in a window of 20, r79 F6)", async () => {
  // Each outage: the time before it and its length; the members' own pauses (doubled on each failure) set when each
  // finds the database back. (A member the database never heard of, or one that goes alone as the database comes
  // back beside members that never saw it fail, can add its share: docs/fleets.md says so.)
  const outage = fc.record({
    gap: fc.integer({ min: 100, max: 3000 }),
    length: fc.integer({ min: 100, max: 4000 }),
  });
  await fc.assert(
    fc.asyncProperty(
      fc.array(outage, { minLength: 1, maxLength: 5 }),
      fc.integer({ min: 1, max: 400 }),
      async (outages, answerAfter) => {
        const granted = await membersThrough(2, outages, answerAfter, 1500);
        const most = mostInAnyWindow(granted, 1000);
        ok(most <= 20, `${most} in a window of 20`);
      },
    ),
    { numRuns: 25, seed: 79 },
  );
});

/**
 * When each send of `n` KV members (20 a second, 5 busy callers each, each answered `answerAfter` ms on) was granted,
 * through `outages` in a row after `start` ms.
 */
async function membersThrough(
  n: number,
  outages: { gap: number; length: number }[],
  answerAfter: number,
  start = 0,
  onEvent?: (event: PartnerApiEvent, at: number) => void,
  {
    busy = [] as [number, number][][],
    takesAt = [] as [number, number][],
    after = 3000,
  } = {},
): Promise<number[]> {
  const kv = await Deno.openKv(":memory:");
  try {
    return await withFakeTimers(async (timers) => {
      using db = trackedIo(kv);
      const reach = outOfReach(db.kv);
      const now = () => timers.now;
      const limit = {
        requests: 20,
        interval: 1000,
        now,
        onEvent: (event: PartnerApiEvent) => onEvent?.(event, timers.now),
      };
      const members = Array.from(
        { length: n },
        () => createKvRateLimiter(reach.kv, limit),
      );
      let at = start;
      for (const { gap, length } of outages) {
        setTimeout(() => reach.state.down = true, at += gap);
        setTimeout(() => reach.state.down = false, at += length);
      }
      const end = at + after, granted: number[] = [];
      const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
      for (const [member, time] of takesAt) {
        setTimeout(async () => {
          const ticket = await members[member]!.take();
          granted.push(timers.now);
          members[member]!.answered(ticket);
        }, time);
      }
      // Each member's callers are busy in its spans (by default, all along).
      const caller = async (limiter: FleetLimiter, spans = [[0, end]]) => {
        for (const [from, to] of spans) {
          await sleep(from! - timers.now);
          while (timers.now < Math.min(to!, end)) {
            const ticket = await limiter.take();
            granted.push(timers.now);
            setTimeout(() => limiter.answered(ticket), answerAfter);
          }
        }
      };
      const callers = members.flatMap((limiter, i) =>
        Array.from({ length: 5 }, () => caller(limiter, busy[i]))
      );
      await drive(timers, Promise.all(callers), db.idle);
      const answered = new Promise((done) => setTimeout(done, answerAfter));
      await drive(timers, answered, db.idle);
      for (const limiter of members) {
        await drive(timers, limiter[Symbol.asyncDispose](), db.idle);
      }
      return granted;
    });
  } finally {
    kv.close();
  }
}

type FleetLimiter = ReturnType<typeof createKvRateLimiter>;

Deno.test("a KV member back from an outage keeps to its share for a window (here 2 min) and a minute, not a minute: another member that sent alone and then fell idle never tells the database of its sends (a share of 440 unknown: 1,340 in a window of 900, r83 F2)", async () => {
  const kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    using db = trackedIo(kv);
    const reach = outOfReach(db.kv);
    const limit = { requests: 20, interval: 120_000, now: () => timers.now };
    const a = createKvRateLimiter(reach.kv, limit);
    const b = createKvRateLimiter(reach.kv, limit);
    const run = <T>(work: T | PromiseLike<T>) => drive(timers, work, db.idle);
    const granted: number[] = [];
    const send = async (limiter: FleetLimiter) => {
      const ticket = await run(limiter.take());
      granted.push(timers.now);
      limiter.answered(ticket);
    };
    await send(b);
    await send(a); // the database knows both, and A that B is there
    reach.state.down = true;
    await timers.tickAsync(1000);
    for (let i = 0; i < 9; i++) await send(b); // alone, then idle
    await send(a); // alone too
    reach.state.down = false;
    while (timers.now < 400_000) await send(a);
    equal(mostInAnyWindow(granted, 120_000), 20);
    await run(a[Symbol.asyncDispose]());
    await run(b[Symbol.asyncDispose]());
  });
  kv.close();
});

Deno.test("two KV members back from an outage keep to their share whenever one may have seen the other: after an outage longer than a window and a minute (r84 F1), after idling into the outage (r86 F2), one that started during it, which knows of nobody (r86 F1), and one whose last take came during its keep (r88 F2): never 30 in a window of 20", async () => {
  type Case = NonNullable<Parameters<typeof membersThrough>[5]> & {
    outages: { gap: number; length: number }[];
    start?: number;
  };
  const cases: Case[] = [
    { outages: [{ gap: 1500, length: 90_000 }], start: 1500 },
    {
      outages: [{ gap: 30_000, length: 42_000 }],
      busy: [[[64_000, Infinity]]],
      takesAt: [[0, 1000]],
      after: 28_000,
    },
    {
      outages: [{ gap: 3000, length: 17_000 }],
      busy: [[[0, Infinity]], [[19_000, Infinity]]],
      after: 20_000,
    },
    {
      outages: [{ gap: 3000, length: 61_000 }, { gap: 2400, length: 123_600 }],
      busy: [[[0, 65_000], [130_000, Infinity]], [[0, 1500], [5000, Infinity]]],
      after: 50_000,
    },
  ];
  for (const { outages, start = 0, ...members } of cases) {
    for (const answerAfter of [50, 130]) {
      const granted = await membersThrough(
        2,
        outages,
        answerAfter,
        start,
        undefined,
        members,
      );
      equal(
        mostInAnyWindow(granted, 1000),
        20,
        `${JSON.stringify(outages)}, answers after ${answerAfter} ms`,
      );
    }
  }
});

Deno.test("three KV members back from outages in a row keep to the share they paced alone at, not the larger one the database gives while the others are still away (two at 10 beside one alone at 6 made 26 in a window of 20: r83 F1)", async () => {
  const outages = [{ gap: 5506, length: 3914 }, { gap: 422, length: 294 }];
  const granted = await membersThrough(3, outages, 19);
  equal(mostInAnyWindow(granted, 1000), 20);
});

Deno.test("a KV member alone in the database's last window, back from an outage: rate.restored as it writes back (its next pause then the first again), and the whole limit again, not half of it for a minute (r83 F3, F4)", async () => {
  const events: [string, number][] = [];
  const outages = [{ gap: 1100, length: 1400 }]; // its take at 2038 fails, the one at 2538 finds it back
  const granted = await membersThrough(1, outages, 19, 0, (event, at) => {
    events.push([event.type, at]);
  });
  deepStrictEqual(events.map(([type]) => type), [
    "rate.degraded",
    "rate.restored",
  ]);
  ok(
    events[1]![1] < 2600,
    `restored at ${events[1]![1]}, not at its write-back`,
  );
  equal(mostInAnyWindow(granted.filter((time) => time >= 3100), 1000), 20);
});

Deno.test("createKvRateLimiter() refuses bad options by name, and a value that is not a window is read as empty", async () => {
  using kv = await Deno.openKv(":memory:");
  throws(() => createKvRateLimiter(kv, { requests: 1001 }), {
    name: "RangeError",
    option: "requests",
  });
  throws(() => createKvRateLimiter(kv, { interval: 0.5 }), {
    name: "RangeError",
    option: "interval",
  });
  throws(() => createKvRateLimiter({} as Deno.Kv), { name: "TypeError" });
  await kv.set(["partner-api", "rate", "window"], "not a window");
  await using limiter = createKvRateLimiter(kv, { requests: 1000 });
  const tickets = await Promise.all(
    Array.from({ length: 1000 }, () => limiter.take()),
  );
  for (const ticket of tickets) limiter.answered(ticket);
  equal(limiter.limit.interval, 300_000);
});

Deno.test("under contention each of 4 KV limiters gets at least 1/(2N) of the sends", async () => {
  using kv = await Deno.openKv(":memory:");
  const limit = { requests: 8, interval: 200 };
  await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    // Each answer of the database takes 1 ms: processes overlap as they do.
    using db = trackedIo(kv, 1);
    const fleet = [0, 1, 2, 3].map(() =>
      createKvRateLimiter(db.kv, { ...limit, now })
    );
    const counts = fleet.map(() => 0);
    const until = now() + 1500;
    // The first limiter has 6 callers pushing, the others 1 each.
    const pushing = Promise.all(
      fleet.flatMap((limiter, i) =>
        Array.from({ length: i === 0 ? 6 : 1 }, async () => {
          while (now() < until) {
            const ticket = await limiter.take();
            // Callers still queued at the end go after the others stopped.
            if (now() < until) counts[i]!++;
            limiter.answered(ticket);
          }
        })
      ),
    );
    await drive(timers, pushing, db.idle);
    const total = counts.reduce((a, b) => a + b);
    console.log(`KV shares of ${total} sends: ${counts.join(", ")}`);
    for (const count of counts) {
      ok(count >= total / (2 * fleet.length), `${counts} of ${total}`);
    }
    for (const limiter of fleet) {
      await drive(timers, limiter[Symbol.asyncDispose](), db.idle);
    }
  });
});

Deno.test("rate.wait only for a call that waited for the window: none on free slots (a store's round trip is no wait), one for each call that waited; KV and in-process limiters alike", async () => {
  using kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    // Each answer of the database takes 1 ms of fake time.
    using db = trackedIo(kv, 1);
    using api = inProcessFake({ now });
    const limit = { requests: 5, interval: 1000 };
    const fleet = createKvRateLimiter(db.kv, { ...limit, now });
    const limiters = [fleet, createRateLimiter({ ...limit, now })];
    for (const rateLimit of limiters) {
      let waits = 0;
      const client = clientOf(api, {
        rateLimit,
        now,
        onEvent: (event) => void (event.type === "rate.wait" && waits++),
      });
      const calls = (n: number) =>
        drive(
          timers,
          Promise.all(Array.from({ length: n }, async () => {
            await (await client.fetch("organizations")).body?.cancel();
          })),
          db.idle,
        );
      await calls(3);
      await calls(1);
      await calls(1);
      equal(waits, 0, "5 calls on free slots");
      await calls(3);
      equal(waits, 3, "3 calls behind a full window");
    }
    await drive(timers, fleet[Symbol.asyncDispose](), db.idle);
  });
});

Deno.test("a live KV caller that gives up while it waits takes its place out of the fleet's line at once: a background send elsewhere goes when the window frees, not a grace later when the place would lapse", async () => {
  using kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    using db = trackedIo(kv, 1);
    const options = { requests: 2, interval: 1000, reserve: 0, now };
    const [a, b] = [0, 1].map(() => createKvRateLimiter(db.kv, options));
    const run = <T>(work: T | PromiseLike<T>) => drive(timers, work, db.idle);
    const full = await run(Promise.all([a!.take(), a!.take()]));
    for (const ticket of full) a!.answered(ticket);
    // The window is full: a live caller of a waits, in the fleet's line.
    const leaving = new AbortController();
    const live = Promise.resolve(a!.take(leaving.signal, "high"));
    await run(onFakeClock(timers, 100));
    leaving.abort();
    await rejects(live, { name: "AbortError" });
    let sent = 0;
    const background = Promise.resolve(b!.take(undefined, "low")).then(
      (ticket) => {
        sent++;
        b!.answered(ticket);
      },
    );
    // The window frees an interval after b first saw the answers; the place would lapse a grace (1 s) after that.
    await run(onFakeClock(timers, options.interval + 500));
    equal(sent, 1, "the background send went once the window freed");
    await run(background);
    for (const limiter of [a!, b!]) {
      await run(limiter[Symbol.asyncDispose]());
    }
  });
});

/** `kv` whose next `lost.count` check-and-set commits fail as if another process wrote first; `lost.takes` counts commits. */
function losingKv(kv: Deno.Kv) {
  const lost = { count: 0, commits: 0 };
  const atomic = (operation: Deno.AtomicOperation): Deno.AtomicOperation => {
    const proxy: Deno.AtomicOperation = new Proxy(operation, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (key === "commit") {
          return () =>
            (lost.commits++, lost.count-- > 0)
              ? Promise.resolve({ ok: false })
              : value.apply(target);
        }
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const result = value.apply(target, args);
          return result === target ? proxy : result;
        };
      },
    });
    return proxy;
  };
  const losing = new Proxy(kv, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (key === "atomic") return () => atomic(target.atomic());
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: losing, lost };
}

Deno.test("rate.wait on KV only for a wait for the window: not for a live call served at once beside its process's waiting background callers, nor for a store that lost its writes; and a background caller that gives up costs no store write", async () => {
  using kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    using db = trackedIo(kv, 1);
    const { kv: store, lost } = losingKv(db.kv);
    using api = inProcessFake({ now });
    const rateLimit = createKvRateLimiter(store, {
      requests: 5,
      interval: 1000,
      reserve: 2,
      now,
    });
    const run = <T>(work: T | PromiseLike<T>) => drive(timers, work, db.idle);
    const waits: string[] = [];
    const client = clientOf(api, {
      rateLimit,
      now,
      onEvent: (event) => {
        if (event.type === "rate.wait") waits.push(event.priority);
      },
    });
    const call = () =>
      run((async () => {
        await (await client.fetch("organizations")).body?.cancel();
      })());
    // The background share (3) is spent: 2 more background callers wait for the window, each with its own signal.
    const spent = await run(
      Promise.all([0, 1, 2].map(() => rateLimit.take(undefined, "low"))),
    );
    for (const ticket of spent) rateLimit.answered(ticket);
    const leaving = new AbortController();
    const staying = Promise.resolve(rateLimit.take(undefined, "low"));
    const gone = Promise.resolve(rateLimit.take(leaving.signal, "low"));
    await run(onFakeClock(timers, 100));
    await call();
    deepStrictEqual(
      waits,
      [],
      "a live call on a reserved slot waited for nothing",
    );
    await run(onFakeClock(timers, 10)); // the live call's answer told
    const commits = lost.commits;
    leaving.abort();
    await rejects(gone, { name: "AbortError" });
    await run(onFakeClock(timers, 10));
    equal(lost.commits, commits, "a background caller left: no write");
    // The store loses every write of one take (8 tries), then answers: the live call waited for the store only.
    lost.count = 8;
    await call();
    deepStrictEqual(waits, [], "a lost write is no wait for the window");
    rateLimit.answered(await run(staying));
    await run(rateLimit[Symbol.asyncDispose]());
  });
});

Deno.test("a live caller that gives up while its limiter paces alone (its store failing) sends the failing store nothing: no leave for disposal to wait on", async () => {
  await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    let commands = 0;
    const limiter = createRedisRateLimiter({
      command:
        () => (commands++, Promise.reject(new Error("connection refused"))),
      requests: 2, // alone: half the limit, 1
      interval: 1000,
      now,
    });
    using io = trackedIo(); // the script's digest: real crypto.subtle
    const run = <T>(work: T | PromiseLike<T>) => drive(timers, work, io.idle);
    limiter.answered(await run(limiter.take()));
    const leaving = new AbortController();
    const live = Promise.resolve(limiter.take(leaving.signal));
    await run(onFakeClock(timers, 10));
    const before = commands;
    leaving.abort();
    await rejects(live, { name: "AbortError" });
    await run(limiter[Symbol.asyncDispose]());
    equal(commands, before, "no command after the caller left");
  });
});

Deno.test("disposing a fleet limiter ends its waiting callers and their timer with an AbortError, and refuses later takes alike: KV and Redis", async () => {
  using kv = await Deno.openKv(":memory:");
  using io = trackedIo(kv);
  const limiters = [
    createKvRateLimiter(io.kv, { requests: 1 }), // the store names the wait
    createRedisRateLimiter({
      command: () => Promise.reject(new Error("connection refused")),
      requests: 2, // alone: 1 per window
    }),
  ];
  for (const limiter of limiters) {
    limiter.answered(await limiter.take());
    const waiting = Promise.resolve(limiter.take());
    const outcome = waiting.then(() => "served", (error) => error.name);
    await io.idle(); // its take answered: it waits (a timer) for the 300 s window
    await limiter[Symbol.asyncDispose]();
    const state = await Promise.race([outcome, realTurn().then(() => "waits")]);
    equal(state, "AbortError");
    await rejects(Promise.resolve(limiter.take()), { name: "AbortError" });
  }
});
