// Fair turns for processes with few callers beside one with many: the rules (KV runs them; the Redis script is them,
// tests/redis/redis_rate_rules_parity_test.ts) over simulated fleets in which each process asks for as many sends as
// it has callers waiting, as FleetRateLimiter does. When a window's roll freed many slots at once, a process with many
// callers took every one but the one the other's place kept, one a turn at a round trip each, while the other slept to
// its turn: on Redis, 2 callers beside 50 got 2 sends a window of 20. Now, while others wait in line, a process is
// granted a send a slot's share after its last at the soonest.

import fc from "fast-check";
import {
  answerSends,
  emptyState,
  slotShare,
  takeTurn,
  type WindowState,
} from "../src/store/_window_rules.ts";
import { checkFairFleet } from "./_windows.ts";

/** Sends per process over a simulated fleet of `callers[p]` callers each, for 20 intervals after the first. */
function simulate(callers: readonly number[], latency: number) {
  const limit = { requests: 20, interval: 1000 };
  const end = 21 * limit.interval;
  let state: WindowState = emptyState("e");
  const waiting = [...callers], lastGrant = callers.map(() => -Infinity);
  /** Whether the process has an ask on the queue (its limiter asks again after the wait it was given). */
  const asking = callers.map(() => true);
  // Events: [ms, process, a send to answer, or "" to ask].
  const queue: [number, number, string][] = callers.map((_, p) => [p, p, ""]);
  const spans: [number, number][] = [];
  const counts = callers.map(() => 0);
  while (queue.length > 0) {
    queue.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    const [now, p, send] = queue.shift()!;
    if (now > end) break;
    if (send !== "") {
      state = answerSends(state, [[send, now, -1]]);
      spans[Number(send.split(":")[1])]![1] = now;
      waiting[p]!++;
      if (asking[p]) continue;
    }
    const sends = Array.from(
      { length: Math.min(waiting[p]!, 64) },
      (_, i) => `${p}:${spans.length + i}`,
    );
    const turn = takeTurn(
      state,
      {
        holder: String(p),
        sends,
        epoch: "e",
        returning: false,
        low: true,
        spacedUntil: lastGrant[p]! + slotShare(limit),
      },
      now,
      limit,
    );
    state = turn.state;
    for (const granted of sends.slice(0, turn.granted)) {
      spans.push([now, now + latency]);
      queue.push([now + latency, p, granted]);
      if (now >= limit.interval) counts[p]!++;
    }
    if (turn.granted > 0) lastGrant[p] = now;
    waiting[p]! -= turn.granted;
    asking[p] = waiting[p]! > 0;
    if (asking[p]) queue.push([now + Math.max(1, turn.wait), p, ""]);
  }
  return { spans, counts, limit };
}

Deno.test("simulated fleets of processes with 2 to 50 callers each: never more than the limit in any window, and each process at least 1/(2N) of the sends", () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 2, max: 50 }), { minLength: 2, maxLength: 4 }),
      fc.integer({ min: 1, max: 60 }),
      (callers, latency) => {
        const { spans, counts, limit } = simulate(callers, latency);
        checkFairFleet(spans, counts, limit);
      },
    ),
    { numRuns: 100, seed: 45 },
  );
});
