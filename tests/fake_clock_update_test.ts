// Issue 37, friction 2: the fake's data end at its clock's now (a "last 24 h"
// job got 0 rows from data frozen in 2025). Issue 41: the fake changes
// items in place, by hand (`update`) and per request (`churn.update`).

import { deepStrictEqual, equal, ok, throws } from "node:assert/strict";
import fc from "fast-check";
import { inProcess } from "./_sync_fake.ts";
import { createClient } from "../src/client/mod.ts";
import {
  createFakePartnerService,
  startFakePartnerApi,
} from "../src/testing/mod.ts";

type Transaction = {
  transactionID: string;
  creationDate: string;
  amount: number;
  revision?: number;
  updatedAt?: string;
};

const NOW = Date.UTC(2026, 10, 25, 6, 0);
const DAY = 86_400_000;

async function newestFirst(
  api: Awaited<ReturnType<typeof startFakePartnerApi>>,
) {
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  return await Array.fromAsync(client.list<Transaction>("transactions", {
    sortBy: "creationDate",
    sortDirection: "DESC",
    limit: 1000,
  }));
}

Deno.test("the fake's newest items are minutes old by its clock, the oldest months older", async () => {
  await using api = await startFakePartnerApi({ now: () => NOW });
  const items = await newestFirst(api);
  const newest = Date.parse(items[0]!.creationDate);
  const oldest = Date.parse(items.at(-1)!.creationDate);
  ok(newest < NOW && NOW - newest <= 10 * 60_000, items[0]!.creationDate);
  ok(
    NOW - oldest > 90 * DAY && NOW - oldest <= 300 * DAY,
    items.at(-1)!.creationDate,
  );
  const lastDay = items.filter((t) => Date.parse(t.creationDate) >= NOW - DAY);
  ok(lastDay.length > 0, "a 'last 24 hours' job finds rows");
});

Deno.test("the clock moves the dates, never the ids or their order", async () => {
  const orders = [];
  for (const now of [NOW, NOW - 400 * DAY]) {
    await using api = await startFakePartnerApi({ now: () => now });
    orders.push((await newestFirst(api)).map((t) => t.transactionID));
  }
  deepStrictEqual(orders[0], orders[1]);
  // The same order as the data of 0.3, dated in 2025: ids by the same draws.
  deepStrictEqual(orders[0]!.slice(-4), [
    "tx_000178",
    "tx_000244",
    "tx_000041",
    "tx_000234",
  ]);
});

Deno.test("update() changes an item in place and moves it in the orders it sorts by", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 20 } });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const byAmount = () =>
    Array.fromAsync(
      client.list<Transaction>("transactions", { sortBy: "amount" }),
    );
  const before = await byAmount();
  const cheapest = before[0]!;
  equal(
    api.update("transactions", cheapest.transactionID, {
      amount: 1e9,
      status: "settled",
    }),
    true,
  );
  const after = await byAmount();
  equal(after.length, 20);
  const moved = after.at(-1) as Transaction & { status?: string };
  equal(moved.transactionID, cheapest.transactionID);
  equal(moved.status, "settled");
  equal(moved.creationDate, cheapest.creationDate);
  equal(api.update("transactions", "tx_999999", { amount: 1 }), false);
  throws(() => api.update("invoices", "x", {}), TypeError);
  throws(
    () =>
      api.update("transactions", cheapest.transactionID, {
        transactionID: "tx_x",
      }),
    TypeError,
  );
  throws(
    () =>
      api.update("transactions", cheapest.transactionID, {
        amount: {} as never,
      }),
    TypeError,
  );
});

Deno.test("the fake service without a server has update() too", () => {
  const service = createFakePartnerService({ items: { organizations: 2 } });
  equal(
    service.update("organizations", "org_000001", { companyName: "Zeta" }),
    true,
  );
  equal(
    service.update("organizations", "org_000009", { companyName: "Zeta" }),
    false,
  );
});

