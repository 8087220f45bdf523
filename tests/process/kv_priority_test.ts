// Issue 47 on one KV file: live traffic first across real processes. One
// process crawls in the background (`priority: "low"`, 4 callers at once),
// two send live calls once the crawl fills its share of the window. By the
// fake's count: the crawl never holds the last `reserve` slots of any
// window, every live call is served while the crawl still has calls to
// send (none queued behind it), and 0 x 429.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { runKvRateWorkers, scratchDir } from "./_fleet.ts";
import { mostInAnyWindow } from "../_windows.ts";
import { processTest } from "../_processes.ts";

const LIMIT = { requests: 20, interval: 1000 };
/** The limiters' default reserve for that limit. */
const RESERVE = 2;
/** Live calls of each live process, and the crawl's calls. */
const EACH = 8;
const CRAWL = 80;

processTest(
  "priorities across 3 processes on KV: a background crawl never holds the last reserve slots of a window, and live calls of two other processes are served before the crawl ends, 0 x 429, by the fake's count",
  async () => {
    const dir = await scratchDir();
    const arrivals: { at: number; live: boolean; status: number }[] = [];
    try {
      await using api = await startFakePartnerApi({
        apiRateLimit: LIMIT,
        items: { transactions: 10 },
        onRequest: ({ path, status }) => {
          if (!path.startsWith("/api/")) return;
          const live = path.startsWith("/api/organizations");
          arrivals.push({ at: Date.now(), live, status });
        },
      });
      const startAt = Date.now() + 2500;
      const low = {
        ...configFor(api),
        PARTNER_API_PRIORITY: "low",
        PARTNER_API_PARALLEL: "4",
      };
      // The live ones start once the crawl has filled its first window.
      const live = { ...configFor(api), PARTNER_API_DELAY: "1200" };
      await runKvRateWorkers(dir, { startAt, each: EACH, limit: LIMIT }, [
        { ...low, PARTNER_API_EACH: String(CRAWL) },
        live,
        live,
      ]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
    const background = arrivals.filter(({ live }) => !live);
    const calls = arrivals.filter(({ live }) => live);
    const lastLive = arrivals.lastIndexOf(calls.at(-1)!);
    const crawlAfter = arrivals.slice(lastLive).filter(({ live }) => !live);
    const most = mostInAnyWindow(
      background.map(({ at }) => at),
      LIMIT.interval,
    );
    console.log(
      `${background.length} background and ${calls.length} live calls; at most ${most} background in a window; ${crawlAfter.length} background calls after the last live one`,
    );
    equal(arrivals.filter(({ status }) => status === 429).length, 0, "no 429");
    equal(calls.length, 2 * EACH);
    ok(most <= LIMIT.requests - RESERVE, "the crawl left the reserve free");
    ok(
      crawlAfter.length > 0,
      "every live call served while the crawl had calls left",
    );
  },
);
