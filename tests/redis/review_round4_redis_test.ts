// Review of round 4 against a real redis-server (skipped, with one line, when
// it is not installed): the Redis store's `blockingCommand` and the lease
// loop's second look. Each finding failed on the code the review read (a fix
// followed, named in its commit); the attacks that found nothing are tests too.
// Commands are counted with INFO stats, as redis_store_test.ts does.

import { equal, ok } from "node:assert/strict";
import { createRedisTokenStore } from "../../src/store/redis.ts";
import type { RedisTokenStoreOptions } from "../../src/store/redis.ts";
import { createTokenProvider } from "../../src/token/mod.ts";
import {
  type FakePartnerApi,
  startFakePartnerApi,
} from "../../src/testing/mod.ts";
import { keysOf } from "./_keys.ts";
import {
  connectRedis,
  type RedisClient,
  redisTest as test,
  startRedis,
} from "./_redis_server.ts";

/** A finding of the review: failed before its fix. */
const finding = (name: string, fn: () => Promise<void>) => test(name, fn);

/** A redis-server, an admin connection, and connections closed at the end. */
async function redisBeside() {
  const redis = await startRedis();
  const connections: RedisClient[] = [];
  const connect = async () => {
    const client = await connectRedis(redis.port);
    connections.push(client);
    return client;
  };
  const admin = await connect();
  return {
    admin,
    connect,
    /** Commands Redis processed so far (INFO stats), the admin's included. */
    async commands(): Promise<number> {
      const info = String(await admin.command(["INFO", "stats"]));
      return Number(/total_commands_processed:(\d+)/.exec(info)![1]);
    },
    async [Symbol.asyncDispose]() {
      for (const client of connections) client.close();
      await redis.kill();
    },
  };
}

type Redis = Awaited<ReturnType<typeof redisBeside>>;

/**
 * A process: one store on connections of its own (one more to block on
 * unless `blocking` is false), whose providers request through `gate`.
 */
async function processOn(
  redis: Redis,
  options: Partial<RedisTokenStoreOptions> & { blocking?: boolean } = {},
) {
  const { blocking = true, ...storeOptions } = options;
  const connection = await redis.connect();
  const blocker = blocking ? await redis.connect() : undefined;
  const blocked: string[][] = [];
  const store = createRedisTokenStore({
    command: connection.command,
    ...(blocker === undefined ? {} : {
      blockingCommand: (
        args: string[],
      ) => (blocked.push(args), blocker.command(args)),
    }),
    ...storeOptions,
  });
  return {
    /** Every command sent on the blocking connection. */
    blocked,
    provider(api: FakePartnerApi, gate?: Promise<void>) {
      return createTokenProvider({
        ...api.environment,
        ...api.credentials,
        store,
        retry: false,
        ...(gate === undefined ? {} : {
          fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
            await gate;
            return await fetch(input, init);
          },
        }),
      });
    },
  };
}

/** Resolves once `check` holds, looking every ms. */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!await check()) await new Promise((done) => setTimeout(done, 1));
}

const leases = async (redis: Redis) =>
  (await redis.admin.command(["KEYS", "*:lease"]) as string[]).length;

// ---------------------------------------------------------------------------
// Findings

finding(
  "blockingCommand: waiters for two clients on one store are each woken by their own holder's write, not by the end of the other's wait",
  async () => {
    await using redis = await redisBeside();
    await using first = await startFakePartnerApi();
    await using second = await startFakePartnerApi();
    const firstGate = Promise.withResolvers<void>();
    const secondGate = Promise.withResolvers<void>();
    const holders = await processOn(redis, { blocking: false });
    const heldFirst = holders.provider(first, firstGate.promise).getToken();
    const heldSecond = holders.provider(second, secondGate.promise).getToken();
    await until(async () => await leases(redis) === 2);
    // One process, one store, two clients: it waits on both holders. Their
    // leases last ten minutes: a wait that ends only with another's, or
    // with the lease, outlasts the test's deadline.
    const waiters = await processOn(redis, { leaseDuration: 600_000 });
    const waitFirst = waiters.provider(first).getToken();
    await until(() => waiters.blocked.length === 1);
    const waitSecond = waiters.provider(second).getToken();
    await until(() => waiters.blocked.length === 2);
    secondGate.resolve();
    const token = await heldSecond;
    // Woken by its holder's write, not by another wait's end: the first
    // holder is let go only once the second waiter has its token.
    equal((await waitSecond).accessToken, token.accessToken);
    firstGate.resolve();
    await Promise.all([heldFirst, waitFirst]);
  },
);

