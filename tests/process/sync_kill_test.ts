// SIGKILL at random points during SQLite, JSONL and PostgreSQL syncs while
// the list changes (on every request an item appended, one inserted and one
// deleted anywhere), then a rerun: every item that existed throughout is in
// the copy once. And SIGKILL during sweeps (JSONL: during a cycle's
// rewrite) while items also change in place, then reruns once the list
// stops changing: the copy equals the list.

import { DatabaseSync } from "node:sqlite";
import { createClient } from "../../src/client/mod.ts";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { seededRandom } from "../../src/testing/_list_data.ts";
import { adminClient, startCluster } from "./_postgres.ts";
import {
  Command,
  DEADLINE,
  processTest,
  withinDeadline,
} from "../_processes.ts";
import { freshTarget } from "../_sync_fake.ts";
import type { SyncJob } from "./sync_worker.ts";

const ITEMS = 3000;
const PG_ENV = "USER,NODE_PG_FORCE_NATIVE,PGUSER,PGDATABASE,PGPORT,PGHOST," +
  "PGPASSWORD,PGBINARY,PGOPTIONS,PGSSLMODE,PGCLIENT_ENCODING,PGREPLICATION," +
  "PGAPPNAME,PGCONNECT_TIMEOUT";

function equal<T>(actual: T, expected: T, message = "values differ"): void {
  if (actual !== expected) {
    throw new Error(`${message}: ${actual} !== ${expected}`);
  }
}

