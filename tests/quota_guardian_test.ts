// Issue 22, the quota: one guardian, the provider. Each test is named after
// the promise it keeps and fails on the code before round 3. Time is driven,
// never waited for.

import { equal, ok, rejects } from "node:assert/strict";
import { QuotaExceededError, TokenRequestError } from "../src/core/errors.ts";
import { createClient } from "../src/client/mod.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import type { TokenStore } from "../src/store/mod.ts";
import { createKvTokenStore } from "../src/store/kv.ts";
import {
  type FakeFault,
  type FakePartnerApi,
  startFakePartnerApi,
} from "../src/testing/mod.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";
import { drive, inProcessFake, trackedIo } from "./_fast_setup.ts";

const HOUR = 3_600_000;

async function statusOf(pending: Promise<Response>): Promise<number> {
  const response = await pending;
  await response.body?.cancel();
  return response.status;
}

const UNAUTHORIZED: FakeFault = { kind: "status", status: 401 };

/** Provider options for `api` on the test's clock. */
function onClock(api: FakePartnerApi, clock: () => number) {
  return { ...api.environment, ...api.credentials, now: clock };
}

/** The fake with a quota of 10 an hour, and a client on one manual clock. */
async function quotaOfTen() {
  const clock = manualClock();
  const api = await startFakePartnerApi({ now: clock, quota: { perHour: 10 } });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    now: clock,
  });
  return { clock, api, client, [Symbol.asyncDispose]: () => api.close() };
}

Deno.test("a 401 path between working calls costs at most one token per hour", async () => {
  await using setup = await quotaOfTen();
  const { clock, api, client } = setup;
  for (let pair = 0; pair < 12; pair++) {
    equal(await statusOf(client.fetch("organizations")), 200, "works");
    api.injectApiFaults(UNAUTHORIZED); // this path answers 401
    const status = await statusOf(client.fetch("organizations"));
    equal(status, pair === 0 ? 200 : 401, "renewed the first time only");
  }
  equal(api.tokenRequests, 2, "the first token and one renewal");
  equal(await statusOf(client.fetch("organizations")), 200, "never blocked");
  clock.advance(HOUR);
  api.injectApiFaults(UNAUTHORIZED);
  equal(await statusOf(client.fetch("organizations")), 200, "renewed");
  equal(api.tokenRequests, 3, "a new hour allows one more renewal");
});

Deno.test("a gateway answering 401 to one request in five spends at most one token per hour", async () => {
  await using setup = await quotaOfTen();
  const { api, client } = setup;
  const statuses = new Map<number, number>();
  for (let call = 0; call < 100; call++) {
    if (call % 5 === 4) api.injectApiFaults(UNAUTHORIZED);
    const status = await statusOf(
      call % 2
        ? client.fetch("organizations")
        : client.pciFetch("cards/ch_000001"),
    );
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  }
  equal(api.tokenRequests, 2);
  equal(statuses.get(200)! + (statuses.get(401) ?? 0), 100);
  ok(!statuses.has(429), "the quota never ran out");
});

Deno.test("clients made per request over one provider share its 401 ledger", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  const tokenProvider = createTokenProvider({
    ...onClock(api, clock),
  });
  for (let call = 0; call < 9; call++) {
    const client = createClient({
      environment: api.environment,
      tokenProvider,
    });
    api.injectApiFaults(UNAUTHORIZED, UNAUTHORIZED);
    equal(await statusOf(client.fetch("organizations")), 401);
  }
  equal(api.tokenRequests, 2, "one token, one renewal, whatever the client");
});

Deno.test("a hand-written provider without the ledger keeps working, one renewal an hour per client", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  const inner = createTokenProvider({
    ...onClock(api, clock),
  });
  const client = createClient({
    environment: api.environment,
    tokenProvider: {
      getToken: (options) => inner.getToken(options),
      invalidate: (token) => inner.invalidate(token),
      get quota() {
        return inner.quota;
      },
    },
    now: clock,
  });
  equal(await statusOf(client.fetch("organizations")), 200);
  api.revokeTokens();
  equal(await statusOf(client.fetch("organizations")), 200, "renewed");
  api.revokeTokens();
  equal(await statusOf(client.fetch("organizations")), 401, "kept");
  equal(api.tokenRequests, 2);
});

