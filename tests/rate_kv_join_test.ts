// KV members that join a window another member filled get their turns (r202a F2): a member dates another's answered
// sends by that member's latest take it has seen, not only by when it first saw them answered. By sight alone, the
// crawl that filled the window first kept 13 of each window's 17 background sends for 5 windows, and 9 to 12 for the
// next 4, its 2 late neighbours 1 to 4 each: each woke only when its late dating said a send had left.

import { ok } from "node:assert/strict";
import fc from "fast-check";
import { createKvRateLimiter } from "../src/store/kv.ts";
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

Deno.test("KV crawls that join a window another crawl filled get at least 1/(2N) of each window's background sends from the second window on", async () => {
  const { counts } = await crawlJoined(600, 15, 6);
  console.log(`background sends per window: ${JSON.stringify(counts)}`);
  for (const window of counts.slice(2)) {
    const total = window.reduce((a, b) => a + b);
    for (const count of window) {
      ok(count >= total / (2 * window.length), JSON.stringify(counts));
    }
  }
});

Deno.test("KV crawls dating each other's answers by their takes never hold more than the limit at once, whenever they join", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: LIMIT.interval }),
      fc.integer({ min: 1, max: 90 }),
      async (join, latency) => {
        const { most } = await crawlJoined(join, latency, 4);
        ok(most <= LIMIT.requests, `${most} at once`);
      },
    ),
    { numRuns: 8, seed: 202 },
  );
});
