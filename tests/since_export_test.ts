// Issue 37, done when: a nightly "since yesterday" export, from the command
// line and from code, returns exactly the last day's transactions from the
// fake, newest first, with 1 list request per 1,000 items (and the one page
// that holds the first older item).

import { deepStrictEqual, equal } from "node:assert/strict";
import { createClient } from "../src/client/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { listSince } from "./_cli_helpers.ts";
import { manualClock } from "./_helpers.ts";

type Transaction = { transactionID: string; creationDate: string };
const HOUR = 3_600_000;
const LIMIT = 1000;

/** A fake whose last day is busy: its data, then 2,500 transactions an hour ago. */
async function busyDay() {
  const clock = manualClock();
  const api = await startFakePartnerApi({
    now: clock,
    items: { transactions: 3000 },
  });
  api.insertTransactions(2500); // one a second, from now on
  clock.advance(HOUR);
  const since = new Date(clock() - 24 * HOUR).toISOString();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const all = await Array.fromAsync(client.list<Transaction>("transactions", {
    sortBy: "creationDate",
    sortDirection: "DESC",
    limit: LIMIT,
  }));
  const lastDay = all.filter((t) =>
    Date.parse(t.creationDate) >= Date.parse(since)
  );
  return { api, client, since, lastDay };
}

Deno.test("since yesterday, from code: the last day's transactions, newest first, 1 request per 1,000", async () => {
  const { api, client, since, lastDay } = await busyDay();
  await using _ = api;
  equal(lastDay.length > 2500, true, `${lastDay.length} in the last day`);
  const before = api.apiRequests;
  const exported = await Array.fromAsync(
    client.list<Transaction>("transactions", {
      sortBy: "creationDate",
      sortDirection: "DESC",
      limit: LIMIT,
      until: (transaction) => transaction.creationDate < since,
    }),
  );
  deepStrictEqual(exported, lastDay);
  equal(api.apiRequests - before, Math.ceil((lastDay.length + 1) / LIMIT));
});

Deno.test("since yesterday, from the CLI: the same rows as CSV, 1 request per 1,000", async () => {
  const { api, since, lastDay } = await busyDay();
  await using _ = api;
  const before = api.apiRequests;
  const result = await listSince(api, since, [
    "--limit",
    String(LIMIT),
    "--format",
    "csv",
    "--fields",
    "transactionID,creationDate",
  ]);
  equal(result.code, 0, result.stderr);
  const [header, ...rows] = result.stdout.split("\r\n").filter((line) =>
    line !== ""
  );
  equal(header, "transactionID,creationDate");
  deepStrictEqual(
    rows,
    lastDay.map((t) => `${t.transactionID},${t.creationDate}`),
  );
  equal(api.apiRequests - before, Math.ceil((lastDay.length + 1) / LIMIT));
});
