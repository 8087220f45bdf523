// The Redis store against a real redis-server (skipped, with one line, when
// it is not installed). Each provider has its own connection, as a process
// of a fleet would.

import { equal, ok, throws } from "node:assert/strict";
import { createRedisTokenStore } from "../../src/store/redis.ts";
import type { RedisTokenStoreOptions } from "../../src/store/redis.ts";
import { createTokenProvider } from "../../src/token/mod.ts";
import { TokenRequestError } from "../../src/core/errors.ts";
import {
  type FakePartnerApiOptions,
  startFakePartnerApi,
} from "../../src/testing/mod.ts";
import { manualClock, withFakeTimers } from "../_helpers.ts";
import { drive, inProcessFake, trackedIo } from "../_fast_setup.ts";
import { keysOf } from "./_keys.ts";
import {
  connectRedis,
  type RedisClient,
  redisTest as test,
  startRedis,
} from "./_redis_server.ts";
import { processTest } from "../_processes.ts";

const realSetTimeout = setTimeout;

/** A redis-server, the fake, and providers that stand for processes. */
async function fleet(fake: FakePartnerApiOptions = {}) {
  const redis = await startRedis();
  const api = await startFakePartnerApi(fake);
  const clients: RedisClient[] = [];
  const clock = manualClock(Date.now());
  const process = async (options: Partial<RedisTokenStoreOptions> = {}) => {
    const client = await connectRedis(redis.port);
    clients.push(client);
    return createTokenProvider({
      ...api.environment,
      ...api.credentials,
      store: createRedisTokenStore({
        command: client.command,
        pollInterval: 5,
        now: clock,
        ...options,
      }),
      retry: false,
      now: clock,
    });
  };
  const admin = await connectRedis(redis.port);
  clients.push(admin);
  return {
    api,
    redis,
    admin,
    clock,
    process,
    async [Symbol.asyncDispose]() {
      for (const client of clients) client.close();
      await redis.kill();
      await api.close();
    },
  };
}

test("cold processes sharing Redis make one token request; a second wave makes none", async () => {
  await using f = await fleet();
  const first = await Promise.all(
    Array.from({ length: 6 }, async () => (await f.process()).getToken()),
  );
  equal(new Set(first.map((token) => token.accessToken)).size, 1);
  equal(f.api.tokenRequests, 1);
  const second = await Promise.all(
    Array.from({ length: 6 }, async () => (await f.process()).getToken()),
  );
  equal(second[0]!.accessToken, first[0]!.accessToken);
  equal(f.api.tokenRequests, 1);
});

test("records rest sealed by default: no key or value in Redis holds the token or the secret", async () => {
  await using f = await fleet();
  const token = await (await f.process()).getToken();
  const keys = await f.admin.command(["KEYS", "*"]) as string[];
  ok(keys.length > 0);
  for (const key of keys) {
    const value = await valueAt(f.admin, key);
    ok(!value.includes('"plain"'), "sealed");
    for (const text of [key, value]) {
      ok(!text.includes(token.accessToken));
      ok(!text.includes(f.api.credentials.clientSecret));
    }
  }
  await (await f.process()).getToken();
  equal(f.api.tokenRequests, 1, "every process of the fleet opens it");
});

