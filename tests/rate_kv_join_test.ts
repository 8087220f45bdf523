// KV members that join a window another member filled get their turns (r202a F2). A member reads the window only when
// it takes, and dated another's answered sends by when it first saw them answered: the crawl that filled the window
// sent its next 16 in a burst when its sends left, and slept; the late ones, reading the window while it slept, dated
// its sends late, woke late by as long, and found the slots taken. 12 to 16 of each window's 17 or 18 background sends
// went to the first crawl for 5 windows, 1 to 3 to each of the others, and the shares evened only in the 12th window.
// Now a KV member is granted a send a slot's share after its last at the soonest while others wait (its takes come as
// often as its sends), and dates another's answer as long before that member's latest take it saw as that member's
// clock says.

import { ok } from "node:assert/strict";
import fc from "fast-check";
import { createKvRateLimiter } from "../src/store/kv.ts";
import { emptyState, takeTurn } from "../src/store/_window_rules.ts";
import { withFakeTimers } from "./_helpers.ts";
import { drive, trackedIo } from "./_fast_setup.ts";
import { mostAtOnce } from "./_windows.ts";

const LIMIT = { requests: 20, interval: 2000, reserve: 2 };

/** Three KV crawls at "low" for `windows` intervals, the second and third from `join` ms; sends per window. */
async function crawlJoined(join: number, latency: number, windows: number) {
  using kv = await Deno.openKv(":memory:");
  return await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    using db = trackedIo(kv, 1);
    const fleet = [0, 1, 2].map(() =>
      createKvRateLimiter(db.kv, { ...LIMIT, now })
    );
    const start = now(), until = start + windows * LIMIT.interval;
    const counts: number[][] = [], spans: [number, number][] = [];
    const crawl = async (i: number) => {
      if (i > 0) await new Promise((wake) => setTimeout(wake, join));
      while (now() < until) {
        const ticket = await fleet[i]!.take(undefined, "low");
        const sent = now(),
          window = Math.floor((sent - start) / LIMIT.interval);
        if (sent < until) (counts[window] ??= [0, 0, 0])[i]!++;
        await new Promise((answer) => setTimeout(answer, latency));
        spans.push([sent, now()]);
        fleet[i]!.answered(ticket);
      }
    };
    await drive(timers, Promise.all([0, 1, 2].map(crawl)), db.idle);
    for (const limiter of fleet) {
      await drive(timers, limiter[Symbol.asyncDispose](), db.idle);
    }
    return { counts, most: mostAtOnce(spans, LIMIT.interval) };
  });
}

/** Each crawl got at least 1/(2N) of every window's sends from window `first` on. */
function checkShares(counts: readonly number[][], first: number) {
  for (const window of counts.slice(first)) {
    const total = window.reduce((a, b) => a + b);
    for (const count of window) {
      ok(count >= total / (2 * window.length), JSON.stringify(counts));
    }
  }
}

Deno.test("KV crawls that join a window another crawl filled get at least 1/(2N) of each window's background sends from its first roll on", async () => {
  // Here [[18, 0, 0], [8, 5, 5], then [6, 6, 6] each window.
  const { counts } = await crawlJoined(600, 15, 6);
  checkShares(counts, 1);
});

Deno.test("KV crawls never hold more than the limit at once, and share from the second roll on, whenever the others join and however long a request takes", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: LIMIT.interval }),
      fc.integer({ min: 1, max: 90 }),
      async (join, latency) => {
        const { counts, most } = await crawlJoined(join, latency, 4);
        ok(most <= LIMIT.requests, `${most} at once`);
        checkShares(counts, 2);
      },
    ),
    { numRuns: 8, seed: 202 },
  );
});

