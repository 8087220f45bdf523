// Fair turns for a crawl beside live calls in the same process (newcomer
// r197 N3): the fleet's line holds one place per process, and a live take
// served in full took that place out while the process's crawl still waited,
// so a crawl whose process sends a live call more often than its turn came
// round went to the end of the line each time (1 page a window beside 10 for
// the others). The rules directly over simulated fleets, then KV limiters
// under fake time; tests/redis has the Redis script's.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import fc from "fast-check";
import {
  answerSends,
  emptyState,
  type TakeAsk,
  takeTurn,
  type WindowState,
} from "../src/store/_window_rules.ts";
import { createKvRateLimiter } from "../src/store/kv.ts";
import { checkFairFleet } from "./_windows.ts";
import { withFakeTimers } from "./_helpers.ts";
import { drive, onFakeClock, trackedIo } from "./_fast_setup.ts";

/** A process of the simulation: its crawl's next ask is cancelled by a newer one. */
interface Member {
  crawlAsk: number;
  liveWaits: boolean;
  crawlBusy: boolean;
}

Deno.test("simulated fleets, each process a crawl and a live call every so often: never more than the limit in any window, and each crawl at least 1/(2N) of the background sends", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 5 }),
      fc.integer({ min: 8, max: 40 }),
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 1, max: 5 }),
      fc.array(fc.integer({ min: 1, max: 30 }), {
        minLength: 1,
        maxLength: 20,
      }),
      (processes, requests, reserve, livePerWindow, latencies) => {
        const interval = 1000, limit = { requests, interval };
        const every = Math.floor(interval / livePerWindow);
        const end = 20 * interval;
        let state: WindowState = emptyState("e");
        const members: Member[] = Array.from({ length: processes }, () => ({
          crawlAsk: 0,
          liveWaits: false,
          crawlBusy: false,
        }));
        // Events: [ms, process, kind, generation]; kind "crawl", "live", or a send to answer.
        const queue: [number, number, string, number][] = [];
        members.forEach((_, p) => {
          queue.push([p, p, "crawl", 0]);
          queue.push([p * 37 % every + 1, p, "live", 0]);
        });
        const spans: [number, number][] = [];
        const crawled = Array<number>(processes).fill(0);
        let step = 0;
        const ask = (p: number, send: string, now: number, low: boolean) => {
          const request: TakeAsk = {
            holder: String(p),
            sends: [send],
            epoch: "e",
            returning: false,
            ...(low ? { low, reserve } : {}),
          };
          const turn = takeTurn(state, request, now, limit);
          state = turn.state;
          if (turn.granted > 0) {
            const answerAt = now + latencies[step++ % latencies.length]!;
            spans.push([now, answerAt]);
            queue.push([answerAt, p, send, 0]);
          }
          return turn;
        };
        const crawl = (p: number, now: number) => {
          const member = members[p]!;
          const turn = ask(p, `${p}:${spans.length}:crawl`, now, true);
          member.crawlBusy = turn.granted > 0;
          if (turn.granted > 0) crawled[p]!++;
          else queue.push([now + turn.wait, p, "crawl", ++member.crawlAsk]);
        };
        while (queue.length > 0) {
          queue.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
          const [now, p, kind, generation] = queue.shift()!;
          if (now > end) break;
          const member = members[p]!;
          if (kind === "crawl") {
            // A crawl asks when its wait ends, unless a live call of its process waits (live first).
            if (generation === member.crawlAsk && !member.liveWaits) {
              crawl(p, now);
            }
          } else if (kind === "live") {
            const turn = ask(p, `${p}:${spans.length}:live`, now, false);
            member.liveWaits = turn.granted === 0;
            // The next live call comes `every` ms after this one is sent; one not sent asks at its turn.
            queue.push([
              now + (turn.granted ? every : turn.wait),
              p,
              "live",
              0,
            ]);
            // Served, the limiter's line goes on at once: the waiting crawl asks again.
            if (turn.granted > 0 && !member.crawlBusy) crawl(p, now);
          } else {
            state = answerSends(state, [[kind, now, -1]]);
            spans.at(Number(kind.split(":")[1]))![1] = now;
            // A page answered: the crawl asks for the next at once, unless a live call waits.
            if (kind.endsWith(":crawl") && !member.liveWaits) crawl(p, now);
            else if (kind.endsWith(":crawl")) member.crawlBusy = false;
          }
        }
        checkFairFleet(spans, crawled, limit);
      },
    ),
    { numRuns: 150, seed: 6 },
  );
});

