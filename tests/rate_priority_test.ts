// Issue 47, live traffic first, in one process: a limiter serves live
// requests before background ones (`priority: "low"`), and a background
// request leaves `reserve` slots of the window free. Counted on fake timers,
// by the limiter's grants and by the in-process fake's own count; never a
// duration.

import { deepStrictEqual, equal, ok, throws } from "node:assert/strict";
import fc from "fast-check";
import {
  createRateLimiter,
  type RateLimiter,
} from "../src/client/rate_limit.ts";
import { createKvRateLimiter } from "../src/store/kv.ts";
import { createRedisRateLimiter } from "../src/store/redis.ts";
import type { RatePriority } from "../src/core/_rate_options.ts";
import type { PartnerApiEvent } from "../src/core/events.ts";
import { collect } from "../src/client/paginate.ts";
import { mostInAnyWindow } from "./_windows.ts";
import { withFakeTimers } from "./_helpers.ts";
import {
  clientOf,
  drive,
  inProcessFake,
  onFakeClock,
  trackedIo,
} from "./_fast_setup.ts";
import { runs } from "./_property_runs.ts";

/** One caller of a schedule: when it comes, its priority, how long its request takes. */
interface Caller {
  readonly at: number;
  readonly low: boolean;
  readonly latency: number;
}

const schedules = fc.record({
  requests: fc.integer({ min: 1, max: 12 }),
  interval: fc.integer({ min: 50, max: 1000 }),
  reserve: fc.option(fc.integer({ min: 0, max: 11 }), { nil: undefined }),
  callers: fc.array(
    fc.record({
      at: fc.integer({ min: 0, max: 3000 }),
      low: fc.boolean(),
      latency: fc.integer({ min: 0, max: 2000 }), // past the interval too: a send answered late
    }),
    { minLength: 1, maxLength: 40 },
  ),
});

Deno.test("priorities, any schedule: never more than the limit in a window; a background send leaves the reserve free and goes only when no live caller waits; order is kept within a priority", async () => {
  await fc.assert(
    fc.asyncProperty(schedules, async (schedule) => {
      const { requests, interval, callers } = schedule;
      const reserve = schedule.reserve === undefined
        ? undefined
        : Math.min(schedule.reserve, requests - 1);
      await withFakeTimers(async (timers) => {
        const limiter = createRateLimiter({
          requests,
          interval,
          now: () => timers.now,
          ...(reserve === undefined ? {} : { reserve }),
        });
        const kept = reserve ??
          Math.min(requests - 1, Math.max(1, Math.ceil(requests / 10)));
        /** [granted, answered] of every send, and the live callers waiting. */
        const spans: [number, number][] = [];
        const granted: { index: number; low: boolean }[] = [];
        let liveWaiting = 0;
        const violations: string[] = [];
        const run = async (caller: Caller, index: number) => {
          await onFakeClock(timers, caller.at);
          const priority: RatePriority = caller.low ? "low" : "high";
          const slot = limiter.take(undefined, priority);
          const waited = typeof slot !== "number";
          if (waited && !caller.low) liveWaiting++;
          const ticket = await slot;
          if (waited && !caller.low) liveWaiting--;
          const now = timers.now;
          if (caller.low) {
            if (liveWaiting > 0) {
              violations.push(`low sent past live at ${now}`);
            }
            // Slots held now (granted, answered less than an interval ago), this one included.
            const held = spans.filter(([, to]) => to > now - interval).length +
              inFlight + 1;
            if (held > requests - kept) {
              violations.push(`low took slot ${held} of ${requests} at ${now}`);
            }
          }
          granted.push({ index, low: caller.low });
          inFlight++;
          const from = now;
          await onFakeClock(timers, caller.latency);
          inFlight--;
          spans.push([from, timers.now]);
          limiter.answered(ticket);
        };
        let inFlight = 0;
        await drive(timers, Promise.all(callers.map(run)));
        deepStrictEqual(violations, []);
        equal(timers.countTimers(), 0, "no timer left");
        // Within a priority, in the order they came (ties by index).
        for (const low of [false, true]) {
          const order = callers.map((caller, index) => ({ ...caller, index }))
            .filter((caller) => caller.low === low)
            .sort((a, b) => a.at - b.at || a.index - b.index)
            .map(({ index }) => index);
          deepStrictEqual(
            granted.filter((grant) => grant.low === low).map(({ index }) =>
              index
            ),
            order,
          );
        }
        // Never more than the limit held at once, from grant to answer + interval.
        const edges = spans.flatMap(([from, to]) => [[from, 1], [
          to + interval,
          -1,
        ]]).sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
        let held = 0;
        for (const [, step] of edges) {
          held += step!;
          ok(held <= requests, `${held} of ${requests} held`);
        }
      });
    }),
    { numRuns: runs(200, 3000), seed: 47 },
  );
});

