// The memory store's coordination: providers of one process over one store
// send one token request between them, as over KV, Redis or the file store.
// Counts, not durations: time is driven (a manual clock, fake timers).

import { deepEqual, equal, ok, rejects } from "node:assert/strict";
import { QuotaExceededError, TokenRequestError } from "../src/core/errors.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import {
  type CoordinateOptions,
  createMemoryTokenStore,
  type TokenRecord,
  type TokenStore,
} from "../src/store/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";
import { drive, inProcessFake, realTurn } from "./_fast_setup.ts";
import { type Gate, interleave, type Plan } from "./_store_schedule.ts";

/** `n` providers of `options` (one store between them). */
function providersOf(
  n: number,
  options: Parameters<typeof createTokenProvider>[0],
) {
  return Array.from({ length: n }, () => createTokenProvider(options));
}

/** What each of `providers` rejected with, asked for a token at once (each must reject). */
async function refusals(providers: { getToken(): Promise<unknown> }[]) {
  const results = await Promise.allSettled(providers.map((p) => p.getToken()));
  return results.map((result) => {
    equal(result.status, "rejected");
    return (result as PromiseRejectedResult).reason;
  });
}

for (const n of [2, 10]) {
  Deno.test(`${n} providers over one memory store, started together, spend one token request`, async () => {
    await using api = await startFakePartnerApi();
    const store = createMemoryTokenStore();
    const options = { ...api.environment, ...api.credentials, store };
    const providers = Array.from(
      { length: n },
      () => createTokenProvider(options),
    );
    const tokens = await Promise.all(providers.map((p) => p.getToken()));
    equal(api.tokenRequests, 1);
    equal(new Set(tokens.map((token) => token.accessToken)).size, 1);
  });
}

Deno.test("a failed first flight is every waiter's cooldown, and after it the next caller requests again", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  api.injectTokenFaults({ kind: "status", status: 503 });
  const store = createMemoryTokenStore();
  const options = {
    ...api.environment,
    ...api.credentials,
    store,
    now: clock,
    retry: false as const,
  };
  const providers = providersOf(10, options);
  for (const error of await refusals(providers)) {
    ok(error instanceof TokenRequestError);
    equal(error.status, 503);
  }
  equal(api.tokenRequests, 1, "one request failed for all ten");
  clock.advance(60_000); // past the first cooldown (10 s)
  const token = await providers[9]!.getToken();
  ok(api.isValidToken(token.accessToken));
  equal(
    (await createTokenProvider(options).getToken()).accessToken,
    token.accessToken,
  );
  equal(api.tokenRequests, 2, "the next caller's own request, shared");
});

Deno.test("a 429 on one provider's request blocks every provider of the store without a request each", async () => {
  await using api = await startFakePartnerApi();
  api.injectTokenFaults({ kind: "status", status: 429, retryAfter: 60 });
  const store = createMemoryTokenStore();
  const options = { ...api.environment, ...api.credentials, store };
  const providers = providersOf(5, options);
  for (const error of await refusals(providers)) {
    ok(error instanceof QuotaExceededError);
  }
  await rejects(createTokenProvider(options).getToken(), QuotaExceededError);
  equal(api.tokenRequests, 1);
});

Deno.test("a caller that leaves does not end the flight the other providers wait for", async () => {
  await withFakeTimers(async (timers) => {
    using api = inProcessFake();
    api.service.injectTokenFaults({ kind: "delay", ms: 1_000 });
    const memory = createMemoryTokenStore();
    let looks = 0;
    const store: TokenStore = {
      ...memory,
      get: (key) => (looks++, memory.get(key)),
    };
    const options = {
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      store,
    };
    const leader = createTokenProvider(options);
    const waiter = createTokenProvider(options);
    const leaving = new AbortController();
    const left = leader.getToken({ signal: leaving.signal }).catch((e) => e);
    while (api.sent.length === 0) await realTurn(); // the leader's request is under way
    const joined = waiter.getToken();
    while (looks < 2) await realTurn(); // the waiter found the flight
    const reason = new Error("the caller left");
    leaving.abort(reason);
    equal(await left, reason);
    const token = await drive(timers, joined);
    equal((await leader.getToken()).accessToken, token.accessToken);
    equal(api.service.tokenRequests, 1);
  });
});