Deno.test("takeTurn() spaces an asker's sends while others wait in line, and only then", () => {
  const limit = { requests: 10, interval: 1000 };
  const ask = { sends: ["a:1"], epoch: "", returning: false };
  const waiting = takeTurn(
    emptyState("e"),
    { ...ask, holder: "b", sends: [] as string[] },
    0,
    limit,
  );
  // b asked for nothing: out of line. a alone is granted however recent its last send.
  const alone = takeTurn(
    waiting.state,
    { ...ask, holder: "a", spacedUntil: 90 },
    10,
    limit,
  );
  ok(alone.granted === 1);
  // b waits in line (a full window); a's next send waits until its spacing.
  const full = { ...alone.state, block: 500 };
  const behind = takeTurn(
    full,
    { ...ask, holder: "b", sends: ["b:1"] },
    20,
    limit,
  );
  ok(behind.granted === 0 && behind.state.line.length === 1);
  const spaced = takeTurn(
    { ...behind.state, block: 0 },
    { ...ask, holder: "a", sends: ["a:2"], spacedUntil: 110 },
    30,
    limit,
  );
  ok(spaced.granted === 0);
  ok(spaced.wait === 80, `${spaced.wait}`);
  // Its place lasts past its spacing.
  const [, lapses] = spaced.state.line.find(([id]) => id === "a")!;
  ok(lapses >= 110, `${lapses}`);
  const after = takeTurn(
    spaced.state,
    { ...ask, holder: "a", sends: ["a:2"], spacedUntil: 110 },
    110,
    limit,
  );
  ok(after.granted === 1);
  // A share ahead (100 ms here) at most: further was dated on another clock (a Redis failed over to one behind).
  const inLine = { ...behind.state, block: 0 };
  const share = takeTurn(
    inLine,
    { ...ask, holder: "a", sends: ["a:2"], spacedUntil: 130 },
    30,
    limit,
  );
  ok(share.granted === 0 && share.wait === 100, `${share.wait}`);
  const beyond = takeTurn(
    inLine,
    { ...ask, holder: "a", sends: ["a:2"], spacedUntil: 131 },
    30,
    limit,
  );
  ok(beyond.granted === 1 && beyond.wait === 0, `${beyond.wait}`);
});

Deno.test("a KV member whose clock stands still gets no send of it dated early by another member: never more than the limit at once (r207a F1: 38 of 20, its answers dated at the first sight of a take stamped the same)", async () => {
  using kv = await Deno.openKv(":memory:");
  const limit = { requests: 20, interval: 1000 };
  await withFakeTimers(async (timers) => {
    using db = trackedIo(kv, 1);
    const still = timers.now + 1;
    const stopped = createKvRateLimiter(db.kv, { ...limit, now: () => still });
    const going = createKvRateLimiter(db.kv, {
      ...limit,
      now: () => timers.now,
    });
    const spans: [number, number][] = [];
    const sleep = (ms: number) => new Promise((wake) => setTimeout(wake, ms));
    const send = async (limiter: typeof going, flight: number) => {
      const ticket = await limiter.take();
      const sent = timers.now;
      await sleep(flight);
      spans.push([sent, timers.now]);
      limiter.answered(ticket);
    };
    const run = async () => {
      // The stopped member takes and answers at its one stamp; the other sees that stamp, then idles two intervals
      // (fake time: drive() moves the clock).
      await send(stopped, 1);
      await sleep(50);
      await send(going, 1);
      await sleep(2 * limit.interval);
      // Later takes and answers of the stopped member carry the same stamp.
      const theirs = Array.from({ length: 19 }, () => send(stopped, 10));
      await sleep(30);
      const ours = Array.from({ length: 20 }, () => send(going, 10));
      await Promise.all([...theirs, ...ours]);
    };
    await drive(timers, run(), db.idle);
    for (const limiter of [stopped, going]) {
      await drive(timers, limiter[Symbol.asyncDispose](), db.idle);
    }
    const most = mostAtOnce(spans, limit.interval);
    ok(most <= limit.requests, `${most} at once`);
  });
});