/** The worker's job: a sync of the fake's transactions into `target`. */
function jobFor(
  api: Awaited<ReturnType<typeof startFakePartnerApi>>,
  kind: SyncJob["kind"],
  target: string,
): SyncJob {
  return {
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
}

/** Worker runs so far: each run's sink clock is ahead of the last's by more than a lease's staleness (5 s). */
let runs = 0;

/**
 * Runs the worker; with `killAfter`, kills it after that many batch lines. A SQLite or JSONL rerun takes a killed
 * run's lock at once (its clock ahead), rather than wait 5 s; PostgreSQL's lease is on the server's clock.
 */
async function runWorker(job: SyncJob, killAfter?: number): Promise<string> {
  job = { ...job, clockAhead: 6_000 * runs++ };
  const child = new Command("deno", {
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
  const job = jobFor(api, kind, target);
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

processTest(
  "SIGKILL during a SQLite sync, then a rerun: every item once",
  async () => {
    const target = await fresh("kill.db");
    await killAndRerun("sqlite", target, () => {
      const database = new DatabaseSync(target);
      const rows = database.prepare('SELECT id FROM "transactions"').all() as {
        id: string;
      }[];
      database.close();
      return Promise.resolve(rows.map((row) => row.id));
    });
  },
);

processTest(
  "SIGKILL during a JSONL sync, then a rerun: every item once",
  async () => {
    const target = await fresh("kill.jsonl");
    await killAndRerun(
      "jsonl",
      target,
      async () =>
        (await Deno.readTextFile(target)).trim().split("\n").map((line) =>
          JSON.parse(line).transactionID
        ),
    );
  },
);

// Each rerun waits out the killed run's lease (5 s): two deadlines' room.
Deno.test({
  name: "SIGKILL during a PostgreSQL sync, then a rerun: every item once",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => withinDeadline(postgresKillAndRerun, 2 * DEADLINE),
});

/** Three kills and a rerun into PostgreSQL: every item once. */
async function postgresKillAndRerun() {
  const cluster = await startCluster();
  if (cluster === undefined) return;
  try {
    await killAndRerun("postgres", String(cluster.port), async () => {
      const client = await adminClient(cluster.port);
      const { rows } = await client.query('SELECT id FROM "transactions"');
      await client.end();
      return rows.map((row: { id: string }) => row.id);
    });
  } finally {
    await cluster.stop();
  }
}

/** A copy as the sweep tests read it. */
interface SweptCopy {
  /** The live items by id, and how many rows or lines hold them. */
  items(): Promise<{ byId: Map<string, unknown>; rows: number }>;
  /** A cycle is under way: the checkpoint has a sweep (JSONL: and its rewrite file is there). */
  midCycle(): Promise<boolean>;
}

/** Throws, naming a few, unless `copy` holds exactly the items of `list`, once each. */
function sameAsList(
  copy: { byId: Map<string, unknown>; rows: number },
  list: Map<string, unknown>,
): void {
  const missing = [...list.keys()].filter((id) => !copy.byId.has(id));
  const extra = [...copy.byId.keys()].filter((id) => !list.has(id));
  const stale = [...list].filter(([id, item]) =>
    copy.byId.has(id) &&
    JSON.stringify(sorted(copy.byId.get(id))) !== JSON.stringify(sorted(item))
  ).map(([id]) => id);
  if (
    missing.length + extra.length + stale.length > 0 ||
    copy.rows !== copy.byId.size
  ) {
    throw new Error(
      `the copy is not the list: ${missing.length} missing (${
        missing.slice(0, 5)
      }), ${extra.length} not in the list (${
        extra.slice(0, 5)
      }), ${stale.length} stale (${
        stale.slice(0, 5)
      }), ${copy.rows} rows for ${copy.byId.size} ids`,
    );
  }
}

/** An object with its keys in order (jsonb reorders them). */
function sorted(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0
    ),
  );
}

/**
 * A first run, then runs that sweep a whole cycle (sweep: "all"), each
 * killed at a random batch, until three were killed mid-cycle, while the
 * list changes on every request (an item changed, one inserted behind the
 * copy's end, one appended, one removed every other request); then the
 * list stops changing and two runs (2 × ⌈pages / sweep⌉ + 2 with sweep
 * Infinity) make the copy equal to the list.
 */
async function killDuringSweeps(
  kind: SyncJob["kind"],
  target: string,
  copy: SweptCopy,
): Promise<void> {
  const random = seededRandom(kind.length + 41);
  let changing = false;
  let requests = 0;
  const pick = () =>
    `tx_${String(1 + Math.floor(random() * ITEMS)).padStart(6, "0")}`;
  await using api = await startFakePartnerApi({
    items: { transactions: ITEMS },
    onRequest: ({ path }) => {
      if (!changing || path !== "/api/transactions") return;
      requests++;
      api.update("transactions", pick(), {
        amount: Math.round(random() * 100_000) / 100,
        status: "settled",
      });
      api.insert("transactions", {
        transactionID: `tx_back_${requests}`,
        // Somewhere in the 300 days the fake's data cover.
        creationDate: new Date(Date.now() - (1 + random() * 290) * 86_400_000)
          .toISOString(),
        amount: 1,
        currency: "EUR",
        organizationID: "org_000001",
      });
      api.insertTransactions(1);
      if (requests % 2 === 0) api.remove("transactions", pick());
    },
  });
  const job = { ...jobFor(api, kind, target), sweep: "all" as const };
  await runWorker(job);
  changing = true;
  // Until three kills left a cycle under way (a run that resumes one may
  // complete it before its kill comes).
  let midCycle = 0;
  for (let run = 0; run < 8 && midCycle < 3; run++) {
    // The head's batch (and the cycle's first, empty one) come first.
    await runWorker(job, 3 + Math.floor(random() * 20));
    if (await copy.midCycle()) midCycle++;
  }
  changing = false;
  equal(midCycle, 3, "kills that landed mid-cycle");
  equal(requests > 0, true, "the list did not change");
  // The first completes the cycle under way, which missed what changed
  // behind it before; the second reads a whole cycle of the still list.
  await runWorker(job);
  await runWorker(job);
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    rateLimit: false,
  });
  const list = new Map<string, unknown>();
  for await (
    const item of client.list<{ transactionID: string }>("transactions", {
      sortBy: "creationDate",
      limit: 1000,
    })
  ) list.set(item.transactionID, item);
  sameAsList(await copy.items(), list);
}

