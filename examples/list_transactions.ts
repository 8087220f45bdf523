// Lists the newest transactions as JSON lines.
//
//   deno run --env-file=.env --allow-env='PARTNER_API_*' \
//     --allow-net=<token host>,<api host> examples/list_transactions.ts [max]

import {
  configFromEnv,
  createClient,
  type PartnerClient,
} from "@partner-api/client";

/** A transaction as far as this script cares. */
export interface Transaction {
  transactionID: string;
  creationDate: string;
}

/** Writes up to `max` transactions, newest first, one JSON line each; returns how many. */
export async function listNewestTransactions(
  client: PartnerClient,
  max: number,
  write: (line: string) => void,
): Promise<number> {
  let count = 0;
  const transactions = client.list<Transaction>("transactions", {
    sortBy: "creationDate",
    sortDirection: "DESC",
    maxItems: max,
    // Transactions arriving while we page would otherwise repeat.
    dedupeBy: (transaction) => transaction.transactionID,
  });
  for await (const transaction of transactions) {
    write(JSON.stringify(transaction));
    count++;
  }
  return count;
}

if (import.meta.main) {
  const { environment, ...credentials } = configFromEnv();
  const client = createClient({ environment, ...credentials });
  await listNewestTransactions(
    client,
    Number(Deno.args[0] ?? 100),
    console.log,
  );
}