Deno.test("a background crawl never holds the last reserve slots of any window, by the fake's count; a live call issued while the crawl waits is sent before the crawl's next page", async () => {
  await withFakeTimers(async (timers) => {
    const limit = { requests: 10, interval: 1000 }; // reserve: 1
    using api = inProcessFake({
      now: () => timers.now,
      items: { transactions: 300 },
    });
    const lowArrivals: number[] = [];
    const order: string[] = [];
    const fetch: typeof globalThis.fetch = async (input, init) => {
      const request = new Request(input, init);
      const path = new URL(request.url).pathname;
      if (path.startsWith("/api/")) {
        if (init?.priority === "low") lowArrivals.push(timers.now);
        order.push(init?.priority === "low" ? "low" : "live");
      }
      return await api.fetch(input, init);
    };
    const rateLimit = createRateLimiter({ ...limit, now: () => timers.now });
    const client = clientOf({ ...api, fetch }, {
      rateLimit,
      now: () => timers.now,
    });
    const crawl = collect(
      client.list("transactions", { limit: 10, priority: "low" }),
      { maxItems: 1000 },
    );
    // Once the crawl waits (its 9 slots of the window taken), a live call.
    await drive(timers, onFakeClock(timers, 500));
    equal(order.length, 9, "the crawl took all but the reserve");
    const live = drive(
      timers,
      client.fetch("organizations").then((r) => r.body?.cancel()),
    );
    await live;
    equal(order.at(-1), "live", "sent before any page after it");
    equal(order.length, 10, "the reserve's slot");
    const items = await drive(timers, crawl);
    equal(items.length, 300);
    equal(
      mostInAnyWindow(lowArrivals, limit.interval),
      limit.requests - 1,
      "never more than requests - reserve background calls in a window",
    );
  });
});

Deno.test("priority reaches fetch and the limiter: the call's own, else the list's, else the client's (default auto); rate.wait carries it", async () => {
  using api = inProcessFake();
  const seen: (RequestPriority | undefined)[] = [];
  const takes: (RatePriority | undefined)[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    if (new URL(new Request(input, init).url).pathname.startsWith("/api/")) {
      seen.push(init?.priority);
    }
    return api.fetch(input, init);
  };
  const rateLimit = {
    limit: { requests: 10, interval: 1000 },
    take: (_signal?: AbortSignal, priority?: RatePriority) => {
      takes.push(priority);
      return takes.length;
    },
    answered() {},
    refused() {},
  };
  const plain = clientOf({ ...api, fetch }, { rateLimit });
  await (await plain.fetch("organizations")).body?.cancel();
  await (await plain.fetch("organizations", { priority: "low" })).body
    ?.cancel();
  const background = clientOf({ ...api, fetch }, {
    rateLimit,
    priority: "low",
  });
  await (await background.fetch("organizations")).body?.cancel();
  await (await background.fetch("organizations", { priority: "high" })).body
    ?.cancel();
  const few = { maxItems: 10 };
  await collect(background.list("organizations", { maxItems: 1 }), few);
  await collect(
    plain.list("organizations", { maxItems: 1, priority: "low" }),
    few,
  );
  await collect(
    background.pages("organizations", { maxItems: 1, priority: "auto" }),
    few,
  );
  deepStrictEqual(takes, ["auto", "low", "low", "high", "low", "low", "auto"]);
  deepStrictEqual(seen, [
    undefined,
    "low",
    "low",
    "high",
    "low",
    "low",
    "auto",
  ]);
  throws(
    () => clientOf(api, { priority: "urgent" as RatePriority }),
    { name: "TypeError", option: "priority" },
  );
  throws(
    () => plain.list("organizations", { priority: "none" as RatePriority }),
    { name: "TypeError", option: "priority" },
  );
  await withFakeTimers(async (timers) => {
    const events: PartnerApiEvent[] = [];
    const client = clientOf({ ...api, fetch }, {
      rateLimit: createRateLimiter({ requests: 1, interval: 100 }),
      now: () => timers.now,
      onEvent: (event) => event.type === "rate.wait" && events.push(event),
    });
    const send = (priority: RatePriority) =>
      client.fetch("organizations", { priority }).then((r) => r.body?.cancel());
    await drive(timers, Promise.all([send("high"), send("low")]));
    deepStrictEqual(
      events.map((event) => event.type === "rate.wait" && event.priority),
      ["low"],
    );
  });
});