// r173b F1: a waiter's own budget (timeout 100: about 60 s) ran out while the holder's request (timeout 120 s) was due
// for minutes yet; the waiter dropped the holder's flight, and the next caller sent a second token request.
Deno.test("a waiter whose budget is shorter than the holder's leaves its flight in place: the next caller waits for it (one token request)", async () => {
  await withFakeTimers(async (timers) => {
    using api = inProcessFake();
    api.service.injectTokenFaults({ kind: "delay", ms: 65_000 });
    const memory = createMemoryTokenStore();
    let looks = 0;
    const options = {
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      store: { ...memory, get: (key: string) => (looks++, memory.get(key)) },
      retry: false as const,
    };
    const holder = createTokenProvider({ ...options, timeout: 120_000 });
    const hasty = { ...options, timeout: 100 };
    const held = holder.getToken();
    while (api.sent.length === 0) await realTurn();
    // Each caller's look at the store comes before time moves: its key is derived in real time.
    const joined = async <T>(caller: Promise<T>): Promise<T> => {
      const before = looks;
      while (looks === before) await realTurn();
      return await drive(timers, caller);
    };
    await rejects(joined(createTokenProvider(hasty).getToken()));
    const token = await joined(createTokenProvider(hasty).getToken());
    equal((await held).accessToken, token.accessToken);
    equal(api.service.tokenRequests, 1);
  });
});

/** Coordination options over a record with a block: `looks` counts the calls of `settled`. */
function coordinateOptions(
  request: () => Promise<TokenRecord>,
): CoordinateOptions & { readonly looks: number } {
  let looks = 0;
  return {
    get looks() {
      return looks;
    },
    settled: (record) => (looks++, record.blockedUntil !== undefined),
    request,
    signal: new AbortController().signal,
    requestBudget: 60_000,
  };
}

Deno.test("a request that throws holds nobody: the caller waiting on it sends its own", async () => {
  const store = createMemoryTokenStore();
  await store.set("client", {}); // a record that settles nothing: each look calls `settled`
  let fail = (_: Error) => {};
  const first = store.coordinate!(
    "client",
    coordinateOptions(() => new Promise((_, reject) => fail = reject)),
  );
  const record = { blockedUntil: 1 };
  let asked = 0;
  const second = coordinateOptions(() => (asked++, Promise.resolve(record)));
  const waiting = store.coordinate!("client", second);
  while (second.looks === 0) await realTurn();
  equal(asked, 0, "it waits for the flight under way");
  fail(new Error("dropped"));
  await rejects(first, { message: "dropped" });
  deepEqual(await waiting, record);
  equal(asked, 1);
  deepEqual(await store.get("client"), record);
});

// r174a F4: a caller that came once the holder's request was overdue waited its whole budget (60 s) and failed; r175b:
// one that came before then did.
Deno.test("a flight that never ends is dropped once its request is overdue (its budget and 5 s): a caller waiting on it, or one coming after, requests then", async () => {
  await withFakeTimers(async (timers) => {
    for (const comes of ["before", "after"]) {
      const store = createMemoryTokenStore();
      await store.set("client", {});
      const never = coordinateOptions(() => new Promise(() => {}));
      store.coordinate!("client", { ...never, requestBudget: 50 });
      if (comes === "after") await timers.tickAsync(5_100);
      let asked = 0;
      const record = { blockedUntil: 1 };
      const next = coordinateOptions(() => (asked++, Promise.resolve(record)));
      deepEqual(await drive(timers, store.coordinate!("client", next)), record);
      equal(asked, 1, comes);
    }
  });
});

Deno.test("the flight stores its answer over the record as it then stands: a 401's renewal or a block another provider's update() lands between its read and its write stands (it was lost)", async () => {
  const memory = createMemoryTokenStore();
  // A view of the one store whose get, set and update wait for the schedule; its coordinate() is the store's own.
  const open = (gate: Gate): TokenStore => ({
    get: (key) => gate(() => memory.get(key)),
    set: (key, record) => gate(() => memory.set(key, record)),
    update: (key, change) => gate(() => memory.update!(key, change)),
    coordinate: memory.coordinate!,
  });
  const plans: Plan[] = [["coordinate"], ["update", "update"]];
  // The flight's look and its read after the request, two updates, then the flight's write.
  const stored = await interleave(open, "client", plans, [0, 0, 1, 1, 0]);
  deepEqual(stored, { blockedUntil: 4 });
});

Deno.test("a memory store made with its own get and set (its update() the store's) is written through its set: two providers over it, one after the other, spend one token request", async () => {
  await using api = await startFakePartnerApi();
  const records = new Map<string, TokenRecord>();
  const store: TokenStore = {
    ...createMemoryTokenStore(),
    get: (key) => Promise.resolve(records.get(key)),
    set: (key, record) => Promise.resolve(void records.set(key, record)),
  };
  const options = { ...api.environment, ...api.credentials, store };
  const first = await createTokenProvider(options).getToken();
  const second = await createTokenProvider(options).getToken();
  equal(second.accessToken, first.accessToken);
  equal(api.tokenRequests, 1);
  equal(records.size, 1);
});
