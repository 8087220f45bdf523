// deno task bench
//
// Finding the edge again (issue 45): on a list of 100,000 items read in
// windows of 1,000, with nothing new and sweep 0, after 1 %, 10 % and 30 %
// of the items just behind the copy's end were removed: the list requests
// the run makes, beside log2 of the windows removed (the gallop out and the
// bisection back are each about that many). Goal: at most 12 after 30 %.
// Counts, not times: the same on any machine.

import { syncList } from "../src/sync/mod.ts";
import { probeAt } from "../src/sync/_window_plan.ts";
import { listOf, memorySink, type Thing, things } from "./_sync_fake.ts";

const ITEMS = 100_000;
const WINDOW = 1000;

for (const share of [0.01, 0.1, 0.3]) {
  let items = things(ITEMS, { step: 10 });
  const service = listOf(() => items);
  const sink = memorySink<Thing>();
  const options = { id: "thingID", sink, maxLimit: WINDOW, sweep: 0 };
  await syncList(service.client, "things", options);
  const removed = share * ITEMS;
  const edge = ITEMS - WINDOW;
  items = [...items.slice(0, edge - removed), ...items.slice(edge)];
  const before = service.requests;
  await syncList(service.client, "things", options);
  const spent = service.requests - before;
  const log = Math.log2(removed / WINDOW);
  console.log(
    `edge after ${
      share * 100
    } % of ${ITEMS} removed: ${spent} list requests (log2 of the ${
      removed / WINDOW
    } windows removed: ${log.toFixed(1)}; ${
      (spent / Math.max(1, log)).toFixed(1)
    }× it; goal ≤ 12) ${spent <= 12 ? "met" : "NOT MET"}`,
  );
}

Deno.bench({
  name: "probeAt, bisecting 30,000 items",
  fn: () => void probeAt({ low: 68_000, high: 98_000, probes: 5 }, WINDOW),
});