Deno.test("createRateLimiter() checks reserve: a whole number from 0 to requests - 1", () => {
  for (const reserve of [-1, 1.5, 10, Number.NaN]) {
    throws(() => createRateLimiter({ requests: 10, interval: 1, reserve }), {
      name: "RangeError",
      option: "reserve",
    });
  }
  // A limit of 1 reserves none by default: background requests still go.
  const one = createRateLimiter({ requests: 1, interval: 1000 });
  equal(typeof one.take(undefined, "low"), "number");
});

Deno.test("priorities across 3 KV limiters (as 3 processes): the crawl of one never holds the last reserve slots of a window by the fake's count, and live calls of the other two, issued while it waits, arrive before its next page", async () => {
  using kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    timers.setSystemTime(Date.UTC(2026, 10, 28));
    using db = trackedIo(kv, 1);
    const limit = { requests: 10, interval: 1000 }; // reserve: 1
    using api = inProcessFake({
      now: () => timers.now,
      items: { transactions: 200 },
    });
    const arrivals: { at: number; live: boolean }[] = [];
    const fetch: typeof globalThis.fetch = async (input, init) => {
      const path = new URL(new Request(input, init).url).pathname;
      if (path.startsWith("/api/")) {
        arrivals.push({ at: timers.now, live: init?.priority !== "low" });
      }
      return await api.fetch(input, init);
    };
    const [a, b, c] = [0, 1, 2].map(() =>
      createKvRateLimiter(db.kv, { ...limit, now: () => timers.now })
    );
    const clientWith = (rateLimit: RateLimiter) =>
      clientOf({ ...api, fetch }, { rateLimit, now: () => timers.now });
    const crawl = collect(
      clientWith(a!).list("transactions", { limit: 10, priority: "low" }),
      { maxItems: 1000 },
    );
    await drive(
      timers,
      onFakeClock(timers, 500),
      db.idle,
    );
    equal(arrivals.length, 9, "the crawl took all but the reserve, and waits");
    const before = arrivals.length;
    const live = Promise.all(
      [b!, c!].map((rateLimit) =>
        clientWith(rateLimit).fetch("organizations").then((r) =>
          r.body?.cancel()
        )
      ),
    );
    await drive(timers, live, db.idle);
    deepStrictEqual(
      arrivals.slice(before, before + 2).map(({ live }) => live),
      [true, true],
      "the live calls first",
    );
    equal((await drive(timers, crawl, db.idle)).length, 200);
    ok(
      mostInAnyWindow(
        arrivals.filter(({ live }) => !live).map(({ at }) => at),
        limit.interval,
      ) <= limit.requests - 1,
      "never more than requests - reserve background calls in a window",
    );
    for (const limiter of [a!, b!, c!]) {
      await drive(timers, limiter[Symbol.asyncDispose](), db.idle);
    }
  });
});

