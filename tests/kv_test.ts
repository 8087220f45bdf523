import {
  deepStrictEqual,
  equal,
  notEqual,
  ok,
  rejects,
  throws,
} from "node:assert/strict";
import {
  createKvRateLimiter,
  createKvTokenStore,
  type KvRateLimiterOptions,
  type KvTokenStoreOptions,
} from "../src/store/kv.ts";
import { QuotaExceededError, TokenRequestError } from "../src/core/errors.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { holdsAnywhere, manualClock, withFakeTimers } from "./_helpers.ts";
import type { Clock } from "@sinonjs/fake-timers";
import {
  drive,
  inProcessFake,
  type InProcessOptions,
  onFakeClock,
  trackedIo,
} from "./_fast_setup.ts";
import { storeKey } from "../src/store/_key.ts";
import { fleet, keyOf, storeKeyOf } from "./_kv_fleet.ts";

/**
 * {@linkcode fleet} on fake time: the fake in process, the database and
 * crypto tracked, so that `run` moves the clock only between their
 * operations. Leases, polls and timeouts pass as the clock says.
 */
async function fleetOnFakeTime(timers: Clock, fake: InProcessOptions = {}) {
  const now = () => timers.now;
  const api = inProcessFake({ now, ...fake });
  const kv = await Deno.openKv(":memory:");
  const io = trackedIo(kv);
  const process = (options: KvTokenStoreOptions = {}, timeout?: number) =>
    createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      now,
      store: createKvTokenStore(io.kv, { pollInterval: 5, now, ...options }),
      retry: false,
      ...(timeout === undefined ? {} : { timeout }),
    });
  return {
    api,
    kv,
    process,
    run: <T>(work: Promise<T>) => drive(timers, work, io.idle),
    [Symbol.dispose]() {
      io[Symbol.dispose]();
      kv.close();
      api[Symbol.dispose]();
    },
  };
}

Deno.test("store keys stretch the secret with PBKDF2 (210,000 rounds of SHA-256): a key name does not let anyone test guesses quickly", async () => {
  const secret = "weak";
  const key = await storeKey({
    url: new URL("https://idp.example/token"),
    audience: "a",
    clientId: "c",
    secret,
  });
  const material = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    "PBKDF2",
    false,
    ["deriveBits"],
  );
  const bits = await crypto.subtle.deriveBits(
    {
      name: "PBKDF2",
      hash: "SHA-256",
      salt: new TextEncoder().encode("partner-api token store key v2"),
      iterations: 210_000,
    },
    material,
    128,
  );
  const expected = Array.from(
    new Uint8Array(bits),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
  equal(JSON.parse(key).at(-1), expected);
});

Deno.test("records rest sealed by default, under names that hold neither the secret nor its store key", async () => {
  await using f = await fleet();
  const token = await f.process().getToken();
  const entries: Deno.KvEntry<unknown>[] = [];
  for await (const entry of f.kv.list({ prefix: [] })) entries.push(entry);
  equal(entries.length, 1, "the lease is gone once the token is stored");
  const [{ key, value }] = entries as [Deno.KvEntry<unknown>];
  equal(key.at(-1), "record");
  const secret = f.api.credentials.clientSecret;
  const stretched = JSON.parse(await storeKeyOf(f.api)).at(-1);
  for (
    const text of [
      JSON.stringify(key),
      new TextDecoder().decode(
        (value as { sealed: Uint8Array }).sealed,
      ),
    ]
  ) {
    ok(!text.includes(secret));
    ok(!text.includes(stretched), "the seal's source is in no name");
    ok(!text.includes(token.accessToken), "sealed");
  }
  ok(!("plain" in (value as object)));
});

Deno.test("cold processes sharing KV make one token request; a second wave makes none", async () => {
  await withFakeTimers(async (timers) => {
    using f = await fleetOnFakeTime(timers);
    f.api.service.injectTokenFaults({ kind: "delay", ms: 30 });
    const wave = () =>
      f.run(Promise.all(
        Array.from({ length: 8 }, () => f.process().getToken()),
      ));
    const first = await wave();
    equal(new Set(first.map((t) => t.accessToken)).size, 1);
    equal(f.api.service.tokenRequests, 1);
    const second = await wave();
    deepStrictEqual(
      second.map((t) => t.accessToken),
      first.map((t) => t.accessToken),
    );
    equal(f.api.service.tokenRequests, 1);
  });
});

