// Issue 37, friction 1: "since" from the command line. `--since FIELD=VALUE`
// reads newest first by FIELD and stops at the first older item, with no
// page after it; the CSV it writes ends its lines in CRLF, as --help says.

import { deepStrictEqual, equal, match, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { createClient } from "../src/client/mod.ts";
import { configFor, listSince, run } from "./_cli_helpers.ts";
import { since } from "../src/cli/_list_plan.ts";

type Transaction = { transactionID: string; creationDate: string };

Deno.test("list --since FIELD=VALUE prints the newer items, newest first, and stops at the first older one", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 500 } });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const newest = await Array.fromAsync(
    client.list<Transaction>("transactions", {
      sortBy: "creationDate",
      sortDirection: "DESC",
      maxItems: 200,
    }),
  );
  const cut = newest[119]!.creationDate; // 120 items at or after it
  const before = api.apiRequests;
  const result = await listSince(api, cut, [
    "--limit",
    "50",
    "--format",
    "jsonl",
  ]);
  equal(result.code, 0, result.stderr);
  const ids = result.stdout.trim().split("\n").map((line) =>
    (JSON.parse(line) as Transaction).transactionID
  );
  deepStrictEqual(ids, newest.slice(0, 120).map((t) => t.transactionID));
  equal(api.apiRequests - before, 3, "pages 1 to 3, none after the cut");
});

Deno.test("list --since writes CSV whose every line ends in CRLF, as the help says", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 30 } });
  const result = await listSince(api, "2000-01-01", [
    "--format",
    "csv",
    "--fields",
    "transactionID,creationDate",
  ]);
  equal(result.code, 0, result.stderr);
  ok(result.stdout.endsWith("\r\n"));
  equal(
    result.stdout.split("\r\n").length,
    32,
    "a header, 30 rows, and the end",
  );
  equal(result.stdout.replaceAll("\r\n", "").includes("\n"), false);
  const help = await run(["list", "--help"]);
  match(help.stdout, /CRLF/);
  // --limit read like a total: it is the size of each page.
  match(
    help.stdout,
    /--limit N +items per page, the size of each request, not a\s+total/,
  );
});

Deno.test("--since is refused with another sort, an ascending order, or no FIELD=VALUE", async () => {
  await using api = await startFakePartnerApi();
  for (
    const flags of [
      ["--since", "creationDate=2026-01-01", "--sort-by", "amount"],
      ["--since", "creationDate=2026-01-01", "--sort-direction", "ASC"],
      ["--since", "creationDate"],
      ["--since", "=2026"],
    ]
  ) {
    const result = await run(
      ["list", "transactions", ...flags, "--no-cache"],
      configFor(api),
    );
    equal(result.code, 2, flags.join(" "));
    match(result.stderr, /--since/);
  }
  equal(api.apiRequests, 0);
});

Deno.test("--since compares dates as instants (UTC unless zoned), numbers as numbers, and stops at an item without the field", () => {
  const { until: day } = since("creationDate=2026-11-24");
  equal(day({ creationDate: "2026-11-24T00:00:00.000Z" }), false);
  equal(day({ creationDate: "2026-11-23T23:59:59.999Z" }), true);
  const { until: zoned } = since("creationDate=2026-11-24T01:00:00+01:00");
  equal(zoned({ creationDate: "2026-11-24T00:00:00Z" }), false);
  const { until: local } = since("creationDate=2026-11-24T00:00:00");
  equal(local({ creationDate: "2026-11-24T00:00:00.000Z" }), false);
  const { until: amount } = since("amount=10");
  equal(amount({ amount: 9.5 }), true);
  equal(amount({ amount: 100 }), false);
  equal(amount({ other: 1 }), true);
});
