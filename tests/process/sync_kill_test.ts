// SIGKILL at random points during SQLite, JSONL and PostgreSQL syncs while
// the list changes (on every request an item appended, one inserted and one
// deleted anywhere),
// then a rerun: every item that existed throughout is in the copy once.

import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { seededRandom } from "../../src/testing/_list_data.ts";
import { startCluster } from "./_postgres.ts";
import { freshTarget } from "../_sync_fake.ts";
import type { SyncJob } from "./sync_worker.ts";
import { cli, cliCommand } from "./_cli_process.ts";
import { configFor } from "../_cli_helpers.ts";

const ITEMS = 3000;
const PG_ENV = "USER,NODE_PG_FORCE_NATIVE,PGUSER,PGDATABASE,PGPORT,PGHOST," +
  "PGPASSWORD,PGBINARY,PGOPTIONS,PGSSLMODE,PGCLIENT_ENCODING,PGREPLICATION," +
  "PGAPPNAME,PGCONNECT_TIMEOUT";

function equal<T>(actual: T, expected: T, message = "values differ"): void {
  if (actual !== expected) {
    throw new Error(`${message}: ${actual} !== ${expected}`);
  }
}

/** Runs the worker; with `killAfter`, kills it after that many batch lines. */
async function runWorker(job: SyncJob, killAfter?: number): Promise<string> {
  const child = new Deno.Command("deno", {
    args: [
      "run",
      "--no-prompt",
      "--allow-net=127.0.0.1",
      "--allow-read=.test-tmp",
      "--allow-write=.test-tmp",
      `--allow-env=${PG_ENV}`,
      "tests/process/sync_worker.ts",
      JSON.stringify(job),
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let lines = 0;
  let text = "";
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout) {
    text += decoder.decode(chunk);
    lines = text.split("\n").length - 1;
    if (killAfter !== undefined && lines >= killAfter) {
      child.kill("SIGKILL");
      break;
    }
  }
  const [status, stderr] = await Promise.all([
    child.status,
    new Response(child.stderr).text(),
  ]);
  if (killAfter === undefined && !status.success) {
    throw new Error(`worker failed: ${stderr}`);
  }
  return text;
}

/** Kills three runs at random batches, then lets one finish; returns the copy's ids. */
async function killAndRerun(
  kind: SyncJob["kind"],
  target: string,
  readIds: () => Promise<string[]>,
): Promise<void> {
  // Deletes too: after each list request, one of the first items goes.
  const removed = new Set<string>();
  const random = seededRandom(kind.length);
  await using api = await startFakePartnerApi({
    items: { transactions: ITEMS },
    churn: { append: 1, insertAnywhere: 1 },
    onRequest: ({ path }) => {
      if (path !== "/api/transactions") return;
      const id = `tx_${
        String(1 + Math.floor(random() * ITEMS)).padStart(6, "0")
      }`;
      if (api.remove("transactions", id)) removed.add(id);
    },
  });
  const job: SyncJob = {
    kind,
    target,
    environment: {
      baseUrl: api.environment.baseUrl.href,
      pciBaseUrl: api.environment.pciBaseUrl.href,
      tokenUrl: api.environment.tokenUrl.href,
      audience: api.environment.audience,
    },
    ...api.credentials,
  };
  for (let kill = 0; kill < 3; kill++) {
    await runWorker(job, 1 + Math.floor(random() * 12));
  }
  const last = await runWorker(job);
  const result = JSON.parse(last.slice(last.indexOf("done ") + 5));
  // The kills landed mid-run: the last run resumed, with part of the list.
  equal(result.resumed, true, last);
  equal(result.written < ITEMS, true, last);
  const ids = await readIds();
  equal(new Set(ids).size, ids.length, "an item twice");
  const held = new Set(ids);
  for (let i = 1; i <= ITEMS; i++) {
    const id = `tx_${String(i).padStart(6, "0")}`;
    if (!removed.has(id)) equal(held.has(id), true, `${id} missing`);
  }
  equal(removed.size > 0, true, "nothing was deleted");
}

const fresh = (name: string) => freshTarget("sync-kill", name);

Deno.test("SIGKILL during a SQLite sync, then a rerun: every item once", async () => {
  const target = await fresh("kill.db");
  await killAndRerun("sqlite", target, () => {
    const database = new DatabaseSync(target);
    const rows = database.prepare('SELECT id FROM "transactions"').all() as {
      id: string;
    }[];
    database.close();
    return Promise.resolve(rows.map((row) => row.id));
  });
});

Deno.test("SIGKILL during a JSONL sync, then a rerun: every item once", async () => {
  const target = await fresh("kill.jsonl");
  await killAndRerun(
    "jsonl",
    target,
    async () =>
      (await Deno.readTextFile(target)).trim().split("\n").map((line) =>
        JSON.parse(line).transactionID
      ),
  );
});

Deno.test({
  name: "SIGKILL during a PostgreSQL sync, then a rerun: every item once",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const cluster = await startCluster();
    if (cluster === undefined) return;
    try {
      await killAndRerun("postgres", String(cluster.port), async () => {
        const client = new pg.Client({
          host: "127.0.0.1",
          port: cluster.port,
          user: "postgres",
          database: "postgres",
        });
        await client.connect();
        const { rows } = await client.query('SELECT id FROM "transactions"');
        await client.end();
        return rows.map((row: { id: string }) => row.id);
      });
    } finally {
      await cluster.stop();
    }
  },
});
