// A PostgreSQL cluster of its own for a test: Debian's server binaries,
// run as the `postgres` user (they refuse root) on a temporary folder and a
// free loopback port. Undefined when the binaries or the user are missing.

import { Command } from "../_processes.ts";

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
