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
import { type ManualClock, manualClock, withFakeTimers } from "./_helpers.ts";

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

/** What a progress line (off a terminal, on a manual clock from 0 and fake timers) wrote, a line each. */
interface Watched {
  readonly line: ReturnType<typeof progressLine>;
  readonly clock: ManualClock;
  readonly lines: string[];
  readonly tick: () => Promise<unknown>;
  /** The lines saying the rate limit holds the run. */
  readonly waits: () => string[];
}

function watchLine(
  priority: "high" | "low" | "auto" | undefined,
  run: (watched: Watched) => Promise<void>,
): Promise<void> {
  return withFakeTimers(async (timers) => {
    const clock = manualClock(0);
    const lines: string[] = [];
    const out = {
      isTerminal: false,
      write: (text: string) => void lines.push(text),
    };
    const line = progressLine(out, clock, 0, priority);
    const waits = () => lines.filter((l) => l.includes("waiting"));
    try {
      await run({
        line,
        clock,
        lines,
        tick: () => timers.tickAsync(1000),
        waits,
      });
    } finally {
      line.end();
    }
  });
}

Deno.test("the progress line says 'waiting for the rate limit' with the seconds left while the window is full, and stops saying it once a slot frees", () =>
  watchLine("high", async ({ line, clock, tick, waits }) => {
    for (let i = 0; i < 900; i++) line.heard(request);
    clock.advance(259_000);
    await tick();
    equal(waits().length, 1);
    ok(waits()[0]!.trimEnd().endsWith("waiting for the rate limit, 41 s"));
    clock.advance(10_000);
    await tick();
    equal(waits().length, 1, "one line per hold off a terminal");
    clock.advance(40_000);
    await tick();
    line.heard(request);
    await tick();
    equal(waits().length, 1);
  }));

Deno.test("a verbose line (-v) erases the progress line without stopping it: the rate limit's hold is still said (it went silent at the first -v line)", () =>
  watchLine("high", async ({ line, clock, tick, waits }) => {
    line.clear();
    for (let i = 0; i < 900; i++) line.heard(request);
    clock.advance(259_000);
    await tick();
    equal(waits().length, 1);
  }));

Deno.test("at sync's default priority the line says 'waiting for the rate limit' once 810 requests fill the window (issue 45: silent for 149 s at 811 requests)", () =>
  watchLine(undefined, async ({ line, clock, tick, waits }) => {
    for (let i = 0; i < 810; i++) line.heard(request);
    clock.advance(259_000);
    await tick();
    equal(waits().length, 1);
    ok(waits()[0]!.includes(holdText(41_000)));
  }));

Deno.test("a 429 holds the line for its Retry-After (20 s: one line at once), not for a 429's backoff without one (at most 1 s: none)", () =>
  watchLine(undefined, async ({ line, clock, lines, tick, waits }) => {
    const retry = (delayMs: number) =>
      ({ type: "api.retry", status: 429, delayMs }) as PartnerApiEvent;
    // The client's backoff after a 429 with no Retry-After: 250-500 ms, then 500-1000 ms.
    line.heard(retry(500));
    line.heard(retry(999));
    await tick();
    equal(lines.length, 0);
    clock.advance(2000);
    line.heard(retry(20_000));
    equal(waits().length, 1);
    ok(waits()[0]!.includes(holdText(20_000)));
  }));

Deno.test("off a terminal the first progress line comes a second into the run: a shorter run says only its result, which the line at its start contradicted (2 requests, then 3 in the result)", () =>
  withFakeTimers(() => {
    const started = Date.UTC(2026, 10, 30, 4);
    const clock = manualClock(started);
    const lines: string[] = [];
    const out = {
      isTerminal: false,
      write: (text: string) => lines.push(text),
    };
    const line = progressLine(out, clock, started);
    const counts = {
      written: 0,
      pages: 1,
      inserted: 0,
      updated: 0,
      deleted: 0,
    };
    try {
      // The head found nothing new; the sweep's commit came 200 ms later.
      line.update({ ...counts, read: 0, requests: 2 });
      clock.advance(200);
      line.update({ ...counts, read: 500, requests: 3 });
      equal(lines.length, 0, lines.join(""));
      clock.advance(900);
      line.update({ ...counts, read: 600, requests: 4 });
      equal(lines.length, 1);
      ok(lines[0]!.startsWith("600 items read"), lines[0]);
      ok(lines[0]!.trimEnd().endsWith("4 requests"), lines[0]);
    } finally {
      line.end();
    }
    return Promise.resolve();
  }));
