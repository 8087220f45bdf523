// Keeps a SQLite copy of the transactions current: one sync now, then one
// every minute. On Deno Deploy (or with --unstable-cron) it is a Deno.cron
// job; elsewhere a plain loop. Each run reads only what is new; a run that
// is killed is resumed by the next.
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
import {
  createSqliteSink,
  syncList,
  type SyncResult,
} from "@partner-api/client/sync";

/** Brings the copy in `database` up to date with the service's transactions. */
export async function syncTransactions(
  client: PartnerClient,
  database: string,
): Promise<SyncResult> {
  using sink = createSqliteSink(database, { table: "transactions" });
  return await syncList(client, "transactions", {
    id: "transactionID",
    sortBy: "creationDate",
    sink,
  });
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
        } ${result.written} new transactions (${result.requests} requests)`,
      );
    } catch (error) {
      // The next minute's run resumes from the last committed batch.
      console.error(`${new Date().toISOString()} sync failed: ${error}`);
    }
  };
  await job();
  everyMinute(job);
}
