// `partner-api sync`'s progress line says when the rate limit holds the run
// (issue 45: at 900 requests per 5 minutes the tool sat 300 s with no line).
// The hold is a pure function of what was sent and the time; the line is
// driven with fake timers and a manual clock, no socket.

import { equal, ok, rejects } from "node:assert/strict";
import { createRateLimiter } from "../src/client/rate_limit.ts";
import {
  heard,
  holdText,
  progressLine,
  rateHold,
  rateState,
} from "../src/cli/_sync_progress.ts";
import type { PartnerApiEvent } from "../src/core/events.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";

const limit = { requests: 900, interval: 300_000 };
const request = { type: "api.request" } as PartnerApiEvent;

Deno.test("rateHold: nothing holds a window that is not full; a full one holds until its oldest send leaves it; a 429 until its wait ends", () => {
  const state = rateState("high", limit);
  for (let at = 0; at < 899; at++) heard(state, request, at);
  equal(rateHold(state, 1000), 0);
  heard(state, request, 1000);
  equal(rateHold(state, 1000), 299_000);
  for (let at = 1001; at < 1100; at++) heard(state, request, at);
  equal(state.window.times.length, 900, "memory stays one window");
  equal(rateHold(state, 260_000), 300_099 - 260_000);
  equal(rateHold(state, 400_000), 0);
  const retry = { type: "api.retry", status: 429, delayMs: 41_000 };
  heard(state, retry as PartnerApiEvent, 400_000);
  equal(rateHold(state, 400_000), 41_000);
  equal(holdText(40_200), "waiting for the rate limit, 41 s");
});

Deno.test("rateHold: a low-priority run (sync's default) is held once it fills the limit less the reserve (810 of 900), as its limiter holds it; 'auto' and 'high' at the whole limit", async () => {
  const low = rateState(undefined, limit);
  equal(low.window.times.length, 810, "the share of a window: 900 less 90");
  for (let at = 0; at < 809; at++) heard(low, request, at);
  equal(rateHold(low, 1000), 0);
  heard(low, request, 1000);
  equal(rateHold(low, 1000), 299_000);
  // The client's own limiter, on the same sends, holds the next low request but not a live one.
  let time = 0;
  const limiter = createRateLimiter({ ...limit, now: () => time });
  for (let at = 0; at < 810; at++) {
    time = at === 809 ? 1000 : at;
    limiter.answered(limiter.take(undefined, "low") as number);
  }
  const stop = new AbortController();
  const next = limiter.take(stop.signal, "low");
  ok(next instanceof Promise, "the 811th low request waits");
  stop.abort();
  await rejects(Promise.resolve(next), { name: "AbortError" });
  equal(typeof limiter.take(undefined, "high"), "number");
  const auto = rateState("auto", limit);
  for (let at = 0; at < 810; at++) heard(auto, request, at);
  equal(rateHold(auto, 1000), 0, "a live run may still send 90");
});

Deno.test("the progress line says 'waiting for the rate limit' with the seconds left while the window is full, and stops saying it once a slot frees", async () => {
  await withFakeTimers(async (timers) => {
    const clock = manualClock(0);
    let text = "";
    const out = {
      isTerminal: false,
      write: (line: string) => void (text += line),
    };
    const line = progressLine(out, clock, 0);
    try {
      for (let i = 0; i < 900; i++) line.heard(request);
      clock.advance(259_000);
      await timers.tickAsync(1000);
      const waits = text.split("\n").filter((l) => l.includes("waiting"));
      equal(waits.length, 1, text);
      ok(waits[0]!.endsWith("waiting for the rate limit, 41 s"), text);
      clock.advance(10_000);
      await timers.tickAsync(1000);
      equal(
        text.split("\n").filter((l) => l.includes("waiting")).length,
        1,
        "one line per hold off a terminal",
      );
      clock.advance(40_000);
      await timers.tickAsync(1000);
      line.heard(request);
      await timers.tickAsync(1000);
      equal(
        text.split("\n").filter((l) => l.includes("waiting")).length,
        1,
        text,
      );
    } finally {
      line.end();
    }
  });
});

Deno.test("at sync's default priority the line says 'waiting for the rate limit' once 810 requests fill the window (issue 45: silent for 149 s at 811 requests)", async () => {
  await withFakeTimers(async (timers) => {
    const clock = manualClock(0);
    const lines: string[] = [];
    const out = {
      isTerminal: false,
      write: (line: string) => void lines.push(line),
    };
    const line = progressLine(out, clock, 0);
    try {
      for (let i = 0; i < 810; i++) line.heard(request);
      clock.advance(259_000);
      await timers.tickAsync(1000);
      const waits = lines.filter((l) => l.includes(holdText(41_000)));
      equal(waits.length, 1, lines.join(""));
    } finally {
      line.end();
    }
  });
});

Deno.test("a 429 holds the line for its Retry-After (20 s: one line at once), not for a 429's backoff without one (at most 1 s: none)", async () => {
  await withFakeTimers(async (timers) => {
    const clock = manualClock(0);
    const lines: string[] = [];
    const out = {
      isTerminal: false,
      write: (line: string) => void lines.push(line),
    };
    const line = progressLine(out, clock, 0);
    const retry = (delayMs: number) =>
      ({ type: "api.retry", status: 429, delayMs }) as PartnerApiEvent;
    try {
      // The client's backoff after a 429 with no Retry-After: 250-500 ms, then 500-1000 ms.
      line.heard(retry(500));
      line.heard(retry(999));
      await timers.tickAsync(1000);
      equal(lines.length, 0, lines.join(""));
      clock.advance(2000);
      line.heard(retry(20_000));
      equal(lines.filter((l) => l.includes(holdText(20_000))).length, 1);
    } finally {
      line.end();
    }
  });
});