Deno.test("a fleet limiter whose store fails keeps the rule within its process: background sends leave its part of the reserve in its share, live ones take it", async () => {
  await withFakeTimers(async (timers) => {
    using io = trackedIo(); // the script's digest: real crypto.subtle
    // Redis never answered: half the limit, 10, of which 1 (its part of
    // the reserve of 2) is kept for live calls.
    const limiter = createRedisRateLimiter({
      command: () => Promise.reject(new Error("connection refused")),
      requests: 20,
      interval: 60_000,
      now: () => timers.now,
    });
    const leave = new AbortController();
    let low = 0;
    const background = Array.from(
      { length: 10 },
      () =>
        Promise.resolve(limiter.take(leave.signal, "low")).then(
          () => low++,
          () => {},
        ),
    );
    await drive(timers, onFakeClock(timers, 100), io.idle);
    equal(low, 9, "all but its part of the reserve");
    const live = await drive(timers, limiter.take(undefined, "high"), io.idle);
    equal(typeof live, "number", "the reserve's slot, for a live call");
    leave.abort();
    await Promise.all(background);
    await drive(timers, limiter[Symbol.asyncDispose](), io.idle);
  });
});

Deno.test("after 429s the reserve stays whole under the lowered cap, up to half of it: a crawl filling the window leaves live calls 10 slots of 100 after one 429, 6 after three; a reserve over half the limit never less than its part (attack r188b F1: lowered in proportion, 5 and 2; six 429s at 900 left 2 of 90; review r191a R1: half the cap alone gave a reserve of 80 30 slots of 50)", async () => {
  const cases = [[10, 1, 10], [10, 3, 6], [80, 1, 40], [80, 3, 11]] as const;
  for (const [reserve, refusals, room] of cases) {
    await withFakeTimers(async (timers) => {
      const limiter = createRateLimiter({
        requests: 100,
        interval: 60_000,
        reserve,
        now: () => timers.now,
      });
      limiter.answered(await limiter.take());
      for (let i = 0; i < refusals; i++) {
        limiter.refused(); // a slot's share apart and more: each halves the cap
        await drive(timers, onFakeClock(timers, 1_000));
      }
      const leave = new AbortController();
      let low = 0;
      const crawl = Array.from(
        { length: 100 },
        () =>
          Promise.resolve(limiter.take(leave.signal, "low")).then(
            () => low++,
            () => {},
          ),
      );
      await drive(timers, onFakeClock(timers, 100));
      const live = Array.from({ length: 60 }, () => limiter.take(leave.signal));
      const now = live.filter((slot) => typeof slot === "number").length;
      equal(now, room, `${reserve}, ${refusals} 429s: ${low} background sends`);
      leave.abort();
      await Promise.all([
        ...crawl,
        ...live.map((slot) => Promise.resolve(slot).catch(() => {})),
      ]);
    });
  }
});

Deno.test("a Redis limiter whose script answers more slots than asked, a reseed neither 0 nor 1, or none and no wait, takes it for a failing store: it paces alone and says rate.degraded; the script's write back (none and no wait, reseed 1) is an answer (attack r188b F2: 49 phantom sends a take; F3: 439 round trips a second; r191b F1; r190b F1: the write back refused, no process rejoined)", async () => {
  const moreThanAsked = [50, 0, 1, "e", 0, 0];
  const noneAndNoWait = [0, 0, 1, "e", 0, 0];
  const reseedOf2 = [0, 0, 1, "e", 2, 0];
  const lies = [moreThanAsked, noneAndNoWait, reseedOf2];
  const writeBack = (call: number) =>
    call === 0 ? [0, 0, 1, "e", 1, 0] : [1, 0, 1, "e", 0, 0];
  const cases = [
    ...lies.map((reply) => [() => reply, "rate.degraded"] as const),
    [writeBack, undefined] as const,
  ];
  for (const [reply, event] of cases) {
    await withFakeTimers(async (timers) => {
      using io = trackedIo(); // the script's digest: real crypto.subtle
      let calls = 0;
      const events: string[] = [];
      const limiter = createRedisRateLimiter({
        command: () => Promise.resolve(reply(calls++)),
        requests: 10,
        interval: 1_000,
        now: () => timers.now,
        onEvent: (event) => events.push(event.type),
      });
      const tickets = new Set<number>();
      for (let i = 0; i < 3; i++) {
        const ticket = await drive(timers, limiter.take(), io.idle);
        tickets.add(ticket);
        limiter.answered(ticket);
      }
      await drive(timers, onFakeClock(timers, 1_000), io.idle);
      equal(tickets.size, 3, `${reply(0)}: one slot a take`);
      ok(calls < 20, `${reply(0)}: ${calls} store calls`);
      equal(events[0], event, String(reply(0)));
      await drive(timers, limiter[Symbol.asyncDispose](), io.idle);
    });
  }
});

