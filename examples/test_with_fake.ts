// How to test your own code against the fake service.
//
//   deno test --allow-net=127.0.0.1 examples/test_with_fake.ts

import { equal } from "node:assert/strict";
import { createClient } from "@partner-api/client";
import { startFakePartnerApi } from "@partner-api/client/testing";
import { listNewestTransactions } from "./list_transactions.ts";

Deno.test("listNewestTransactions() writes the newest first on one token", async () => {
  // `await using` closes the fake when the test ends, so no server leaks.
  await using api = await startFakePartnerApi({ items: { transactions: 75 } });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const lines: string[] = [];
  equal(
    await listNewestTransactions(client, 60, (line) => lines.push(line)),
    60,
  );
  const dates = lines.map((line) => JSON.parse(line).creationDate);
  equal(dates.join(), dates.toSorted().reverse().join());
  equal(api.tokenRequests, 1);
});

Deno.test("a failing token endpoint fails the call with a typed error", async () => {
  await using api = await startFakePartnerApi();
  api.injectTokenFaults({ kind: "status", status: 400 });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const response = client.fetch("organizations");
  await response.then(
    () => {
      throw new Error("expected a failure");
    },
    (error: Error) => equal(error.name, "TokenRequestError"),
  );
});
