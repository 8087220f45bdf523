// docs/sync.md's freshness table, from the cost function the code itself
// uses (`nextVerified`'s, which says when a copy will next be verified): a
// cycle of n items costs ⌈n / window⌉ + 1 list requests, one more when its
// last page comes back short and is read again; a `sweep: Infinity` run pays
// its head on top (nothing new: at most 2). The table's figures were written
// by hand before and drifted (a cycle of 10,000 items was "10 requests", and a
// `sweep: Infinity` run of it "12 at most" where one took 13); this test
// computes every cell, holds the doc's table to it, header included, and
// measures a `sweep: Infinity` run of the first row against its cell. It lives
// here because the process tests may read docs/.

import { deepEqual, ok } from "node:assert/strict";
import { nextVerified } from "../../src/sync/_checkpoint.ts";
import {
  createSqliteSink,
  type SyncCheckpoint,
  syncList,
} from "../../src/sync/mod.ts";
import { inProcess } from "../_sync_fake.ts";

/** The service's limit: 900 requests per 5 minutes. */
const LIMIT = 900;
/** The page size the service accepts. */
const WINDOW = 1000;
/** Minutes between runs. */
const EVERY = 5;
/** The copies' sizes, one row each. */
const SIZES = [10_000, 100_000, 1_000_000];
/** The `sweep` budgets of the table's columns. */
const SWEEPS = [10, 50];
/** A head with nothing new: at most 2 list requests (docs/sync.md, "Incremental"). */
const IDLE_HEAD = 2;

/** Requests of a cycle of `n` items: at least, and with its short last page confirmed. */
function cycleCost(n: number): { least: number; most: number } {
  // The code's own: a copy of n items in windows of WINDOW, no cycle under
  // way, read at one request per ms from 0, is next verified whole when that
  // cycle's requests are spent.
  const copy = { offset: n, accepted: WINDOW } as SyncCheckpoint;
  const least = nextVerified(copy, { requests: 1, span: 1, now: 0 })
    .nextVerifiedAt!;
  return { least, most: least + 1 };
}

/** The table as docs/sync.md should show it: header, then a row per size. */
function freshnessTable(): string[][] {
  const header = [
    "items",
    "one cycle (requests)",
    ...SWEEPS.map((sweep) =>
      `\`sweep\` ${sweep} (${share(sweep)} of the limit)`
    ),
    "`sweep: Infinity`",
  ];
  return [header, ...SIZES.map(row)];
}

function row(n: number): string[] {
  const { least, most } = cycleCost(n);
  const runs = (sweep: number) => Math.ceil(most / sweep);
  const whole = most + IDLE_HEAD;
  return [
    count(n),
    `${count(least)} or ${count(most)}`,
    ...SWEEPS.map((sweep) =>
      `${runs(sweep)} ${runs(sweep) === 1 ? "run" : "runs"}: within ${
        minutes(2 * EVERY * runs(sweep))
      }`
    ),
    whole <= LIMIT
      ? `${count(whole)} a run at most (${share(whole)} of the limit)`
      : `${count(whole)} a run: more than the limit allows in 5 min`,
  ];
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}

function share(requests: number): string {
  return `${(requests / LIMIT * 100).toFixed(1)} %`;
}

function minutes(total: number): string {
  return total <= 120 ? `${total} min` : `${(total / 60).toFixed(1)} h`;
}

/** The cells of the first table after `heading` in `markdown`, without its rule line. */
function tableAfter(markdown: string, heading: string): string[][] {
  const lines = markdown.split("\n");
  const from = lines.indexOf(heading);
  if (from < 0) throw new Error(`no heading ${heading}`);
  const rows: string[][] = [];
  for (const line of lines.slice(from + 1)) {
    if (!line.startsWith("|")) {
      if (rows.length > 0) break;
      continue;
    }
    const cells = line.slice(1, -1).split("|").map((cell) => cell.trim());
    if (cells.every((cell) => /^:?-+:?$/.test(cell))) continue;
    rows.push(cells);
  }
  return rows;
}

Deno.test("docs/sync.md's freshness table is the cost function's: ⌈n / window⌉ + 1 requests a cycle, + 1 for a short last page confirmed, and a sweep: Infinity run pays its idle head (2) on top", async () => {
  const doc = await Deno.readTextFile("docs/sync.md");
  deepEqual(
    tableAfter(doc, "### The freshness bound, with figures"),
    freshnessTable(),
  );
});

Deno.test("a sweep: Infinity run of the table's first row costs at most what its cell says, head included", async () => {
  const [n] = SIZES as [number];
  const fake = inProcess({ items: { transactions: n } });
  using sink = createSqliteSink(":memory:", { table: "transactions" });
  const options = { id: "transactionID", sortBy: "creationDate", sink };
  await syncList(fake.client, "transactions", options);
  const before = fake.listRequests;
  const run = await syncList(fake.client, "transactions", {
    ...options,
    sweep: Infinity,
  });
  const cell = tableAfter(
    await Deno.readTextFile("docs/sync.md"),
    "### The freshness bound, with figures",
  )[1]?.at(-1);
  const stated = Number(
    /^([\d,]+) a run/.exec(cell ?? "")?.[1]?.replaceAll(",", ""),
  );
  ok(
    run.requests <= stated,
    `${run.requests} requests, the table says ${cell}`,
  );
  ok(run.requests >= cycleCost(n).least, `${run.requests}: a whole cycle`);
  deepEqual(fake.listRequests - before, run.requests);
});

// `deno run tests/process/sync_doc_costs_test.ts` prints the table to paste.
if (import.meta.main) {
  for (const cells of freshnessTable()) console.log(`| ${cells.join(" | ")} |`);
}