Deno.test("a Redis limiter whose script grants nothing again and again, each a ms away, asks no more often than a slot comes; one that asks for a write back at every take is a failing store: callers go alone, rate.degraded, then rate.restored once a take answers (attack r191b F2: 465 round trips a second; F3: callers stalled, nothing said)", async () => {
  const grants = [1, 0, 1, "e", 0, 0];
  const stores = [
    { lie: [0, 1, 1, "e", 0, 0], events: [] },
    { lie: [0, 0, 1, "e", 1, 0], events: ["rate.degraded", "rate.restored"] },
  ];
  for (const { lie, events: said } of stores) {
    await withFakeTimers(async (timers) => {
      using io = trackedIo(); // the script's digest: real crypto.subtle
      let calls = 0;
      const events: string[] = [];
      const limiter = createRedisRateLimiter({
        command: () =>
          Promise.resolve(timers.now < 5_000 ? (calls++, lie) : grants),
        requests: 10,
        interval: 1_000,
        now: () => timers.now,
        onEvent: (event) => events.push(event.type),
      });
      // A caller in the first second, one after the store answers again.
      const first = Promise.race([limiter.take(), onFakeClock(timers, 1_000)]);
      const served = await drive(timers, first, io.idle);
      await drive(timers, onFakeClock(timers, 5_000), io.idle);
      const later = await drive(timers, limiter.take(), io.idle);
      equal(typeof later, "number");
      if (lie[4] === 1) equal(typeof served, "number", "served alone");
      ok(calls <= 60, `${lie}: ${calls} store calls in 5 s, a slot 100 ms`);
      deepStrictEqual(events, said, String(lie));
      await drive(timers, limiter[Symbol.asyncDispose](), io.idle);
    });
  }
});

Deno.test("a Redis limiter's backoff on takes granted nothing counts only those a ms away in a row: after waits of a slot or more, a wait of 1 ms is 1 ms (a crawl's takes in a busy fleet hold no live call back)", async () => {
  await withFakeTimers(async (timers) => {
    using io = trackedIo(); // the script's digest: real crypto.subtle
    const replies = [200, 200, 200, 200, 1].map((
      wait,
    ) => [0, wait, 1, "e", 0, 0]);
    let calls = 0;
    const limiter = createRedisRateLimiter({
      command: () => Promise.resolve(replies[calls++] ?? [1, 0, 1, "e", 0, 0]),
      requests: 10,
      interval: 1_000,
      now: () => timers.now,
    });
    await drive(timers, limiter.take(), io.idle);
    equal(timers.now, 4 * 200 + 1);
    await drive(timers, limiter[Symbol.asyncDispose](), io.idle);
  });
});

