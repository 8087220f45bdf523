// A PostgreSQL cluster of its own for a test: Debian's server binaries,
// run as the `postgres` user (they refuse root) on a temporary folder and a
// free loopback port. Undefined when the binaries or the user are missing.
// A database of its own per test, through either driver users have:
// node-postgres (`pg`) and postgres.js (`postgres`).

import pg from "pg";
import postgres from "postgres";
import type { PostgresSinkOptions } from "../../src/sync/mod.ts";
import { Command, DEADLINE, withinDeadline } from "../_processes.ts";

const BIN = "/usr/lib/postgresql/15/bin";

/** A running cluster; `stop()` ends it and removes its folder. */
export interface Cluster {
  readonly port: number;
  stop(): Promise<void>;
}

async function asPostgres(
  script: string,
): Promise<{ ok: boolean; out: string }> {
  try {
    const output = await new Command("su", {
      args: ["postgres", "-s", "/bin/sh", "-c", script],
      // Never a password prompt: without root, su fails and the test skips.
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      ok: output.success,
      out: new TextDecoder().decode(output.stdout).trim(),
    };
  } catch {
    return { ok: false, out: "" };
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Starts a cluster, or says in one line why it cannot and returns undefined. */
export async function startCluster(): Promise<Cluster | undefined> {
  const found = await asPostgres(
    `test -x ${BIN}/initdb && test -x ${BIN}/pg_ctl`,
  );
  if (!found.ok) {
    console.log(
      `skipped: no PostgreSQL server binaries in ${BIN} (or no 'postgres' user)`,
    );
    return undefined;
  }
  const folder = (await asPostgres("mktemp -d /tmp/partner-api-pg-XXXXXX")).out;
  const port = freePort();
  const init = await asPostgres(
    `${BIN}/initdb -D ${folder}/data -A trust -U postgres >/dev/null 2>&1 && ` +
      `${BIN}/pg_ctl -D ${folder}/data -l ${folder}/log -w -o "-p ${port} -k ${folder} -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null`,
  );
  if (!init.ok) throw new Error(`PostgreSQL did not start in ${folder}`);
  return {
    port,
    async stop() {
      await asPostgres(
        `${BIN}/pg_ctl -D ${folder}/data -m immediate -w stop >/dev/null 2>&1; rm -rf ${folder}`,
      );
    },
  };
}

/** A connection to one database, as a driver gives it. */
export interface Connection {
  /** The sink's `query`, as docs/sync.md writes it for this driver. */
  readonly query: PostgresSinkOptions["query"];
  /** Runs the test's own SQL. */
  rows<R>(sql: string, params?: string[]): Promise<R[]>;
  end(): Promise<void>;
}

export interface Driver {
  readonly name: string;
  connect(port: number, database: string): Connection;
}

export const drivers: Driver[] = [
  {
    name: "pg",
    connect(port, database) {
      const pool = new pg.Pool({
        host: "127.0.0.1",
        port,
        user: "postgres",
        database,
        max: 4,
      });
      return {
        query: (text, params) => pool.query(text, params),
        rows: async (sql, params = []) => (await pool.query(sql, params)).rows,
        end: () => pool.end(),
      };
    },
  },
  {
    name: "postgres.js",
    connect(port, database) {
      const sql = postgres({
        host: "127.0.0.1",
        port,
        user: "postgres",
        password: "",
        database,
        max: 4,
        onnotice: () => {},
        // Every option postgres.js would otherwise read from PG* variables,
        // which the process tests are not allowed to read.
        ssl: false,
        sslnegotiation: null,
        idle_timeout: 0,
        connect_timeout: 30,
        max_lifetime: null,
        max_pipeline: 100,
        backoff: () => 0.1,
        keep_alive: 60,
        prepare: true,
        debug: false,
        fetch_types: true,
        publications: "alltables",
        target_session_attrs: "read-write",
      } as postgres.Options<Record<string, never>>);
      return {
        query: (text, params) => sql.unsafe(text, params),
        rows: async <R>(text: string, params: string[] = []) =>
          [...await sql.unsafe(text, params)] as R[],
        end: () => sql.end({ timeout: 5 }),
      };
    },
  },
];

let databases = 0;

/** A pg client to the cluster's `postgres` database, connected; end it when done. */
export async function adminClient(port: number): Promise<pg.Client> {
  const client = new pg.Client({
    host: "127.0.0.1",
    port,
    user: "postgres",
    database: "postgres",
  });
  await client.connect();
  return client;
}

/** A fresh database on `cluster`, connected through `driver`, for `fn`. */
export async function inDatabase(
  cluster: Cluster,
  driver: Driver,
  fn: (db: Connection) => Promise<void>,
): Promise<void> {
  const name = `sync_${++databases}`;
  const admin = await adminClient(cluster.port);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const db = driver.connect(cluster.port, name);
  try {
    await fn(db);
  } finally {
    await db.end();
  }
}

/** One step of a cluster test: its name, the driver, what it does in a fresh database. */
type ClusterStep = readonly [string, Driver, (db: Connection) => Promise<void>];

/**
 * A test of `steps` on one cluster started for them (none without PostgreSQL), within three deadlines (room for the
 * steps that wait out a stale lease). The drivers' pools keep sockets and timers between queries: no sanitizers.
 */
export function clusterTest(name: string, steps: readonly ClusterStep[]) {
  Deno.test({
    name,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: (t) => withinDeadline(() => onOneCluster(t, steps), 3 * DEADLINE),
  });
}

async function onOneCluster(
  t: Deno.TestContext,
  steps: readonly ClusterStep[],
): Promise<void> {
  const cluster = await startCluster();
  if (cluster === undefined) return;
  try {
    for (const [name, driver, fn] of steps) {
      await t.step(name, () => inDatabase(cluster, driver, fn));
    }
  } finally {
    await cluster.stop();
  }
}
