// A fleet sharing one token through Redis: five providers, each on its own
// Redis connection as five processes (Node, Bun or Deno) would be, against
// the fake service. Needs a Redis server (REDIS_URL, default localhost):
//
//   redis-server --port 6379 &
//   deno run --allow-net --allow-env examples/redis_fleet.ts

import { Redis } from "ioredis";
import { createTokenProvider } from "@partner-api/client";
import { createRedisTokenStore } from "@partner-api/client/redis";
import { startFakePartnerApi } from "@partner-api/client/testing";

await using api = await startFakePartnerApi();
const connections = Array.from(
  { length: 5 },
  () => new Redis(Deno.env.get("REDIS_URL") ?? "redis://127.0.0.1:6379"),
);
// A second connection per process, which waiters block on: they are woken
// by the write of the token instead of looking again now and then.
const blocking = connections.map((redis) => redis.duplicate());
const fleet = connections.map((redis, at) =>
  createTokenProvider({
    ...api.environment,
    ...api.credentials,
    store: createRedisTokenStore({
      command: (args) => redis.call(...args as [string, ...string[]]),
      blockingCommand: (args) =>
        blocking[at]!.call(...args as [string, ...string[]]),
    }),
  })
);
await Promise.all(fleet.map((provider) => provider.getToken()));
console.log(`${fleet.length} processes, ${api.tokenRequests} token request`);
// disconnect(), not quit(): quit() waits on a Redis that is away.
for (const redis of [...connections, ...blocking]) redis.disconnect();
