// `partner-api sync`'s progress line says when the rate limit holds the run
// (issue 45: at 900 requests per 5 minutes the tool sat 300 s with no line).
// The hold is a pure function of what was sent and the time; the line is
// driven with fake timers and a manual clock, no socket.

import { equal, ok } from "node:assert/strict";
import {
  heard,
  holdText,
  progressLine,
  rateHold,
  type RateState,
} from "../src/cli/_sync_progress.ts";
import type { PartnerApiEvent } from "../src/core/events.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";

const limit = { requests: 900, interval: 300_000 };
const request = { type: "api.request" } as PartnerApiEvent;

Deno.test("rateHold: nothing holds a window that is not full; a full one holds until its oldest send leaves it; a 429 until its wait ends", () => {
  const state: RateState = { sends: [], retryUntil: 0 };
  for (let at = 0; at < 899; at++) heard(state, request, at, limit);
  equal(rateHold(state, 1000, limit), 0);
  heard(state, request, 1000, limit);
  equal(rateHold(state, 1000, limit), 299_000);
  for (let at = 1001; at < 1100; at++) heard(state, request, at, limit);
  equal(state.sends.length, 900, "memory stays one window");
  equal(rateHold(state, 260_000, limit), 300_099 - 260_000);
  equal(rateHold(state, 400_000, limit), 0);
  const retry = { type: "api.retry", status: 429, delayMs: 41_000 };
  heard(state, retry as PartnerApiEvent, 400_000, limit);
  equal(rateHold(state, 400_000, limit), 41_000);
  equal(holdText(40_200), "waiting for the rate limit, 41 s");
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
