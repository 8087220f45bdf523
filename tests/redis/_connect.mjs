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
    await client.connect();
    return {
      command: (args) => client.sendCommand(args),
      close: () => client.destroy(),
    };
  }
  const { connectRedis } = await import("./_resp.ts");
  return await connectRedis(Number(port));
}