/**
 * The sweep tests' deadline: a quiet run takes 2 s (SQLite, JSONL) to 23 s
 * (PostgreSQL, whose reruns wait out leases; 6 to 10 worker runs); two
 * CPU-bound loops beside it on 2 CPUs make it about twice as long. Past it, the workers still running are named and killed.
 */
const SWEEP_DEADLINE = 3 * DEADLINE;

Deno.test("SIGKILL during SQLite sweeps, then reruns: the copy equals the list", () =>
  withinDeadline(async () => {
    const target = await fresh("sweep.db");
    const read = <R>(sql: string) => {
      const database = new DatabaseSync(target);
      try {
        return database.prepare(sql).all() as R[];
      } finally {
        database.close();
      }
    };
    await killDuringSweeps("sqlite", target, {
      items() {
        const rows = read<{ id: string; item: string }>(
          'SELECT id, item FROM "transactions" WHERE deleted_at IS NULL',
        );
        return Promise.resolve({
          byId: new Map(rows.map((row) => [row.id, JSON.parse(row.item)])),
          rows:
            read<{ n: number }>('SELECT count(*) AS n FROM "transactions"')[0]!
              .n,
        });
      },
      midCycle() {
        const [row] = read<{ checkpoint: string }>(
          "SELECT checkpoint FROM partner_api_sync WHERE target = 'transactions'",
        );
        return Promise.resolve(JSON.parse(row!.checkpoint).sweep !== undefined);
      },
    });
  }, SWEEP_DEADLINE));

Deno.test("SIGKILL during a JSONL cycle's rewrite (sweep: Infinity), then reruns: the copy equals the list", () =>
  withinDeadline(async () => {
    const target = await fresh("sweep.jsonl");
    await Deno.remove(`${target}.rewrite`).catch(() => {});
    await killDuringSweeps("jsonl", target, {
      async items() {
        const lines = (await Deno.readTextFile(target)).trim().split("\n");
        const items = lines.map((line) => JSON.parse(line));
        return {
          byId: new Map(items.map((item) => [item.transactionID, item])),
          rows: lines.length,
        };
      },
      async midCycle() {
        const side = JSON.parse(
          await Deno.readTextFile(`${target}.checkpoint.json`),
        );
        const rewriting = await Deno.stat(`${target}.rewrite`).then(
          () => true,
          () => false,
        );
        return side.rewrite !== undefined && rewriting;
      },
    });
  }, SWEEP_DEADLINE));

Deno.test({
  name:
    "SIGKILL during PostgreSQL sweeps, then reruns: the copy equals the list",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => withinDeadline(sweepIntoPostgres, SWEEP_DEADLINE),
});

async function sweepIntoPostgres(): Promise<void> {
  const cluster = await startCluster();
  if (cluster === undefined) return;
  const rows = async <R>(sql: string): Promise<R[]> => {
    const client = await adminClient(cluster.port);
    try {
      return (await client.query(sql)).rows;
    } finally {
      await client.end();
    }
  };
  try {
    await killDuringSweeps("postgres", String(cluster.port), {
      async items() {
        const live = await rows<{ id: string; item: unknown }>(
          // (to_jsonb: also on a table without the column)
          `SELECT id, item FROM "transactions" t WHERE to_jsonb(t) ->> 'deleted_at' IS NULL`,
        );
        const [all] = await rows<{ n: string }>(
          'SELECT count(*)::text AS n FROM "transactions"',
        );
        return {
          byId: new Map(live.map((row) => [row.id, row.item])),
          rows: Number(all!.n),
        };
      },
      async midCycle() {
        const [row] = await rows<{ checkpoint: string }>(
          "SELECT checkpoint FROM partner_api_sync WHERE target = 'transactions'",
        );
        return JSON.parse(row!.checkpoint).sweep !== undefined;
      },
    });
  } finally {
    await cluster.stop();
  }
}
