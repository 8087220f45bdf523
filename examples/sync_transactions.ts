// Keeps a SQLite copy of the transactions true: one sync now, then one
// every minute. On Deno Deploy (or with --unstable-cron) it is a Deno.cron
// job; elsewhere a plain loop. Each run reads what is new, then SWEEP list
// requests of what the copy holds (changed, back-dated and deleted items
// reach it within the bound it prints); a run that is killed is resumed by
// the next.
//
//   deno run --env-file=.env --allow-env='PARTNER_API_*' \
//     --allow-net=<token host>,<api host> \
//     --allow-read=. --allow-write=. \
//     examples/sync_transactions.ts [transactions.db]

import {
  configFromEnv,
  createClient,
  type PartnerClient,
} from "@partner-api/client";
import { DatabaseSync } from "node:sqlite";
import {
  createSqliteSink,
  syncList,
  type SyncResult,
} from "@partner-api/client/sync";

/** List requests each run spends reading the copy again: 1,000 items each. */
export const SWEEP = 10;

/** Brings the copy in `database` up to date with the service's transactions. */
export async function syncTransactions(
  client: PartnerClient,
  database: string,
): Promise<SyncResult & { items: number }> {
  using sink = createSqliteSink(database, { table: "transactions" });
  const result = await syncList(client, "transactions", {
    id: "transactionID",
    sortBy: "creationDate",
    sink,
    sweep: SWEEP,
  });
  const db = new DatabaseSync(database, { readOnly: true });
  try {
    const { count } = db.prepare(
      'SELECT count(*) AS count FROM "transactions" WHERE deleted_at IS NULL',
    ).get() as { count: number };
    return { ...result, items: count };
  } finally {
    db.close();
  }
}

/**
 * Minutes within which every change of a list of `items` reaches the copy,
 * with runs every `minutes` sweeping `sweep` windows of `window` items: a
 * cycle is ⌈items / window⌉ + 2 requests at most (one more overlaps, one
 * confirms a short last page: docs/sync.md), and a change just behind the
 * sweep waits the rest of this cycle and all of the next, so twice the
 * cycle's runs.
 */
export function freshnessBound(
  items: number,
  { window = 1000, sweep = SWEEP, minutes = 1 } = {},
): number {
  const cycle = Math.ceil((Math.ceil(items / window) + 2) / sweep);
  return 2 * cycle * minutes;
}

/** Runs `job` every minute: Deno.cron where the runtime has it, a loop elsewhere. */
export function everyMinute(job: () => Promise<void>): void {
  const cron = (Deno as unknown as {
    cron?: (name: string, schedule: string, run: () => Promise<void>) => void;
  }).cron;
  // A run still going when the next minute comes is not doubled.
  let running = false;
  const once = async () => {
    if (running) return;
    running = true;
    try {
      await job();
    } finally {
      running = false;
    }
  };
  if (typeof cron === "function") {
    cron("sync transactions", "* * * * *", once);
    return;
  }
  globalThis.setInterval(once, 60_000);
}

if (import.meta.main) {
  const database = Deno.args[0] ?? "transactions.db";
  const { environment, ...credentials } = configFromEnv();
  const client = createClient({ environment, ...credentials });
  const job = async () => {
    try {
      const result = await syncTransactions(client, database);
      console.log(
        `${
          new Date().toISOString()
        } ${result.inserted} new, ${result.updated} changed, ${result.deleted} removed (${result.requests} requests); ${result.items} transactions, each true within ${
          freshnessBound(result.items)
        } min${result.behind > 0 ? `; ${result.behind} known missing` : ""}`,
      );
    } catch (error) {
      // The next minute's run resumes from the last committed batch.
      console.error(`${new Date().toISOString()} sync failed: ${error}`);
    }
  };
  await job();
  everyMinute(job);
}