test("with an encryption key, no key or value in Redis holds the token or the secret", async () => {
  await using f = await fleet();
  const encryptionKey = await crypto.subtle.generateKey(
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
  const token = await (await f.process({ encryptionKey })).getToken();
  const keys = await f.admin.command(["KEYS", "*"]) as string[];
  ok(keys.length > 0);
  for (const key of keys) {
    const value = await valueAt(f.admin, key);
    for (const text of [key, value]) {
      ok(!text.includes(token.accessToken));
      ok(!text.includes(f.api.credentials.clientSecret));
    }
  }
  // Another key cannot read the record: it counts as absent.
  const otherKey = await crypto.subtle.generateKey(
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
  await (await f.process({ encryptionKey })).getToken();
  equal(f.api.tokenRequests, 1);
  await (await f.process({ encryptionKey: otherKey })).getToken();
  equal(f.api.tokenRequests, 2);
});

test("invalidate() drops the stored token only while it is still the stored one", async () => {
  await using f = await fleet();
  const a = await f.process();
  const b = await f.process();
  const first = await a.getToken();
  await a.invalidate(first.accessToken);
  const second = await b.getToken();
  equal(f.api.tokenRequests, 2);
  // A late discard of the old token leaves the new one in place.
  await a.invalidate(first.accessToken);
  const third = await (await f.process()).getToken();
  equal(third.accessToken, second.accessToken);
  equal(f.api.tokenRequests, 2);
});

test("Redis going away mid-run costs at most one token per process, with no unhandled rejection", async () => {
  await using f = await fleet({ tokenLifetime: 3_600_000 });
  const processes = await Promise.all(
    Array.from({ length: 4 }, () => f.process()),
  );
  await Promise.all(processes.map((process) => process.getToken()));
  equal(f.api.tokenRequests, 1);
  await f.redis.kill();
  f.clock.advance(3_600_000); // every token is due: each process needs one
  for (let round = 0; round < 5; round++) {
    const tokens = await Promise.all(
      processes.map((process) => process.getToken()),
    );
    equal(tokens.length, 4);
  }
  ok(f.api.tokenRequests <= 1 + processes.length);
});

processTest(
  "a Redis command that never answers counts as a failure after commandTimeout",
  async () => {
    // In process on fake time: the fake answers with no socket, and the clock
    // moves only when nothing else can run (crypto included).
    await withFakeTimers(async (timers) => {
      using api = inProcessFake();
      using io = trackedIo();
      const provider = createTokenProvider({
        ...api.environment,
        ...api.credentials,
        fetch: api.fetch,
        retry: false,
        store: createRedisTokenStore({
          command: () => new Promise(() => {}), // a client queueing while Redis is away
          commandTimeout: 1000,
        }),
      });
      const token = await drive(timers, provider.getToken(), io.idle);
      ok(api.service.isValidToken(token.accessToken));
      equal(api.service.tokenRequests, 1);
    });
  },
);

processTest(
  "createRedisTokenStore() refuses bad options with the option's name",
  async () => {
    const command = () => Promise.resolve(null);
    const bad: [unknown, string][] = [
      [{}, "command"],
      [{ command, prefix: "" }, "prefix"],
      [{ command, leaseDuration: 0 }, "leaseDuration"],
      [{ command, maxWait: -1 }, "maxWait"],
      [{ command, commandTimeout: 1.5 }, "commandTimeout"],
      [{ command, now: 5 }, "now"],
      [{ command, blockingCommand: "BLPOP" }, "blockingCommand"],
    ];
    for (const [options, option] of bad) {
      throws(
        () => createRedisTokenStore(options as RedisTokenStoreOptions),
        (error: Error & { option?: string }) => error.option === option,
      );
    }
    const hmac = await crypto.subtle.generateKey(
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    throws(
      () => createRedisTokenStore({ command, encryptionKey: hmac }),
      (error: Error & { option?: string }) => error.option === "encryptionKey",
    );
  },
);

/** Resolves once some process holds a lease. */
async function leaseTaken(admin: RedisClient): Promise<void> {
  while ((await admin.command(["KEYS", "*:lease"]) as string[]).length === 0) {
    await new Promise((done) => realSetTimeout(done, 1));
  }
}

/** What `key` holds, as text: a record or lease, or a lease's release stream. */
async function valueAt(admin: RedisClient, key: string): Promise<string> {
  if (await admin.command(["TYPE", key]) === "stream") {
    return JSON.stringify(await admin.command(["XRANGE", key, "-", "+"]));
  }
  return await admin.command(["GET", key]) as string;
}

async function commandsProcessed(admin: RedisClient): Promise<number> {
  const info = String(await admin.command(["INFO", "stats"]));
  return Number(/total_commands_processed:(\d+)/.exec(info)![1]);
}

test("stores fail closed: lease and record keys of the wrong type are replaced, no waiter spins", async () => {
  await using f = await fleet();
  const keys = await keysOf(f.api);
  await f.admin.command(["RPUSH", keys.lease, "not a lease"]);
  await f.admin.command(["HSET", keys.record, "not", "a record"]);
  const before = await commandsProcessed(f.admin);
  const token = await (await f.process()).getToken();
  ok(f.api.isValidToken(token.accessToken));
  equal(f.api.tokenRequests, 1);
  const used = await commandsProcessed(f.admin) - before;
  ok(used < 30, `${used} commands, not a spin`);
  equal(await f.admin.command(["TYPE", keys.record]), "string", "replaced");
  const again = await (await f.process()).getToken();
  equal(again.accessToken, token.accessToken, "and readable by the fleet");
  equal(f.api.tokenRequests, 1);
});

/**
 * A provider of its own (a process) over `redis`, whose looks (a read of the lease) are
 * counted, with a second connection to block on when `blocking` is set
 * (and its blocks that ended with nothing to read, a poll's end, counted);
 * its token requests take `requestMs`. A block lasts up to 20 s: a wait
 * that ends sooner was woken, whatever the machine's load.
 */
async function countedProcess(
  f: Awaited<ReturnType<typeof fleet>>,
  { blocking, requestMs = 0 }: { blocking: boolean; requestMs?: number },
) {
  const client = await connectRedis(f.redis.port);
  const blocker = blocking ? await connectRedis(f.redis.port) : undefined;
  let looks = 0;
  let emptyWaits = 0;
  const provider = createTokenProvider({
    ...f.api.environment,
    ...f.api.credentials,
    fetch: async (input, init) => {
      await new Promise((done) => realSetTimeout(done, requestMs));
      return await fetch(input, init);
    },
    store: createRedisTokenStore({
      command: (args) => (
        args[0] === "GET" && args[1]?.endsWith(":lease") && looks++,
          client.command(args)
      ),
      ...(blocker === undefined ? {} : {
        blockingCommand: async (args: string[]) => {
          const reply = await blocker.command(args);
          if (args[0] === "XREAD" && reply === null) emptyWaits++;
          return reply;
        },
      }),
      pollInterval: 20_000,
      now: f.clock,
    }),
    retry: false,
    now: f.clock,
  });
  return {
    provider,
    get looks() {
      return looks;
    },
    get emptyWaits() {
      return emptyWaits;
    },
    [Symbol.dispose]() {
      client.close();
      blocker?.close();
    },
  };
}

test("with blockingCommand, a waiting process is woken by the holder's write, which hands it the token: one look, no poll", async () => {
  await using f = await fleet();
  using holder = await countedProcess(f, { blocking: true, requestMs: 150 });
  using waiter = await countedProcess(f, { blocking: true });
  const holding = holder.provider.getToken();
  await leaseTaken(f.admin);
  const token = await waiter.provider.getToken();
  const held = await holding;
  equal(token.accessToken, held.accessToken);
  equal(f.api.tokenRequests, 1);
  // Polling would look at 1, 3, 7 … ms and see the token some time after it
  // was written; a block that ran out would end empty. How soon the wake
  // comes is scale_bench.ts's measure (Redis, woken).
  equal(waiter.looks, 1, "the look before; the token comes with the wake");
  equal(waiter.emptyWaits, 0, "woken by the write, not at the block's end");
});

test("with blockingCommand, a holder whose request fails wakes the waiters at once: they meet the fleet's cooldown, not a poll", async () => {
  await using f = await fleet();
  f.api.injectTokenFaults({ kind: "status", status: 400 });
  using holder = await countedProcess(f, { blocking: true, requestMs: 100 });
  using waiter = await countedProcess(f, { blocking: true });
  const holding = holder.provider.getToken().catch((error) => error);
  await leaseTaken(f.admin);
  const waited = await waiter.provider.getToken().catch((error) => error);
  ok(await holding instanceof TokenRequestError);
  ok(waited instanceof TokenRequestError);
  equal(f.api.tokenRequests, 1);
  ok(waiter.looks <= 2, `${waiter.looks} looks`);
  equal(waiter.emptyWaits, 0, "woken by the failure, not a poll's end");
});
