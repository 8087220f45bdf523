// A sync run in its own process, for the SIGKILL tests: syncs the fake's
// transactions into a SQLite file, a JSONL file or PostgreSQL (sweeping as
// the job says), printing a line per committed batch. Argument: one JSON object (see SyncJob).

import pg from "pg";
import { createClient } from "../../src/client/mod.ts";
import { defineEnvironment } from "../../src/core/environment.ts";
import {
  createJsonlSink,
  createPostgresSink,
  createSqliteSink,
  syncList,
  type SyncSink,
} from "../../src/sync/mod.ts";

/** What the worker is to do. */
export interface SyncJob {
  readonly kind: "sqlite" | "jsonl" | "postgres";
  /** The file, or the PostgreSQL port. */
  readonly target: string;
  readonly environment: {
    baseUrl: string;
    pciBaseUrl: string;
    tokenUrl: string;
    audience: string;
  };
  readonly clientId: string;
  readonly clientSecret: string;
  /** List requests each run may spend sweeping (`"all"`: a whole cycle); the default when absent. */
  readonly sweep?: number | "all";
  /** How far ahead of the system clock the SQLite and JSONL sinks' clock runs: a rerun sees a killed run's lease stale at once. */
  readonly clockAhead?: number;
}

const job = JSON.parse(Deno.args[0]!) as SyncJob;
const client = createClient({
  environment: defineEnvironment(job.environment),
  clientId: job.clientId,
  clientSecret: job.clientSecret,
  rateLimit: false,
});
let pool: pg.Pool | undefined;
let sink: SyncSink<unknown>;
const now = () => Date.now() + (job.clockAhead ?? 0);
if (job.kind === "sqlite") {
  sink = createSqliteSink(job.target, { table: "transactions", now });
} else if (job.kind === "jsonl") sink = createJsonlSink(job.target, { now });
else {
  pool = new pg.Pool({
    host: "127.0.0.1",
    port: Number(job.target),
    user: "postgres",
    database: "postgres",
  });
  const { query } = pool;
  sink = createPostgresSink({
    query: (sql, params) => query.call(pool, sql, params),
    table: "transactions",
  });
}
const encoder = new TextEncoder();
const result = await syncList(client, "transactions", {
  id: "transactionID",
  sortBy: "creationDate",
  sink,
  limit: 50,
  maxLimit: 100,
  ...(job.sweep === undefined
    ? {}
    : { sweep: job.sweep === "all" ? Infinity : job.sweep }),
  onProgress: (progress) =>
    void Deno.stdout.writeSync(encoder.encode(`${progress.written}\n`)),
});
await pool?.end();
Deno.stdout.writeSync(encoder.encode(`done ${JSON.stringify(result)}\n`));
