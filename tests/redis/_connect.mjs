// A Redis connection for a fleet worker: Node talks to Redis through
// ioredis, Bun through node-redis, Deno through the tests' RESP client; the
// store needs nothing but a command function from any of them.

import { createRequire } from "node:module";

/**
 * A command function, and how to close the connection. `ioredisOptions` go
 * to ioredis as they are (e.g. `maxRetriesPerRequest`).
 */
export async function connect(bundles, runtime, port, ioredisOptions = {}) {
  const require = createRequire(`${bundles}/`);
  if (runtime === "node") {
    const { Redis } = require("ioredis");
    const client = new Redis({
      port: Number(port),
      host: "127.0.0.1",
      ...ioredisOptions,
    });
    client.on("error", () => {}); // reconnecting while Redis is away
    return {
      command: (args) => client.call(...args),
      close: () => client.disconnect(),
    };
  }
  if (runtime === "bun") {
    const { createClient } = require("redis");
    const client = createClient({ url: `redis://127.0.0.1:${port}` });
    client.on("error", () => {}); // reconnecting while Redis is away
    // Not awaited: while Redis is away, node-redis's connect() retries every
    // second or two and never settles, and a process that awaited it never
    // reached its work or its shutdown (Bun workers that started after the
    // kill hung until killed by hand). Commands sent meanwhile wait in its
    // offline queue; the store's commandTimeout makes them failures, so the
    // process paces alone; destroy() ends the retrying.
    client.connect().catch(() => {});
    return {
      command: (args) => client.sendCommand(args),
      close: () => client.destroy(),
    };
  }
  const { connectRedis } = await import("./_resp.ts");
  return reconnecting(() => connectRedis(Number(port)));
}

/**
 * The tests' RESP client, connected again by the first command after the
 * connection dropped (Redis restarted), as ioredis and node-redis do. While
 * Redis is away every command fails, as on a dropped connection.
 */
function reconnecting(open) {
  let current;
  let closed = false;
  const connection = () =>
    current ??= open().catch((error) => {
      current = undefined;
      throw error;
    });
  return {
    async command(args) {
      if (closed) throw new Error("connection closed");
      const opened = connection();
      const client = await opened;
      try {
        return await client.command(args);
      } catch (error) {
        if (error?.name !== "ReplyError" && current === opened) {
          current = undefined;
          client.close();
        }
        throw error;
      }
    },
    close() {
      closed = true;
      current?.then((client) => client.close(), () => {});
    },
  };
}
