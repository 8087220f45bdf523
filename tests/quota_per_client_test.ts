// Issue 27: the quota is one per client. No caller that gives up, no new
// provider over the same store and no broken token endpoint may spend it.
// Each test is named after the promise it keeps and fails on the code
// before round 4. Time is driven (fake timers, a manual clock), never waited.

import { equal, notStrictEqual, ok, rejects } from "node:assert/strict";
import { TokenRequestError } from "../src/core/errors.ts";
import { createClient } from "../src/client/mod.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { createMemoryTokenStore, type TokenStore } from "../src/store/mod.ts";
import { createKvTokenStore } from "../src/store/kv.ts";
import { storeKey } from "../src/store/_key.ts";
import {
  createFakePartnerService,
  type FakeFault,
  type FakePartnerService,
} from "../src/testing/mod.ts";
import { type ManualClock, manualClock, withFakeTimers } from "./_helpers.ts";

const HOUR = 3_600_000;
const MALFORMED: FakeFault = {
  kind: "body",
  body: '{"access_token":"a b","expires_in":60,"token_type":"Bearer"}',
};
const UNAUTHORIZED: FakeFault = { kind: "status", status: 401 };

/** The fake served in this process, on `clock`: fake timers drive its delays. */
function inProcess(options: { clock?: ManualClock } = {}) {
  const clock = options.clock ?? manualClock();
  const service = createFakePartnerService({
    now: clock,
    quota: { perHour: 10 },
  });
  const environment = service.environmentAt(
    "http://127.0.0.1:9",
    "http://127.0.0.1:10",
  );
  const fetch: typeof globalThis.fetch = (input, init) => {
    const request = new Request(input, init);
    return request.url.startsWith("http://127.0.0.1:9/")
      ? service.handle(request)
      : service.handlePci(request);
  };
  const options_ = {
    ...environment,
    ...service.credentials,
    fetch,
    now: clock,
  };
  return { clock, service, environment, fetch, options: options_ };
}

async function statusOf(pending: Promise<Response>): Promise<number> {
  const response = await pending;
  await response.body?.cancel();
  return response.status;
}

Deno.test("callers that hang up leave the token request: ten hang-ups spend one token, and the next caller gets it", async () => {
  await withFakeTimers(async (timers) => {
    const { service, options } = inProcess();
    service.injectTokenFaults({ kind: "delay", ms: 300 });
    const provider = createTokenProvider(options);
    // Ten visitors of a Deno.serve handler passing `req.signal`, gone at 100 ms.
    const visitors = Array.from({ length: 10 }, () => {
      const hangUp = new AbortController();
      setTimeout(() => hangUp.abort(new Error("visitor left")), 100);
      return provider.getToken({ signal: hangUp.signal });
    });
    const left = Promise.allSettled(visitors);
    await timers.tickAsync(100);
    for (const result of await left) equal(result.status, "rejected");
    const joining = provider.getToken(); // the 11th visitor, at 100 ms
    await timers.tickAsync(200);
    const token = await joining;
    ok(service.isValidToken(token.accessToken));
    equal((await provider.getToken()).accessToken, token.accessToken);
    equal(service.tokenRequests, 1, "one token for eleven visitors");
    service.close();
  });
});

Deno.test("the cooldown escalates: an hour of one call a second against malformed answers costs at most 12 token requests", async () => {
  const { clock, service, options } = inProcess();
  service.injectTokenFaults(...Array.from({ length: 400 }, () => MALFORMED));
  const provider = createTokenProvider({ ...options, retry: false });
  for (let second = 0; second < 3600; second++) {
    await rejects(provider.getToken(), TokenRequestError);
    clock.advance(1000);
  }
  ok(service.tokenRequests <= 12, `${service.tokenRequests} requests`);
  ok(service.tokenRequests >= 8, "it still tries now and then");
});

Deno.test("a 503 asking Retry-After: 3600 costs one token request in that hour", async () => {
  const { clock, service, options } = inProcess();
  const unavailable: FakeFault = {
    kind: "status",
    status: 503,
    retryAfter: 3600,
  };
  service.injectTokenFaults(...Array.from({ length: 100 }, () => unavailable));
  const provider = createTokenProvider(options);
  for (let second = 0; second < 3599; second += 10) {
    await rejects(provider.getToken(), (error: unknown) => {
      ok(error instanceof TokenRequestError);
      equal(error.status, 503);
      return true;
    });
    clock.advance(10_000);
  }
  equal(service.tokenRequests, 1);
});

Deno.test("a success ends the escalation: the next failure cools down for 10 s again", async () => {
  const { clock, service, options } = inProcess();
  service.injectTokenFaults(MALFORMED, MALFORMED, MALFORMED);
  const provider = createTokenProvider({ ...options, retry: false });
  await rejects(provider.getToken(), TokenRequestError); // 10 s
  clock.advance(10_000);
  await rejects(provider.getToken(), TokenRequestError); // 20 s
  clock.advance(20_000);
  await rejects(provider.getToken(), TokenRequestError); // 40 s
  clock.advance(40_000);
  const token = await provider.getToken();
  await provider.invalidate(token.accessToken); // the hour's one renewal
  service.injectTokenFaults(MALFORMED);
  await rejects(provider.getToken(), TokenRequestError);
  clock.advance(10_000);
  await provider.getToken();
  equal(service.tokenRequests, 6);
});

