// `--since FIELD=DATE` refuses a date that does not exist or lies beyond
// year 9999 (issue 45: month 13 listed 0 items, +275760 stopped nothing; a
// zone moved 9999-12-31T23:00:00-14:00 into 10000), or a value neither a date
// nor a number (abc, 2026-W01: 0 items; 11/01/2026: all), with exit 2 and one
// line, before any request; real dates still work. A number against a field
// of dates (20261101, compared as text, listed 0 items), or a date against
// one of numbers, exits 2 at the first item, before it is written.

import { equal, ok, throws } from "node:assert/strict";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { listSince } from "./_cli_helpers.ts";
import { since } from "../src/cli/_list_plan.ts";
import { UsageError } from "../src/cli/_flag_values.ts";

Deno.test("list --since refuses dates that do not exist or lie beyond 9999, and values neither a date nor a number (exit 2, one line, no request), and takes real ones", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 5 } });
  const refused = [
    "2026-13-01",
    "2026-00-10",
    "2026-02-30",
    "2025-02-29",
    "2026-04-31",
    "2026-11-24T25:00:00Z",
    "+275760-09-13",
    "10000-01-01",
    "-000001-01-01",
    "9999-12-31T23:00:00-14:00",
    "0000-01-01T00:00:00+01:00",
    // Neither an ISO 8601 date (extended format) nor a number: listed 0 items, or all.
    "20261101T000000Z",
    "2026-W01",
    "11/01/2026",
    "2026-11-01T10",
    "abc",
    "1e3",
    // Past nanoseconds: read as milliseconds, the rest silently dropped.
    "2026-11-01T00:00:00.1234567891Z",
  ];
  for (const date of refused) {
    const result = await listSince(api, date, []);
    equal(result.code, 2, `${date}: ${result.stderr}`);
    equal(result.stderr.trim().split("\n").length, 1, result.stderr);
  }
  equal(api.apiRequests + api.tokenRequests, 0, "refused before any request");
  const real = ["2024-02-29", "2000-02-29", "2026-11-24T00:00:00.123456789Z"];
  for (const date of [...real, "9999-12-31T23:59:59.999Z", "0000-01-01"]) {
    const result = await listSince(api, date, ["--format", "jsonl"]);
    equal(result.code, 0, `${date}: ${result.stderr}`);
  }
});

Deno.test("list --since refuses a number against a field of dates (exit 2, one line saying how to write it, no item)", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 30 } });
  for (const [value, written] of [["20261101", "2026-11-01"], ["1"]]) {
    const result = await listSince(api, value!, ["--format", "jsonl"]);
    equal(result.code, 2, result.stderr);
    equal(result.stdout, "");
    equal(result.stderr.trim().split("\n").length, 1, result.stderr);
    ok(result.stderr.includes(written ?? "e.g. 2026-11-24"), result.stderr);
  }
  equal(api.apiRequests, 2, "the first page of each shows the mismatch");
});

Deno.test("--since refuses a date against a field of numbers, and compares a compact date with numbers as a number", () => {
  const { until: date } = since("amount=2026-11-01");
  throws(() => date({ amount: 1_764_547_200_000 }), UsageError);
  const { until: number } = since("amount=20261101");
  equal(number({ amount: 20261100 }), true);
  equal(number({ amount: 20261102 }), false);
});
