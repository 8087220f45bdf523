// A run with `sweep: Infinity` ends, however the list answers: one answered with another list whose items sort before
// the cycle's end, growing as fast as its short last page is read again, read that page for ever (the sweep property
// test found it: 2,500 requests and counting).

import { ok } from "node:assert/strict";
import { SyncError, syncList } from "../src/sync/mod.ts";
import { inProcess, memorySink } from "./_sync_fake.ts";

Deno.test("sweep: Infinity stops reading a short last page that grows as fast as it is read again (another list's answer): the run ends, its cycle under way", async () => {
  const fake = inProcess({ items: { transactions: 40 } });
  const sink = memorySink<Record<string, unknown>>();
  const options = {
    id: "transactionID",
    limit: 5,
    maxLimit: 25,
    sink,
    maxDeletes: 1,
  };
  await syncList(fake.client, "transactions", { ...options, sweep: Infinity });
  let sweeping = false;
  const first = fake.listRequests;
  fake.beforeList = () => fake.service.insertTransactions(2);
  // Once the sweep writes, every page is another list's: the same items, ids before every id of the copy.
  fake.afterList = (items) =>
    sweeping
      ? items.map((item) => ({
        ...item,
        transactionID: `f${item.transactionID}`,
      }))
      : [...items];
  const watched = {
    ...sink,
    write: (...args: Parameters<typeof sink.write>) => {
      sweeping ||= args[3]?.phase === "sweep";
      return sink.write(...args);
    },
  };
  await syncList(fake.client, "transactions", {
    ...options,
    sink: watched,
    sweep: Infinity,
  })
    .catch((error) => ok(error instanceof SyncError));
  ok(
    fake.listRequests - first < 1_000,
    `${fake.listRequests - first} requests`,
  );
  fake.service.close();
});