Deno.test("each caller in a cooldown gets an error object of its own", async () => {
  const { service, options } = inProcess();
  service.injectTokenFaults({ kind: "status", status: 400 });
  const provider = createTokenProvider({ ...options, retry: false });
  await rejects(provider.getToken(), TokenRequestError);
  const errors = await Promise.all(
    [provider.getToken(), provider.getToken()].map((p) =>
      p.catch((error) => error)
    ),
  );
  notStrictEqual(errors[0], errors[1]);
  for (const error of errors) {
    ok(error instanceof TokenRequestError);
    equal(error.status, 400);
    equal(error.reason, "status");
  }
  equal(service.tokenRequests, 1);
});

/** Five new providers, one after another, each meeting a 401 path once. */
async function fiveProcesses(
  store: TokenStore,
  service: FakePartnerService,
  options: ReturnType<typeof inProcess>["options"],
): Promise<void> {
  for (let process = 0; process < 5; process++) {
    const client = createClient({
      environment: envOf(service),
      ...service.credentials,
      fetch: options.fetch,
      now: options.now,
      store,
    });
    equal(await statusOf(client.fetch("organizations")), 200);
    service.injectApiFaults(UNAUTHORIZED);
    await statusOf(client.fetch("organizations"));
  }
}

Deno.test("the 401 ledger lives in the store: five new providers over one memory store spend at most 2 tokens", async () => {
  const { service, options } = inProcess();
  await fiveProcesses(createMemoryTokenStore(), service, options);
  ok(service.tokenRequests <= 2, `${service.tokenRequests} token requests`);
});

Deno.test("the 401 ledger lives in the store: five new providers over one KV store spend at most 2 tokens", async () => {
  const { service, options } = inProcess();
  using kv = await Deno.openKv(":memory:");
  const store = createKvTokenStore(kv, { now: options.now });
  await fiveProcesses(store, service, options);
  ok(service.tokenRequests <= 2, `${service.tokenRequests} token requests`);
});

Deno.test("a process whose token another replaced retries with the stored token at no cost", async () => {
  const { service, options } = inProcess();
  const store = createMemoryTokenStore();
  const shared = {
    ...service.credentials,
    environment: envOf(service),
    fetch: options.fetch,
    now: options.now,
    store,
  };
  const a = createClient(shared);
  const b = createClient(shared);
  equal(await statusOf(a.fetch("organizations")), 200);
  equal(await statusOf(b.fetch("organizations")), 200); // the same token
  service.revokeTokens();
  equal(await statusOf(a.fetch("organizations")), 200, "a renews");
  equal(await statusOf(b.fetch("organizations")), 200, "b takes a's token");
  equal(service.tokenRequests, 2);
});

Deno.test("invalidate() goes through the ledger: twelve calls in an hour cost one new token", async () => {
  const { clock, service, options } = inProcess();
  const provider = createTokenProvider(options);
  for (let call = 0; call < 12; call++) {
    await provider.invalidate((await provider.getToken()).accessToken);
  }
  equal(service.tokenRequests, 2, "the first token and one renewal");
  clock.advance(HOUR);
  await provider.invalidate((await provider.getToken()).accessToken);
  await provider.getToken();
  equal(service.tokenRequests, 3, "an hour later, one more");
});

Deno.test("an onQuota that returns a rejecting promise is ignored: no unhandled rejection", async () => {
  const { service, options } = inProcess();
  let heard = 0;
  const provider = createTokenProvider({
    ...options,
    onQuota: () => {
      heard++;
      return Promise.reject(new Error("listener failed")) as unknown as void;
    },
  });
  const token = await provider.getToken();
  ok(service.isValidToken(token.accessToken));
  // An unhandled rejection would fail this test (Deno's default handler).
  await new Promise((resolve) => setTimeout(resolve, 0));
  equal(heard, 1);
});

function envOf(service: FakePartnerService) {
  return service.environmentAt("http://127.0.0.1:9", "http://127.0.0.1:10");
}

Deno.test("stores fail closed: a record claiming a token valid until 2200 is refused and replaced", async () => {
  const { service, options } = inProcess();
  const store = createMemoryTokenStore();
  const first = createTokenProvider({ ...options, store });
  const real = await first.getToken();
  // Forge the stored record: the same token, "valid" for 175 years.
  const key = await storeKey({
    url: new URL(options.tokenUrl),
    audience: options.audience,
    clientId: options.clientId,
    secret: options.clientSecret,
  });
  await store.update!(key, (record) => ({
    ...record,
    token: { ...real, accessToken: "forged", expiresAt: Date.UTC(2200, 0) },
  }));
  const second = createTokenProvider({ ...options, store });
  const token = await second.getToken();
  ok(service.isValidToken(token.accessToken), "a real token, not the forged");
  equal(service.tokenRequests, 2);
});
