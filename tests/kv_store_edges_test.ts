// The KV token store's edges: atomic updates, failed and closed writes,
// clocks in another year, records of a foreign shape (moved from
// kv_test.ts, which had grown past 400 lines).

import { deepStrictEqual, equal, ok, throws } from "node:assert/strict";
import { createKvTokenStore } from "../src/store/kv.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { type ManualClock, manualClock } from "./_helpers.ts";
import { fleet, keyOf } from "./_kv_fleet.ts";
import { checkLostLeaseBlock } from "./_store_race.ts";

Deno.test("update() changes the record only as it was read: a concurrent write makes the change run again", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = createKvTokenStore(kv);
  const token = (accessToken: string) => ({
    accessToken,
    tokenType: "Bearer" as const,
    expiresIn: 60,
    expiresAt: Date.now() + 60_000,
    quota: [],
  });
  await store.set("k", { token: token("first"), blockedUntil: 1 });
  // Another process (a store object of its own) writes just before the first commit. Its set() commits atomically
  // too (r151 F7), through this hook: marked raced first, it passes.
  const other = createKvTokenStore(kv);
  const atomic = kv.atomic.bind(kv);
  let raced = false;
  kv.atomic = () => {
    const operation = atomic();
    const commit = operation.commit.bind(operation);
    operation.commit = async () => {
      if (!raced) {
        raced = true;
        await other.set("k", { token: token("second") });
      }
      return await commit();
    };
    return operation;
  };
  let runs = 0;
  const written = await store.update!("k", (record) => {
    runs++;
    const { token: _dropped, ...rest } = record ?? {};
    return { ...rest, renewal: { at: 5, expiresAt: 6, token: "f" } };
  });
  equal(runs, 2, "ran again on what the other process wrote");
  deepStrictEqual(written, { renewal: { at: 5, expiresAt: 6, token: "f" } });
  deepStrictEqual(await store.get("k"), {
    renewal: { at: 5, expiresAt: 6, token: "f" },
  });
  deepStrictEqual(
    await store.update!("k", () => undefined),
    written,
    "no change: the record as read",
  );
});

/** Makes every atomic commit that writes the record fail, as a value too large would. */
function refusePublish(kv: Deno.Kv, error = new TypeError("Value too large")) {
  const atomic = kv.atomic.bind(kv);
  kv.atomic = () => {
    const operation = atomic();
    const set = operation.set.bind(operation);
    const commit = operation.commit.bind(operation);
    let publishing = false;
    operation.set = (key, value, options) => {
      if (key.at(-1) === "record") publishing = true;
      return set(key, value, options);
    };
    operation.commit = () => publishing ? Promise.reject(error) : commit();
    return operation;
  };
}

Deno.test("a failed publish hands out the token, releases the lease and costs no second token", async () => {
  await using f = await fleet();
  refusePublish(f.kv);
  const provider = f.process();
  const token = await provider.getToken();
  ok(f.api.isValidToken(token.accessToken));
  equal(f.api.tokenRequests, 1);
  const leases: Deno.KvKey[] = [];
  for await (const entry of f.kv.list({ prefix: [] })) leases.push(entry.key);
  deepStrictEqual(leases, [], "the lease is released, nothing is left");
  equal(await provider.getToken(), token, "cached, no new request");
  equal(f.api.tokenRequests, 1);
});

Deno.test("a closed database never costs a token: the token just received is handed out", async () => {
  await using api = await startFakePartnerApi();
  const kv = await Deno.openKv(":memory:");
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    store: createKvTokenStore(kv),
    retry: false,
    // The database closes while the token request is in flight, after the
    // lease was taken and before the token can be published.
    fetch: (input, init) => (kv.close(), fetch(input, init)),
  });
  const token = await provider.getToken();
  ok(api.isValidToken(token.accessToken));
  equal(await provider.getToken(), token);
  equal(api.tokenRequests, 1);
});

Deno.test("a fleet whose clock reads 2031 behaves like one in 2026", async () => {
  const clock = manualClock(Date.UTC(2031, 2, 4, 8));
  await using f = await fleet({ now: clock });
  const key = await keyOf(f.api);
  // A holder that died: its lease, seen unchanged for a lease on the fleet's clock, is over.
  await f.kv.set(["partner-api", "token", key, "lease"], {
    holder: "dead",
    until: clock() - 1,
  });
  const asked = Promise.all(
    Array.from(
      { length: 4 },
      () => f.process({ now: clock }, clock).getToken(),
    ),
  );
  const tokens = await whileClockRuns(clock, asked);
  equal(new Set(tokens.map((t) => t.accessToken)).size, 1);
  equal(f.api.tokenRequests, 1);
  ok(tokens[0]!.expiresAt > clock(), "expiry is counted on the same clock");
  const record = await f.kv.get(["partner-api", "token", key, "record"]);
  ok(record.value !== null, "stored, with an expireIn KV accepts");
});