Deno.test("a refused token answer is not requested again for 10 s, whatever the refusal", async (t) => {
  const good = { access_token: "abc", expires_in: 60, token_type: "Bearer" };
  // [name, fault, reason, attempts in the flight: a refusal is never retried]
  const refusals: [string, FakeFault, string, number][] = [
    [
      "expires_in 0",
      { kind: "body", body: JSON.stringify({ ...good, expires_in: 0 }) },
      "malformed",
      1,
    ],
    [
      "an access_token with a space",
      { kind: "body", body: JSON.stringify({ ...good, access_token: "a b" }) },
      "malformed",
      1,
    ],
    ["a 401 for a bad secret", { kind: "status", status: 401 }, "status", 1],
    ["a 400", { kind: "status", status: 400 }, "status", 1],
    ["a 500 after the retries", { kind: "status", status: 500 }, "status", 3],
    ["no answer after the retries", { kind: "drop" }, "network", 3],
  ];
  for (const [name, fault, reason, attempts] of refusals) {
    await t.step(name, async () => {
      const clock = manualClock();
      await using api = await startFakePartnerApi({ now: clock });
      const provider = createTokenProvider({
        ...onClock(api, clock),
        retry: { retries: 2, initialDelay: 0, maxDelay: 0 },
      });
      api.injectTokenFaults(...Array(attempts).fill(fault));
      let first: unknown;
      for (let call = 0; call < 10; call++) {
        await rejects(provider.getToken(), (error: unknown) => {
          ok(error instanceof TokenRequestError);
          ok(!(error instanceof QuotaExceededError));
          equal(error.reason, reason);
          first ??= error;
          equal(error.constructor, (first as Error).constructor);
          return true;
        });
        clock.advance(999);
      }
      equal(api.tokenRequests, attempts, "one flight for ten calls");
      clock.advance(10_000);
      ok(api.isValidToken((await provider.getToken()).accessToken));
      equal(api.tokenRequests, attempts + 1, "after the cooldown, one more");
    });
  }
});

Deno.test("a Retry-After that is not delta-seconds or an IMF-fixdate cannot lift the block the quota header sets", async (t) => {
  for (
    const value of [
      "1.5",
      "-5",
      "+60",
      "soon",
      "Tue, 01 Jan 2019 00:00:00 GMT",
      "0",
    ]
  ) {
    await t.step(value, async () => {
      const clock = manualClock();
      await using api = await startFakePartnerApi({ now: clock });
      const provider = createTokenProvider({
        ...onClock(api, clock),
      });
      api.injectTokenFaults({
        kind: "status",
        status: 429,
        headers: {
          "retry-after": value,
          "idp-client-quota-limit": "b=per_hour;q=10;r=0;t=3000",
        },
      });
      await rejects(provider.getToken(), QuotaExceededError);
      clock.advance(2_999_000);
      await rejects(provider.getToken(), (error: unknown) => {
        ok(error instanceof QuotaExceededError);
        equal(error.retryAt, clock() + 1000);
        return true;
      });
      equal(api.tokenRequests, 1, "nothing sent while blocked");
      clock.advance(1000);
      await provider.getToken();
      equal(api.tokenRequests, 2);
    });
  }
});

Deno.test("a quota block read from a store lasts at most 25 hours", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  // Another process (or a broken one) wrote a block of a year.
  const yearLong = clock() + 365 * 24 * HOUR;
  const store: TokenStore = {
    get: () => Promise.resolve({ blockedUntil: yearLong }),
    set: () => Promise.resolve(),
  };
  const provider = createTokenProvider({
    ...onClock(api, clock),
    store,
  });
  await rejects(provider.getToken(), (error: unknown) => {
    ok(error instanceof QuotaExceededError);
    equal(error.retryAt, clock() + 25 * HOUR);
    return true;
  });
  equal(api.tokenRequests, 0);
});

Deno.test("processes waiting on a slow token endpoint wait for the holder's request instead of sending their own", async () => {
  using kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    using api = inProcessFake({ now });
    // KV answers in real time: the clock moves only between its operations.
    using db = trackedIo(kv);
    // Each attempt is answered after 5 s: slower than every maxWait below.
    api.service.injectTokenFaults({ kind: "delay", ms: 5_000 });
    const processes = Array.from({ length: 5 }, () =>
      createTokenProvider({
        ...api.environment,
        ...api.credentials,
        fetch: api.fetch,
        now,
        store: createKvTokenStore(db.kv, {
          maxWait: 1_000,
          pollInterval: 50,
          now,
        }),
      }));
    const got = await drive(
      timers,
      Promise.all(processes.map((p) => p.getToken())),
      db.idle,
    );
    equal(new Set(got.map((token) => token.accessToken)).size, 1);
    equal(api.service.tokenRequests, 1, "one request for the fleet");
  });
});