Deno.test("KV: a process's crawl keeps its place in the fleet's line while a live call of the same process is served: it gets the next background slot before a crawl that came to the line after it", async () => {
  using kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    using db = trackedIo(kv, 1);
    const options = { requests: 3, interval: 1000, reserve: 1, now };
    const [a, b, c] = [0, 1, 2].map(() => createKvRateLimiter(db.kv, options));
    const run = <T>(work: T | PromiseLike<T>) => drive(timers, work, db.idle);
    const later = (ms: number) => run(onFakeClock(timers, ms));
    // b sends two, answered 300 ms apart: one slot left, the reserve's.
    b!.answered(await run(b!.take()));
    await later(300);
    b!.answered(await run(b!.take()));
    const served: string[] = [];
    const crawl = (name: string, limiter: typeof a) =>
      Promise.resolve(limiter!.take(undefined, "low")).then((ticket) => {
        served.push(name);
        limiter!.answered(ticket);
      });
    const crawlOfA = crawl("a", a);
    await later(10);
    const crawlOfC = crawl("c", c);
    await later(10);
    // a live call of a takes the reserve's slot; a's crawl stays first in line.
    a!.answered(await run(a!.take(undefined, "auto")));
    await run(Promise.all([crawlOfA, crawlOfC]));
    deepStrictEqual(served, ["a", "c"]);
    for (const limiter of [a!, b!, c!]) {
      await run(limiter[Symbol.asyncDispose]());
    }
  });
});

Deno.test("KV: a process whose crawl gives up while its live call is taken takes the crawl's place out of the fleet's line: a crawl elsewhere gets the next background slot when it frees, not when the place would lapse (attack r201a F1: 1.3 s later)", async () => {
  using kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    const now = () => timers.now, start = now();
    using db = trackedIo(kv, 1);
    const options = { requests: 4, interval: 2000, reserve: 1, now };
    const [a, b, c] = [0, 1, 2].map(() => createKvRateLimiter(db.kv, options));
    const run = <T>(work: T | PromiseLike<T>) => drive(timers, work, db.idle);
    const later = (ms: number) => run(onFakeClock(timers, ms));
    // b sends three, two answered at once, one held: one slot left, the reserve's.
    for (let i = 0; i < 2; i++) b!.answered(await run(b!.take()));
    const held = await run(b!.take());
    const leaving = new AbortController();
    const crawlOfA = Promise.resolve(a!.take(leaving.signal, "low"));
    crawlOfA.catch(() => {});
    await later(30);
    let servedAt = -1;
    const crawlOfC = Promise.resolve(c!.take(undefined, "low")).then((t) => {
      servedAt = now() - start;
      c!.answered(t);
    });
    await later(30);
    // a's live call takes the last slot; its crawl gives up while that take is under way.
    const live = Promise.resolve(a!.take(undefined, "auto"));
    leaving.abort();
    a!.answered(await run(live));
    await later(1200);
    b!.answered(held);
    await run(crawlOfC);
    // b's two answered sends leave 2 s on, as the others saw them: the reserve's slot, then c's.
    ok(servedAt <= 2_000 + 100, `c served at ${servedAt} ms`);
    for (const limiter of [a!, b!, c!]) {
      await run(limiter[Symbol.asyncDispose]());
    }
  });
});

Deno.test("takeTurn(): a live take whose process's crawl waits in line stands behind the live places already waiting, and keeps the crawl's place when served at once (review r204 R2: it took the crawl's place, ahead of them)", () => {
  const limit = { requests: 2, interval: 1000 };
  const ask = (holder: string, send: string, low = false) => ({
    holder,
    sends: [send],
    epoch: "e",
    returning: false,
    ...(low ? { low, reserve: 0 } : {}),
  });
  let state = emptyState("e");
  const take = (request: TakeAsk, now: number) => {
    const turn = takeTurn(state, request, now, limit);
    state = turn.state;
    return turn.granted;
  };
  const line = () =>
    state.line.map(([id, , , live]) => `${id} ${live === 0 ? "low" : "live"}`);
  // x fills the window; its sends leave one at a time, at 1,000 and 1,500 ms.
  take({ ...ask("x", "x1"), sends: ["x1", "x2"] }, 0);
  state = answerSends(state, [["x1", 0, -1]]);
  state = answerSends(state, [["x2", 500, -1]]);
  deepStrictEqual([take(ask("a", "a1", true), 10), take(ask("b", "b1"), 20)], [
    0,
    0,
  ]);
  deepStrictEqual(line(), ["a low", "b live"]);
  equal(take(ask("a", "a2"), 30), 0);
  deepStrictEqual(line(), ["b live", "a live"]);
  // The first slot free is b's, the live caller that waited first.
  deepStrictEqual([take(ask("a", "a2"), 1000), take(ask("b", "b1"), 1000)], [
    0,
    1,
  ]);
  // Served at once, a live take keeps its process's crawl's place (the reserve's slot is live calls' only).
  state = emptyState("e");
  take({ ...ask("x", "x1"), sends: ["x1"] }, 0);
  take({ ...ask("a", "a1", true), reserve: 1 }, 0);
  deepStrictEqual([take(ask("a", "a2"), 0), line()], [1, ["a low"]]);
});