Deno.test("a lease whose holder died runs out and another process takes over", async () => {
  await withFakeTimers(async (timers) => {
    using f = await fleetOnFakeTime(timers);
    const key = await keyOf(f.api);
    await f.kv.set(["partner-api", "token", key, "lease"], {
      holder: "dead",
      until: timers.now + 150,
    });
    const pending = f.process().getToken();
    // Until the dead holder's lease runs out, nobody asks for a token.
    await f.run(onFakeClock(timers, 140));
    equal(f.api.service.tokenRequests, 0, "waited for the lease to run out");
    const token = await f.run(pending);
    ok(f.api.service.isValidToken(token.accessToken));
    equal(f.api.service.tokenRequests, 1);
  });
});

Deno.test("a slow lease holder renews its lease, so nobody takes over", async () => {
  await withFakeTimers(async (timers) => {
    using f = await fleetOnFakeTime(timers);
    f.api.service.injectTokenFaults({ kind: "delay", ms: 200 });
    const tokens = await f.run(Promise.all([
      f.process({ leaseDuration: 40 }).getToken(),
      f.process({ leaseDuration: 40 }).getToken(),
    ]));
    equal(tokens[0]?.accessToken, tokens[1]?.accessToken);
    equal(f.api.service.tokenRequests, 1);
  });
});

Deno.test("a process that waits longer than maxWait requests its own token", async () => {
  await withFakeTimers(async (timers) => {
    using f = await fleetOnFakeTime(timers);
    await f.kv.set(["partner-api", "token", await keyOf(f.api), "lease"], {
      holder: "stuck",
      until: timers.now + 60_000,
    });
    // It waits at least as long as the holder's request may take: make that
    // short (a 100 ms time limit, no retries), not the default 30 s.
    const token = await f.run(f.process({ maxWait: 50 }, 100).getToken());
    ok(f.api.service.isValidToken(token.accessToken));
    const again = await f.run(f.process().getToken());
    equal(
      again.accessToken,
      token.accessToken,
      "the fallback token is shared too",
    );
    equal(f.api.service.tokenRequests, 1);
  });
});

Deno.test("when the lease holder's request fails, the waiting process keeps its cooldown and sends nothing", async () => {
  await using f = await fleet();
  f.api.injectTokenFaults({ kind: "status", status: 400 });
  const results = await Promise.allSettled([
    f.process().getToken(),
    f.process().getToken(),
  ]);
  deepStrictEqual(results.map((r) => r.status), ["rejected", "rejected"]);
  for (const result of results) {
    const { reason } = result as PromiseRejectedResult;
    ok(reason instanceof TokenRequestError);
    equal(reason.status, 400, "the holder's failure, as it was");
  }
  equal(f.api.tokenRequests, 1, "one request for the fleet");
});

Deno.test("the quota circuit is shared: after a 429 no process asks before the reset", async () => {
  await using f = await fleet({ quota: { perHour: 1 } });
  const a = f.process();
  const first = await a.getToken();
  await a.invalidate(first.accessToken);
  let blocked!: QuotaExceededError;
  await rejects(a.getToken(), (error: unknown) => {
    ok(error instanceof QuotaExceededError);
    blocked = error;
    return true;
  });
  equal(f.api.tokenRequests, 2);
  const b = f.process();
  await rejects(b.getToken(), (error: unknown) => {
    ok(error instanceof QuotaExceededError);
    equal(error.retryAt, blocked.retryAt, "the block the first process met");
    return true;
  });
  equal(f.api.tokenRequests, 2, "the other process sent nothing");
});

Deno.test("a 429 during a refresh keeps the valid token for the whole fleet", async () => {
  const clock = manualClock(Date.UTC(2026, 10, 21, 10, 30));
  await using f = await fleet({
    quota: { perHour: 1 },
    tokenLifetime: 600_000,
    now: clock,
  });
  const first = await f.process({}, clock).getToken();
  clock.set(first.expiresAt - 30_000);
  const refreshing = f.process({}, clock);
  // A cold process in the refresh window asks, meets the quota, and still
  // gets the stored token, which the block keeps for the whole fleet.
  equal((await refreshing.getToken()).accessToken, first.accessToken);
  equal(f.api.tokenRequests, 2, "the refresh met the quota");
  const late = f.process({}, clock);
  equal((await late.getToken()).accessToken, first.accessToken);
  clock.set(first.expiresAt);
  await rejects(late.getToken(), QuotaExceededError);
  equal(f.api.tokenRequests, 2);
});

