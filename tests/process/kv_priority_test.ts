// Issue 47 on one KV file: live traffic first across real processes. One
// process crawls in the background (`priority: "low"`, 4 callers at once),
// two send live calls once the crawl fills its share of the window. By the
// fake's count: the crawl never holds the last `reserve` slots of any
// window, every live call is served while the crawl still has calls to
// send (none queued behind it), and 0 x 429.

import { configFor } from "../_cli_helpers.ts";
import { runKvRateWorkers, scratchDir } from "./_fleet.ts";
import { PRIORITY_FLEET, runPriorityFleet } from "../_windows.ts";
import { processTest } from "../_processes.ts";

const LIMIT = PRIORITY_FLEET.limit;
/** Live calls of each live process, and the crawl's calls. */
const EACH = 8;
const CRAWL = 80;

processTest(
  "priorities across 3 processes on KV: a background crawl never holds the last reserve slots of a window, and live calls of two other processes are served before the crawl ends, 0 x 429, by the fake's count",
  async () => {
    const dir = await scratchDir();
    try {
      await runPriorityFleet(2 * EACH, async (api) => {
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
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