Deno.test("a Redis limiter whose store asks for a write back at every take for minutes serves its callers alone throughout, never a second without a slot, and says rate.degraded once (attack r192a F1: back from alone, each write back waited 2^n ms, up to 30 s stalled of every minute)", async () => {
  await withFakeTimers(async (timers) => {
    using io = trackedIo(); // the script's digest: real crypto.subtle
    const events: string[] = [];
    const limiter = createRedisRateLimiter({
      command: () => Promise.resolve([0, 0, 1, "e", 1, 0]),
      requests: 10,
      interval: 1_000,
      now: () => timers.now,
      onEvent: (event) => events.push(event.type),
    });
    let longest = 0;
    for (let last = 0; timers.now < 180_000;) {
      limiter.answered(await drive(timers, limiter.take(), io.idle));
      longest = Math.max(longest, timers.now - last);
      last = timers.now;
    }
    ok(longest <= 1_000, `${longest} ms without a slot`);
    deepStrictEqual(events, ["rate.degraded"]);
    await drive(timers, limiter[Symbol.asyncDispose](), io.idle);
  });
});

Deno.test("a live caller's first take starts the backoff on takes granted nothing afresh: background's empty takes a ms away were not its (attack r192a F3: it waited a slot, 100 ms, for a wait of 1)", async () => {
  await withFakeTimers(async (timers) => {
    using io = trackedIo(); // the script's digest: real crypto.subtle
    let liveAsked = false;
    const limiter = createRedisRateLimiter({
      command: () => {
        const first = timers.now >= 1_500 && !liveAsked;
        liveAsked ||= first;
        return Promise.resolve(
          timers.now < 1_500 || first
            ? [0, 1, 1, "e", 0, 0]
            : [1, 0, 1, "e", 0, 0],
        );
      },
      requests: 10,
      interval: 1_000,
      now: () => timers.now,
    });
    const crawl = limiter.take(undefined, "low");
    await drive(timers, onFakeClock(timers, 1_500), io.idle);
    await drive(timers, limiter.take(undefined, "high"), io.idle);
    equal(timers.now, 1_501);
    limiter.answered(await drive(timers, crawl, io.idle));
    await drive(timers, limiter[Symbol.asyncDispose](), io.idle);
  });
});

/** A scripted Redis whose take script answers `reply(take)` (the n-th take, from 0); write-backs and answers pass. */
/** Where a take says it paced alone in its EVALSHA's arguments: after the digest, 7 keys and ARGV 1 to 7. */
const RETURNING = 17;

function scriptedTakes(
  reply: (take: number, returning: boolean) => unknown[] | Error,
) {
  let takeScript: unknown, takes = 0;
  return (args: readonly string[]) => {
    takeScript ??= args[1]; // the first command is a take
    const took = args[1] === takeScript;
    const answer = took
      ? reply(takes++, args[RETURNING] === "1")
      : [0, 0, 1, "e", 0, 0];
    return answer instanceof Error
      ? Promise.reject(answer)
      : Promise.resolve(answer);
  };
}

Deno.test("a Redis limiter whose store loses its window more than 5 times an interval, none granted, takes it for a failing store and serves its callers alone; losses as often as 3 an interval leave them to wait for the store (attack r193a F1: a write back asked at every other take, none granted between, stalled callers for good)", async () => {
  const lost = [0, 0, 1, "e", 1, 0], full = [0, 100, 2, "e", 0, 0];
  for (const often of [true, false]) {
    await withFakeTimers(async (timers) => {
      using io = trackedIo(); // the script's digest: real crypto.subtle
      let losses = 0; // lost at every other take, or at the first after each 700 ms
      const reply = (take: number) =>
        (often ? take % 2 === 0 : timers.now >= losses * 700 && ++losses)
          ? lost
          : full;
      const limiter = createRedisRateLimiter({
        command: scriptedTakes(reply),
        requests: 20,
        interval: 2_000,
        now: () => timers.now,
      });
      const taken = Promise.race([limiter.take(), onFakeClock(timers, 10_000)]);
      const served = await drive(timers, taken, io.idle);
      equal(typeof served === "number", often, `served: ${served}`);
      await drive(timers, limiter[Symbol.asyncDispose](), io.idle);
    });
  }
});