/** `pending`, while `clock` runs 200 ms every 5 ms of real time (the waiters poll on real timers). */
async function whileClockRuns<T>(clock: ManualClock, pending: Promise<T>) {
  let settled = false;
  pending.finally(() => settled = true).catch(() => {});
  while (!settled) {
    await new Promise((tick) => setTimeout(tick, 5));
    clock.advance(200);
  }
  return await pending;
}

Deno.test("a member whose clock is ahead (20 s, 9 min), or whose own lease is shorter (2 s against 10 s), waits for a live lease: one token request (r178a F1, F2: it took the lease and sent a second)", async () => {
  const cases: [number, number][] = [[20_000, 10_000], [540_000, 10_000], [
    0,
    2_000,
  ]];
  for (const [ahead, leaseDuration] of cases) {
    await using f = await fleet();
    let release = () => {};
    const held = new Promise<void>((go) => release = go);
    let asking = () => {};
    const asked = new Promise<void>((go) => asking = go);
    const holder = createTokenProvider({
      ...f.api.environment,
      ...f.api.credentials,
      store: createKvTokenStore(f.kv, { pollInterval: 5 }),
      retry: false,
      fetch: async (input, init) => (asking(), await held, fetch(input, init)),
    });
    const first = holder.getToken();
    await asked;
    const clock = manualClock(Date.now() + ahead);
    const second = f.process({ now: clock, leaseDuration }, clock).getToken();
    // The other's clock runs 6 s on, a tick at a time (past a lease of 2 s, and past the holder's `until` by its
    // reading), then the held request is answered.
    for (let tick = 0; tick < 30; tick++) {
      await new Promise((go) => setTimeout(go, 5));
      clock.advance(200);
    }
    release();
    const [one, two] = await Promise.all([first, second]);
    equal(
      f.api.tokenRequests,
      1,
      `${ahead} ms ahead, a lease of ${leaseDuration}`,
    );
    equal(one.accessToken, two.accessToken);
  }
});

Deno.test("a dead holder's lease longer than the waiters' maxWait (60 s against 45 s) is taken by one of 4 members within their wait: one token request (review r179 R3: each requested alone at maxWait)", async () => {
  const clock = manualClock();
  await using f = await fleet({ now: clock });
  const key = await keyOf(f.api);
  await f.kv.set(["partner-api", "token", key, "lease"], {
    holder: "dead",
    until: clock() + 60_000,
    ms: 60_000,
  });
  const asked = Promise.all(
    Array.from(
      { length: 4 },
      () => f.process({ now: clock, leaseDuration: 60_000 }, clock).getToken(),
    ),
  );
  await whileClockRuns(clock, asked);
  equal(f.api.tokenRequests, 1);
});

Deno.test("createKvTokenStore() outside Deno fails at once with a TypeError", () => {
  const deno = Object.getOwnPropertyDescriptor(globalThis, "Deno")!;
  // deno-lint-ignore no-explicit-any
  const kv = {} as any;
  delete (globalThis as { Deno?: unknown }).Deno;
  try {
    throws(() => createKvTokenStore(kv), TypeError);
  } finally {
    Object.defineProperty(globalThis, "Deno", deno);
  }
});

Deno.test("stores fail closed: a KV record or lease of a foreign shape counts as absent and is replaced", async () => {
  await using api = await startFakePartnerApi();
  using kv = await Deno.openKv(":memory:");
  const key = await keyOf(api);
  await kv.set(["partner-api", "token", key, "record"], "not a record");
  await kv.set(["partner-api", "token", key, "lease"], ["not", "a lease"]);
  const provider = () =>
    createTokenProvider({
      ...api.environment,
      ...api.credentials,
      store: createKvTokenStore(kv, { maxWait: 60_000 }),
    });
  const token = await provider().getToken();
  ok(api.isValidToken(token.accessToken));
  equal((await provider().getToken()).accessToken, token.accessToken);
  equal(api.tokenRequests, 1, "replaced at once, then shared");
});

Deno.test("a lease holder that lost its lease while its token request was answered 429 stores the block: another process sends no request (the block was dropped, compared as a token no newer than the one stored)", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const open = () => createKvTokenStore(kv);
    await checkLostLeaseBlock([open(), open()], async () => {
      // A lease run out, as KV's expiry removes it.
      for await (const { key } of kv.list({ prefix: [] })) {
        if (key.at(-1) === "lease") await kv.delete(key);
      }
    });
  } finally {
    kv.close();
  }
});
