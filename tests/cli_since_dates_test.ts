// `--since FIELD=DATE` refuses a date that does not exist or lies beyond
// year 9999 (issue 45: month 13 listed 0 items, +275760 stopped nothing),
// with exit 2 and one line, before any request; real dates still work.

import { equal } from "node:assert/strict";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { listSince } from "./_cli_helpers.ts";

Deno.test("list --since refuses dates that do not exist or lie beyond 9999 (exit 2, one line, no request), and takes real ones", async () => {
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
  ];
  for (const date of refused) {
    const result = await listSince(api, date, []);
    equal(result.code, 2, `${date}: ${result.stderr}`);
    equal(result.stderr.trim().split("\n").length, 1, result.stderr);
  }
  equal(api.apiRequests, 0, "refused before any request");
  for (const date of ["2024-02-29", "2000-02-29", "2026-11-24T00:00:00Z"]) {
    const result = await listSince(api, date, ["--format", "jsonl"]);
    equal(result.code, 0, `${date}: ${result.stderr}`);
  }
});