Deno.test("a Redis limiter whose store loses its window again and again says one fall for the whole run of losses, and rate.restored once the window held an interval: losses between grants, and losses with none granted that send it alone (attack r194a F4, r193a F2, r199a: a rate.degraded and rate.restored pair per loss, 458,752 events in 5 s; r202a F1: back from alone, a pair every 2 s while FLUSHALL went on; review r204 R1: after 40 s of losses it paced alone 27 s more)", async () => {
  const lost = [0, 0, 1, "e", 1, 0], holds = [1, 0, 2, "e", 0, 0];
  const stores = {
    "granting between": holds,
    "none granted": [0, 100, 2, "e", 0, 0],
  };
  const STORM = 40_000;
  for (const [name, between] of Object.entries(stores)) {
    await withFakeTimers(async (timers) => {
      using io = trackedIo(); // the script's digest: real crypto.subtle
      // Lost at every other take for 40 s, then a store that holds and grants; a take back from alone writes back
      // first, as the script asks.
      const reply = (take: number, returning: boolean) =>
        returning
          ? lost
          : timers.now >= STORM
          ? holds
          : take % 2
          ? between
          : lost;
      const events: string[] = [];
      let sent = 0, restoredAt = -1;
      await using limiter = createRedisRateLimiter({
        command: scriptedTakes(reply),
        requests: 20,
        interval: 2_000,
        now: () => timers.now,
        onEvent: ({ type }) => {
          if (type === "rate.restored") restoredAt = timers.now;
          if (/^rate\.(degraded|restored)$/.test(type)) events.push(type);
        },
      });
      while (timers.now < STORM + 6_000) {
        limiter.answered(await drive(timers, limiter.take(), io.idle));
        sent++;
        await drive(timers, onFakeClock(timers, 50), io.idle);
      }
      ok(sent > 100, `${name}: ${sent} sent`); // served throughout: never stalled
      deepStrictEqual(events, ["rate.degraded", "rate.restored"], name);
      // Back on the store an interval after the storm, and a first pause alone at most (on the fake clock).
      ok(
        restoredAt > STORM && restoredAt <= STORM + 2_500,
        `${name}: ${restoredAt}`,
      );
    });
  }
});

Deno.test("a Redis limiter whose window was lost once and whose link then fails a take every 700 ms paces alone 0.5 s at a time, as without the loss (attack r203a F1: the fall for lost windows held its backoff, pauses of 0.5 to 16 s, 752 sends in 70 s where 2,450 went)", async () => {
  const lost = [0, 0, 1, "e", 1, 0], holds = [1, 0, 2, "e", 0, 0];
  await withFakeTimers(async (timers) => {
    using io = trackedIo(); // the script's digest: real crypto.subtle
    let lostOnce = false, failedAt = 0;
    const reset = Object.assign(new Error("read ECONNRESET"), {
      code: "ECONNRESET",
    });
    const reply = (_take: number, returning: boolean) => {
      if (returning) return lost; // a take back from alone writes back first, as the script asks
      if (timers.now >= 1_000 && !lostOnce) return (lostOnce = true, lost);
      if (timers.now < 1_000 || timers.now >= 30_000) return holds;
      if (timers.now - failedAt < 700) return holds;
      failedAt = timers.now;
      return reset;
    };
    const degraded: number[] = [];
    let sent = 0;
    await using limiter = createRedisRateLimiter({
      command: scriptedTakes(reply),
      requests: 20,
      interval: 1_000,
      now: () => timers.now,
      onEvent: (event) =>
        event.type === "rate.degraded" &&
        degraded.push(event.retryAt - timers.now),
    });
    while (timers.now < 40_000) {
      limiter.answered(await drive(timers, limiter.take(), io.idle));
      sent++;
      await drive(timers, onFakeClock(timers, 20), io.idle);
    }
    // Each failed take a fall of its own, paced alone 0.5 s: about 950 sends, as the parent sent (here 441).
    ok(sent > 800, `${sent} sent`);
    ok(degraded.every((pause) => pause <= 500), `${degraded}`);
  });
});