finding(
  "blockingCommand: a waiter on a lease held by a 0.3.0 process (whose PUBLISH adds no stream entry) sees the token as a poll would",
  async () => {
    await using redis = await redisBeside();
    await using api = await startFakePartnerApi();
    const gate = Promise.withResolvers<void>();
    // 0.3.0's PUBLISH (84446b3): the same keys and arguments, no XADD.
    const published030 =
      `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[2])
return 1`;
    const connection = await redis.connect();
    const old = await processOn(redis, {
      blocking: false,
      command: (args) =>
        connection.command(
          args[0] === "EVAL" && args[1]!.includes("XADD") &&
            args[1]!.includes("redis.call('SET', KEYS[1]")
            ? ["EVAL", published030, ...args.slice(2)]
            : args,
        ),
    });
    const holding = old.provider(api, gate.promise).getToken();
    await until(async () => await leases(redis) === 1);
    // A lease of ten minutes: a waiter that waited for it to run out (a
    // rolling upgrade costs every waiter leaseDuration) outlasts the test's
    // deadline; one that looks again each pollInterval sees the token.
    const waiters = await processOn(redis, { leaseDuration: 600_000 });
    const waiting = waiters.provider(api).getToken();
    await until(() => waiters.blocked.length === 1);
    gate.resolve();
    const token = await holding;
    equal((await waiting).accessToken, token.accessToken);
    equal(api.tokenRequests, 1);
    // Each wait blocks at most pollInterval (50 ms by default) before it
    // looks again, as a poll would (not 1 s, not the lease).
    for (const args of waiters.blocked) {
      const block = Number(args[args.indexOf("BLOCK") + 1]);
      ok(block <= 50, `XREAD BLOCK ${block}`);
    }
  },
);

finding(
  "lease: a record value the client cannot read back byte for byte (not UTF-8) is taken over at once, like a key of the wrong type",
  async () => {
    await using redis = await redisBeside();
    await using api = await startFakePartnerApi();
    const keys = await keysOf(api);
    // Bytes 0xff 0xfe: not UTF-8, so the client's text never matches in TAKE.
    await redis.admin.command([
      "EVAL",
      "return redis.call('SET', KEYS[1], string.char(255, 254))",
      "1",
      keys.record,
    ]);
    const connection = await redis.connect();
    const store = createRedisTokenStore({
      command: connection.command,
      maxWait: 0,
    });
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      store,
      retry: false,
      timeout: 500, // the request budget: what a waiter waits at most
    });
    const before = await redis.commands();
    const token = await provider.getToken();
    const used = await redis.commands() - before - 1;
    ok(api.isValidToken(token.accessToken));
    equal(api.tokenRequests, 1);
    // As for keys of the wrong type: what the store cannot read is taken over
    // at once (before the fix, every take failed until the request budget
    // ran out: 161 commands), as in "stores fail closed".
    ok(used < 30, `${used} commands before the token was published`);
  },
);

finding(
  "blockingCommand: an entry on the holder's stream that is no record (another writer) wakes a waiter once, no spin",
  async () => {
    await using redis = await redisBeside();
    await using api = await startFakePartnerApi();
    const keys = await keysOf(api);
    // A lease's value as a store writes it (a UUID, a space, the holder): any other text fails the store (r174b F3).
    const holder = `${crypto.randomUUID()} holder-of-another-process`;
    await redis.admin.command(["SET", keys.lease, holder, "PX", "60"]);
    await redis.admin.command([
      "XADD",
      `${keys.lease}:${holder}`,
      "*",
      "x",
      "y",
    ]);
    const waiters = await processOn(redis);
    const before = await redis.commands();
    const token = await waiters.provider(api).getToken();
    const used = await redis.commands() - before - 1;
    ok(api.isValidToken(token.accessToken));
    equal(api.tokenRequests, 1);
    ok(used < 30, `${used} commands in the lease's 60 ms: a spin`);
  },
);

