// A real redis-server for tests, on a free loopback port. Debian's package:
// apt-get install -y redis-server.

import { connectRedis, type RedisClient } from "./_resp.ts";
import { Command, processTest } from "../_processes.ts";
export { connectRedis, type RedisClient } from "./_resp.ts";

/** Whether redis-server is installed; tests are skipped with one line when not. */
export const redisInstalled: boolean = await new Command("redis-server", {
  args: ["--version"],
  stdout: "null",
  stderr: "null",
}).output().then(() => true, () => false);

if (!redisInstalled) {
  console.log(
    "Redis tests skipped: redis-server is not on PATH (apt-get install -y redis-server)",
  );
}

/**
 * A process test (tests/_processes.ts: its own deadline) that is skipped
 * when redis-server is not installed.
 */
export function redisTest(name: string, fn: () => Promise<void>): void {
  processTest({ name, ignore: !redisInstalled, fn });
}

/**
 * Lets the default user run scripts, or refuses them (an ACL without
 * `@scripting`, as some managed Redis services have it): through `client`.
 */
export async function allowScripts(
  client: RedisClient,
  allowed: boolean,
): Promise<void> {
  await client.command(
    ["ACL", "SETUSER", "default", allowed ? "+@all" : "-@scripting"],
  );
}

/** A running redis-server. */
export interface RedisServer {
  readonly port: number;
  /** Stops it at once (as a crash would: no save, no goodbye). */
  kill(): Promise<void>;
  /**
   * Kills it and starts a new one on the same port, empty (no persistence):
   * what a fleet meets when its Redis restarts. Resolves once it answers.
   */
  restart(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts redis-server on a free loopback port and waits until it answers. */
export async function startRedis(): Promise<RedisServer> {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = probe.addr.port;
  probe.close();
  let kill = await serve(port);
  return {
    port,
    kill: () => kill(),
    async restart() {
      await kill();
      kill = await serve(port);
    },
    [Symbol.asyncDispose]: () => kill(),
  };
}

/** Runs redis-server on `port` until it answers; returns how to kill it. */
async function serve(port: number): Promise<() => Promise<void>> {
  const child = new Command("redis-server", {
    args: [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  let killed = false;
  const kill = async () => {
    if (killed) return;
    killed = true;
    child.kill("SIGKILL");
    await child.status;
  };
  for (let attempt = 0;; attempt++) {
    try {
      const client = await connectRedis(port);
      await client.command(["PING"]);
      client.close();
      return kill;
    } catch (error) {
      if (attempt > 200) {
        await kill();
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}