Deno.test("churn.update changes that many items per list request, in place: revision, updatedAt, amount", async () => {
  await using api = await startFakePartnerApi({
    items: { transactions: 50 },
    churn: { update: 3 },
    now: () => NOW,
  });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const read = () =>
    Array.fromAsync(
      client.list<Transaction>("transactions", {
        sortBy: "transactionID",
        limit: 100,
      }),
    );
  const first = await read();
  const second = await read();
  equal(first.length, 50);
  equal(second.length, 50);
  deepStrictEqual(
    second.map((t) => t.transactionID),
    first.map((t) => t.transactionID),
  );
  const revisions = second.reduce((sum, t) => sum + (t.revision ?? 0), 0);
  equal(revisions, 6, "3 changes per request, 2 requests");
  for (const changed of second.filter((t) => t.revision !== undefined)) {
    equal(changed.updatedAt, new Date(NOW).toISOString());
  }
  throws(
    () => createFakePartnerService({ churn: { update: -1 } }),
    { name: "RangeError", option: "churn.update" },
  );
});

Deno.test("churn.append into an empty list of organizations or cardholders adds items of that list's shape (they were transactions, with an amount and a currency)", async () => {
  const lists = [
    ["organizations", "organizationID", "companyName"],
    ["cardholders", "cardholderID", "name"],
  ] as const;
  for (const [path, idField, words] of lists) {
    await using api = await startFakePartnerApi({
      items: { [path]: 0 },
      churn: { append: 2 },
      now: () => NOW,
    });
    const client = createClient({
      environment: api.environment,
      ...api.credentials,
    });
    await Array.fromAsync(client.list(path)); // the append comes with this read
    const items = await Array.fromAsync(
      client.list<Record<string, unknown>>(path, { sortBy: idField }),
    );
    ok(items.length >= 2);
    for (const item of items) {
      equal(typeof item[idField], "string");
      equal(typeof item[words], "string");
      equal(item.transactionID, undefined);
    }
  }
});

// r213b F1: items the fake added were dated a second apart after its newest, ahead of its clock: 60 inserted at a
// fixed clock ended a minute after it, and a churn's appends crept forward with every request.
Deno.test("items the fake adds (insertTransactions, churn.append) are never dated after its clock, and sort after every item before them, for any clock moves", async () => {
  const step = fc.record({
    move: fc.integer({ min: -3_000, max: 5_000 }), // ms; the clock may step back
    insert: fc.integer({ min: 0, max: 40 }),
  });
  const property = fc.asyncProperty(
    fc.integer({ min: 0, max: 5 }), // churn.append per list request
    fc.array(step, { minLength: 1, maxLength: 6 }),
    async (append, steps) => {
      let now = NOW;
      await using api = await startFakePartnerApi({
        items: { transactions: 5 },
        churn: { append },
        now: () => now,
      });
      const client = createClient({
        environment: api.environment,
        ...api.credentials,
      });
      const read = () =>
        Array.fromAsync(client.list<Transaction>("transactions", {
          sortBy: "transactionID",
          limit: 1000,
        }));
      let before = await read();
      for (const { move, insert } of steps) {
        now += move;
        api.insertTransactions(insert);
        const after = await read();
        const dates = (items: Transaction[]) =>
          items.map((t) => Date.parse(t.creationDate));
        const old = new Set(before.map((t) => t.transactionID));
        const added = dates(after.filter((t) => !old.has(t.transactionID)));
        const latest = Math.max(...dates(before));
        for (const date of added) {
          ok(date <= Math.max(now, latest), `${date - now} ms after the clock`);
          ok(date >= latest, `${latest - date} ms before the newest`);
        }
        before = after;
      }
    },
  );
  await fc.assert(property, { numRuns: 10 });
});

// r214a F6: an item a test put in without a date made the newest NaN, and new items went a day before the newest.
Deno.test("an item put in with a date that does not parse does not move where the fake dates new items", async () => {
  let now = NOW;
  const fake = inProcess({ items: { transactions: 5 }, now: () => now });
  const read = () =>
    Array.fromAsync(
      fake.client.list<Transaction>("transactions", { limit: 100 }),
    );
  fake.service.insert("transactions", { transactionID: "zz_manual" });
  const before = await read();
  now -= DAY;
  fake.service.insertTransactions(3);
  const old = new Set(before.map((t) => t.transactionID));
  const after = await read();
  const latest = Math.max(
    ...before.map((t) => Date.parse(t.creationDate)).filter((d) => !isNaN(d)),
  );
  const added = after.filter((t) => !old.has(t.transactionID));
  equal(added.length, 3);
  for (const t of added) {
    ok(Date.parse(t.creationDate) >= latest, t.creationDate);
  }
  fake.service.close();
});
