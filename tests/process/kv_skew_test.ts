// Issue 38, clocks: real processes on one KV file whose clocks disagree
// (each limiter's `now` is its process's clock moved by minutes), against
// the fake's own limit (no Retry-After). KV has no clock of its own, so the
// KV limiter must not trust another member's stamps: on the previous
// version a member 10 minutes behind or ahead met 20 x 429 and left the
// others' last calls to time out, and one an hour ahead that met one 429
// blocked the whole fleet for the hour. Nor does skew cost throughput:
// with 4 callers in each process, the windows of the fake before the last
// two (where the crawl ends) hold at least 0.9 of the limit on average, counted by the fake (was 59 of 80 calls in 15 s:
// a turn that came with slots to spare took one and slept an interval).

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { runKvRateWorkers, scratchDir } from "./_fleet.ts";
import { checkPacedFleet } from "../_windows.ts";
import { processTest } from "../_processes.ts";

const LIMIT = { requests: 20, interval: 1000 };
const EACH = 15;
const MINUTE = 60_000;
/** Calls a window before the crawl's end holds on average at least: 18 of the limit's 20 (nine tenths). */
const FULL_WINDOW = 18;

/**
 * Runs one process per entry of `skews` (ms its clock is off) on one KV
 * file, each sending EACH requests; `refuses` tells the first of them one
 * 429 before it starts. Returns what reached the fake and what each said.
 */
async function skewedFleet(
  skews: number[],
  refuses = false,
  callers = 1,
  each = EACH,
) {
  const dir = await scratchDir();
  const arrivals: { at: number; status: number }[] = [];
  try {
    await using api = await startFakePartnerApi({
      apiRateLimit: LIMIT,
      onRequest: ({ path, status }) => {
        if (path.startsWith("/api/")) arrivals.push({ at: Date.now(), status });
      },
    });
    const startAt = Date.now() + 2500;
    const envs = skews.map((skew, i) => ({
      ...configFor(api),
      PARTNER_API_SKEW: String(skew),
      PARTNER_API_PARALLEL: String(callers),
      ...(refuses && i === 0 ? { PARTNER_API_REFUSED: "1" } : {}),
    }));
    const lines = await runKvRateWorkers<
      { degraded: number; refused: number }
    >(dir, { startAt, each, limit: LIMIT }, envs);
    return { arrivals, lines };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

processTest(
  "KV members skewed by up to 10 minutes: 4 processes on one KV file (clocks 10 minutes behind, on time, 3 and 10 minutes ahead), 4 callers each, meet 0 x 429, never more than the limit in a window by the fake's clock, and at least 0.9 of it per window before the crawl's end",
  async () => {
    const skews = [-10 * MINUTE, 0, 3 * MINUTE, 10 * MINUTE];
    const { arrivals, lines } = await skewedFleet(skews, false, 4, 2 * EACH);
    checkPacedFleet({
      what: `${skews.length} processes on KV, clocks skewed by up to 10 min`,
      arrivals,
      sent: skews.length * 2 * EACH,
      limit: LIMIT,
    });
    for (const line of lines) equal(line.degraded, 0, "none paced alone");
    const start = arrivals[0]!.at;
    const perWindow: number[] = [];
    for (const { at } of arrivals) {
      const window = Math.floor((at - start) / LIMIT.interval);
      perWindow[window] = (perWindow[window] ?? 0) + 1;
    }
    console.log(`calls per window of the fake: ${perWindow.join(", ")}`);
    // The windows before the crawl's end, together (one may dip on a busy
    // machine and the next make up for it): at least FULL_WINDOW each.
    const full = Array.from(perWindow.slice(0, -2), (count) => count ?? 0);
    ok(
      full.reduce((sum, count) => sum + count, 0) >= FULL_WINDOW * full.length,
      `${full.join(", ")} in ${full.length} windows of ${LIMIT.requests}`,
    );
  },
);

processTest(
  "KV members skewed: one process an hour ahead that meets a 429 holds the fleet for one slot's share of the interval, not the hour: every request of 3 processes is sent, 0 x 429",
  async () => {
    const skews = [60 * MINUTE, 0, -5 * MINUTE];
    const { arrivals, lines } = await skewedFleet(skews, true);
    checkPacedFleet({
      what: `${skews.length} processes on KV, one an hour ahead refused once`,
      arrivals,
      sent: skews.length * EACH,
      limit: LIMIT,
    });
    for (const line of lines) equal(line.refused, 0);
  },
);
