// The rule that judges a JSONL sink's writes without lock(), by the sink's own events: what a write's caller saw of
// the copy, and what changed since (outside reviews r100 to r104).

import { equal } from "node:assert/strict";
import { UnlockedWrites } from "../src/sync/_unlocked_writes.ts";

Deno.test("a write without lock() stands while the copy changed only by writes in line since its caller saw it, and none of them failed since its caller's last load()", () => {
  const writes = new UnlockedWrites();
  const blind = writes.sighting(); // never seen: judged from its call
  writes.checked("L0");
  writes.loaded();
  const first = writes.sighting();
  writes.checked("L0"); // a write's turn, the copy as loaded
  writes.committed("L1", false);
  const second = writes.sighting();
  equal(writes.refusal(first), undefined); // the write before it in line
  writes.checked("L2"); // another run committed
  equal(writes.refusal(first), "changed");
  equal(writes.refusal(second), "changed");
  equal(writes.refusal(blind), "changed");
  writes.loaded(); // its caller saw that
  const third = writes.sighting();
  equal(writes.refusal(third), undefined);
  writes.committed("L3", true); // the sink under its lock()
  equal(writes.refusal(third), "changed");
  equal(writes.refusal(writes.sighting()), undefined);
  writes.failed();
  equal(writes.refusal(writes.sighting()), "failed"); // called since: it may count the failed write's items
  writes.checked("L3");
  writes.loaded();
  equal(writes.refusal(writes.sighting()), undefined);
});