// ---------------------------------------------------------------------------
// Attacks that found nothing

test("blockingCommand: a holder that dies (no stream entry) costs a waiter one XREAD of at most leaseDuration, then it takes over; the blocking connection only ever sends XREAD", async () => {
  await using redis = await redisBeside();
  await using api = await startFakePartnerApi();
  const keys = await keysOf(api);
  // The holder's lease has a second left when the waiter first looks: time
  // enough on a loaded machine (40 ms was not: the lease expired before the
  // look, and nothing was waited on). Its one XREAD is bounded by the lease
  // (1 s), not by a poll interval.
  const waiters = await processOn(redis, {
    leaseDuration: 1000,
    pollInterval: 2000,
  });
  const dead = `${crypto.randomUUID()} dead-holder`;
  await redis.admin.command(["SET", keys.lease, dead, "PX", "1000"]);
  const before = await redis.commands();
  const token = await waiters.provider(api).getToken();
  const used = await redis.commands() - before - 1;
  ok(api.isValidToken(token.accessToken));
  equal(api.tokenRequests, 1);
  // A look (two reads: the record's is bounded), one XREAD, a look, the
  // take, the read after the request and the publish (INFO counts the
  // commands the scripts run: 6 and 9, the publish checking the record read).
  ok(used <= 21, `${used} commands`);
  equal(waiters.blocked.length, 1);
  ok(waiters.blocked.every((args) => args[0] === "XREAD"));
});

test("blockingCommand: a stream key of the wrong type, or a blocking connection that fails at once, is waited out at pollInterval, not in a loop", async () => {
  await using redis = await redisBeside();
  for (const failing of ["wrong type", "connection"]) {
    await using api = await startFakePartnerApi();
    const keys = await keysOf(api);
    const holder = `${crypto.randomUUID()} holder-that-never-writes`;
    await redis.admin.command(["SET", keys.lease, holder, "PX", "40"]);
    if (failing === "wrong type") {
      await redis.admin.command(["SET", `${keys.lease}:${holder}`, "text"]);
    }
    const connection = await redis.connect();
    const store = createRedisTokenStore({
      command: connection.command,
      pollInterval: 10,
      blockingCommand: failing === "connection"
        ? () => Promise.reject(new Error("Connection is closed."))
        : (await redis.connect()).command,
    });
    const before = await redis.commands();
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      store,
      retry: false,
    });
    await provider.getToken();
    const used = await redis.commands() - before - 1;
    equal(api.tokenRequests, 1);
    // A look and an XREAD per 10 ms, the take and the publish: about 20
    // (a spin makes hundreds, see the garbage entry above).
    ok(used < 40, `${failing}: ${used} commands while a 40 ms lease ran`);
  }
});

test("blockingCommand: a caller that aborts while its flight blocks on XREAD leaves with its reason; the flight goes on, is woken, and nothing rejects unhandled", async () => {
  await using redis = await redisBeside();
  await using api = await startFakePartnerApi();
  const gate = Promise.withResolvers<void>();
  const holders = await processOn(redis, { blocking: false });
  const holding = holders.provider(api, gate.promise).getToken();
  await until(async () => await leases(redis) === 1);
  const waiters = await processOn(redis);
  const provider = waiters.provider(api);
  const caller = new AbortController();
  const leaving = provider.getToken({ signal: caller.signal }).catch((
    error,
  ) => error);
  await until(() => waiters.blocked.length === 1);
  const reason = new Error("the caller hung up");
  caller.abort(reason);
  equal(await leaving, reason);
  gate.resolve();
  const token = await holding;
  equal((await provider.getToken()).accessToken, token.accessToken);
  equal(api.tokenRequests, 1);
  equal(waiters.blocked.length, 1, "woken by the write, no second XREAD");
});