Deno.test("an expired record is ignored even before KV deletes it", async () => {
  await using f = await fleet();
  const clock = manualClock(Date.now());
  const first = await f.process({}, clock).getToken();
  clock.set(first.expiresAt + 1);
  notEqual(
    (await f.process({}, clock).getToken()).accessToken,
    first.accessToken,
  );
  equal(f.api.tokenRequests, 2);
});

Deno.test("an encryption key keeps tokens unreadable at rest", async () => {
  await using f = await fleet();
  const algorithm = { name: "AES-GCM", length: 256 };
  const key = await crypto.subtle.generateKey(algorithm, false, [
    "encrypt",
    "decrypt",
  ]);
  const token = await f.process({ encryptionKey: key }).getToken();
  for await (const entry of f.kv.list({ prefix: [] })) {
    ok(!Deno.inspect(entry.value, { depth: 10 }).includes(token.accessToken));
  }
  equal(
    (await f.process({ encryptionKey: key }).getToken()).accessToken,
    token.accessToken,
  );
  const other = await crypto.subtle.generateKey(algorithm, false, [
    "encrypt",
    "decrypt",
  ]);
  notEqual(
    (await f.process({ encryptionKey: other }).getToken()).accessToken,
    token.accessToken,
    "a record sealed with another key counts as absent",
  );
  notEqual((await f.process().getToken()).accessToken, token.accessToken);
});

Deno.test("a KV token store holds its encryption key where no user of the store reads it: not as a property, not in what inspecting it shows", async () => {
  using kv = await Deno.openKv(":memory:");
  const key = await crypto.subtle.generateKey(
    { name: "AES-GCM", length: 256 },
    true,
    ["encrypt", "decrypt"],
  );
  const store = createKvTokenStore(kv, { encryptionKey: key });
  ok(!holdsAnywhere(store, key), "the key is reachable from the store");
  ok(!Deno.inspect(store, { depth: 10 }).includes("CryptoKey"));
});

Deno.test("createKvTokenStore() refuses bad options", async () => {
  using kv = await Deno.openKv(":memory:");
  throws(() => createKvTokenStore(kv, { leaseDuration: 0 }), RangeError);
  throws(() => createKvTokenStore(kv, { maxWait: -1 }), RangeError);
  throws(() => createKvTokenStore(kv, { pollInterval: 1.5 }), RangeError);
  const hmac = await crypto.subtle.generateKey(
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  throws(() => createKvTokenStore(kv, { encryptionKey: hmac }), TypeError);
});

Deno.test("createKvTokenStore() and createKvRateLimiter() refuse a prefix KV cannot hold: not an array of key parts, or leaving no room for their own parts in 2,048 bytes", async () => {
  using kv = await Deno.openKv(":memory:");
  const create = [
    (prefix: unknown) =>
      createKvTokenStore(kv, { prefix } as KvTokenStoreOptions),
    (prefix: unknown) =>
      createKvRateLimiter(kv, { prefix } as KvRateLimiterOptions),
  ];
  // Holes, and a bigint over KV's 255 bytes, too (r178a F5: accepted, then every write failed).
  const holes = [1, , 2];
  const wrong = [5, "app", [{}], [null], [undefined], [Symbol()], holes, [
    10n ** 700n,
  ], new Array(2)];
  for (const prefix of wrong) {
    for (const make of create) {
      throws(() => make(prefix), { name: "TypeError", option: "prefix" });
    }
  }
  // The store adds a digest and "record" (42 bytes), the limiter "answers" and a send's name (41): 2 bytes a string more.
  for (const [make, room] of [[create[0]!, 42], [create[1]!, 41]] as const) {
    throws(() => make(["x".repeat(2047 - room)]), {
      name: "RangeError",
      option: "prefix",
    });
    make(["x".repeat(2046 - room)]);
    // A huge sparse array is refused by its length, not walked (r179 R8: new Array(1e8) took 11 s).
    throws(() => make(new Array(1e8)), {
      name: "RangeError",
      option: "prefix",
    });
  }
  const parts = [
    1,
    2n ** 70n,
    2n ** 2039n,
    true,
    new Uint8Array([0, 1]),
    "é\0",
  ];
  const store = createKvTokenStore(
    kv,
    { prefix: parts } as KvTokenStoreOptions,
  );
  await store.set("client", { blockedUntil: 1 });
  equal((await store.get("client"))?.blockedUntil, 1);
  const longest = createKvTokenStore(kv, { prefix: ["x".repeat(2004)] });
  await longest.set("client", { blockedUntil: 2 });
  equal((await longest.get("client"))?.blockedUntil, 2);
});
