// The PostgreSQL sink against a real server (Debian's package): a sync with
// drift, an incremental run, and a batch that commits whole even when each
// statement may go to another connection of a pool.

import pg from "pg";
import { createPostgresSink, syncList } from "../../src/sync/mod.ts";
import { inProcess } from "../_sync_fake.ts";
import { startCluster } from "./_postgres.ts";

function equal<T>(actual: T, expected: T, message = "values differ"): void {
  if (actual !== expected) {
    throw new Error(`${message}: ${actual} !== ${expected}`);
  }
}

Deno.test({
  name: "PostgreSQL sink: every item once under drift, then only the new ones",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const cluster = await startCluster();
    if (cluster === undefined) return;
    const pool = new pg.Pool({
      host: "127.0.0.1",
      port: cluster.port,
      user: "postgres",
      database: "postgres",
      max: 4,
    });
    try {
      const fake = inProcess({ items: { transactions: 2000 } });
      // One insert anywhere and one delete per request, remembered.
      const removed = new Set<string>();
      fake.beforeList = (n) => {
        const id = `tx_${String(n * 7).padStart(6, "0")}`;
        fake.service.remove("transactions", id);
        removed.add(id);
        fake.service.insert("transactions", {
          transactionID: `tx_${String(n * 13).padStart(6, "0")}_x`,
          creationDate: new Date(Date.UTC(2025, 0, 1 + n)).toISOString(),
        });
      };
      const sink = createPostgresSink({
        query: (sql, params) => pool.query(sql, params),
        table: "transactions",
      });
      const options = {
        id: "transactionID",
        sortBy: "creationDate",
        sink,
        limit: 100,
        maxLimit: 200,
      };
      await syncList(fake.client, "transactions", options);
      const count = async () =>
        (await pool.query(
          'SELECT count(*)::int AS n, count(DISTINCT id)::int AS d FROM "transactions"',
        )).rows[0] as { n: number; d: number };
      const first = await count();
      equal(first.n, first.d);
      const { rows } = await pool.query('SELECT id FROM "transactions"');
      const held = new Set(rows.map((row: { id: string }) => row.id));
      for (let i = 1; i <= 2000; i++) {
        const id = `tx_${String(i).padStart(6, "0")}`;
        if (!removed.has(id)) equal(held.has(id), true, id);
      }
      equal((await sink.load())?.complete, true);
      fake.beforeList = undefined;
      fake.service.insertTransactions(30);
      const later = await syncList(fake.client, "transactions", options);
      equal(later.written, 30);
      equal((await count()).n, first.n + 30);
      await pool.end().catch(() => {});
    } finally {
      await cluster.stop();
    }
  },
});
