import {
  deepStrictEqual,
  equal,
  notEqual,
  ok,
  rejects,
} from "node:assert/strict";
import { QuotaExceededError, TokenRequestError } from "../src/core/errors.ts";
import {
  createTokenProvider,
  type TokenProviderOptions,
} from "../src/token/mod.ts";
import { createMemoryTokenStore, type TokenStore } from "../src/store/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";
import type { Clock } from "@sinonjs/fake-timers";
import { drive, inProcessFake } from "./_fast_setup.ts";
import { FAST_RETRY, setup } from "./_token_setup.ts";

const HOUR = 3_600_000;

Deno.test("getToken() reuses the cached token", async () => {
  const { api, provider, clock } = await setup();
  await using _ = api;
  const first = await provider.getToken();
  clock.advance(12 * HOUR);
  equal(await provider.getToken(), first);
  equal(api.tokenRequests, 1);
});

Deno.test("getToken() makes one request for any number of concurrent callers", async () => {
  const { api, provider } = await setup({}, { retry: false });
  await using _ = api;
  api.injectTokenFaults({ kind: "delay", ms: 20 });
  const tokens = await Promise.all(
    Array.from({ length: 500 }, () => provider.getToken()),
  );
  equal(new Set(tokens).size, 1);
  equal(api.tokenRequests, 1);
});

Deno.test("getToken() serves the old token while refreshing ahead of expiry", async (t) => {
  const { api, provider, clock, background } = await setup();
  await using _ = api;
  const first = await provider.getToken();

  await t.step(
    "no refresh before the margin (5 minutes for a day-long token)",
    async () => {
      clock.set(first.expiresAt - 5 * 60_000 - 1);
      equal(await provider.getToken(), first);
      equal(api.tokenRequests, 1);
    },
  );

  await t.step(
    "inside the margin, the old token at once and one background request",
    async () => {
      clock.set(first.expiresAt - 4 * 60_000);
      api.injectTokenFaults({ kind: "delay", ms: 30 });
      const during = await Promise.all([
        provider.getToken(),
        provider.getToken(),
      ]);
      deepStrictEqual(during, [first, first]);
      equal(background.count, 1, "one background request for both");
      await background.settle();
      const next = await provider.getToken();
      notEqual(next.accessToken, first.accessToken);
      equal(api.tokenRequests, 2);
    },
  );
});

Deno.test("getToken() never hands out an expired token", async () => {
  const { api, provider, clock } = await setup();
  await using _ = api;
  const first = await provider.getToken();
  clock.set(first.expiresAt);
  const next = await provider.getToken();
  notEqual(next.accessToken, first.accessToken);
  ok(next.expiresAt > clock());
  clock.set(next.expiresAt - 1);
  notEqual((await provider.getToken()).accessToken, next.accessToken);
});

Deno.test("getToken() replaces a 1-second token once it has expired", async () => {
  const { api, provider, clock } = await setup({ tokenLifetime: 1000 });
  await using _ = api;
  const first = await provider.getToken();
  ok(api.isValidToken(first.accessToken));
  clock.advance(1050);
  ok(!api.isValidToken(first.accessToken));
  const next = await provider.getToken();
  ok(api.isValidToken(next.accessToken));
  equal(api.tokenRequests, 2);
});

Deno.test("getToken() refuses a token that expired while its request was in flight", async () => {
  await using api = await startFakePartnerApi({ tokenLifetime: 60_000 });
  const clock = manualClock();
  const frozenFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    clock.advance(61_000); // the process was suspended mid-request
    return response;
  };
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    now: clock,
    fetch: frozenFetch,
  });
  await rejects(provider.getToken(), (error: unknown) => {
    ok(error instanceof TokenRequestError);
    ok(!(error instanceof QuotaExceededError));
    equal(error.reason, "malformed", "an answer too short-lived to use");
    return true;
  });
});

Deno.test("getToken() ignores a stale token from the store", async () => {
  const { api, clock } = await setup();
  await using _ = api;
  const store = createMemoryTokenStore();
  const options = { ...api.environment, ...api.credentials, now: clock, store };
  const first = await createTokenProvider(options).getToken();
  clock.set(first.expiresAt + 1);
  const fresh = await createTokenProvider(options).getToken();
  notEqual(fresh.accessToken, first.accessToken);
  equal(api.tokenRequests, 2);
});

Deno.test("getToken() shares one token between providers with one store", async () => {
  const { api, clock } = await setup();
  await using _ = api;
  const store = createMemoryTokenStore();
  const options = { ...api.environment, ...api.credentials, now: clock, store };
  const a = await createTokenProvider(options).getToken();
  const b = await createTokenProvider(options).getToken();
  equal(b.accessToken, a.accessToken);
  equal(api.tokenRequests, 1);
});

Deno.test("getToken() treats a failing store as empty", async () => {
  const { api, clock } = await setup();
  await using _ = api;
  const broken: TokenStore = {
    get: () => Promise.reject(new Error("store down")),
    set: () => Promise.reject(new Error("store down")),
    update: () => Promise.reject(new Error("store down")),
  };
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    now: clock,
    store: broken,
  });
  const token = await provider.getToken();
  equal(await provider.getToken(), token);
  await provider.invalidate(token.accessToken);
  equal(api.tokenRequests, 1);
});

Deno.test("getToken() retries network errors, 408 and 5xx, then succeeds", async () => {
  const { api, provider } = await setup();
  await using _ = api;
  api.injectTokenFaults({ kind: "drop" }, { kind: "status", status: 503 });
  await provider.getToken();
  equal(api.tokenRequests, 3);
  api.injectTokenFaults({ kind: "status", status: 408 });
  await provider.invalidate();
  await provider.getToken();
  equal(api.tokenRequests, 5);
});

Deno.test("getToken() gives up after the configured retries", async () => {
  const { api, provider } = await setup({}, {
    retry: { ...FAST_RETRY, retries: 3 },
  });
  await using _ = api;
  const faults = Array.from(
    { length: 4 },
    () => ({ kind: "status", status: 502 }) as const,
  );
  api.injectTokenFaults(...faults);
  await rejects(provider.getToken(), {
    name: "TokenRequestError",
    status: 502,
  });
  equal(api.tokenRequests, 4);
});

Deno.test("getToken() never retries other 4xx", async () => {
  const { api, provider } = await setup();
  await using _ = api;
  api.injectTokenFaults({ kind: "status", status: 400 });
  await rejects(provider.getToken(), { status: 400 });
  equal(api.tokenRequests, 1);
  const denied = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    clientSecret: "wrong",
  });
  await rejects(denied.getToken(), { status: 401, code: "access_denied" });
  equal(api.tokenRequests, 2);
});

/** Answers the test hands out one by one: no I/O, so fake timers drive everything. */
function scriptedFetch(...answers: Response[]) {
  const sent: number[] = [];
  const fetch: typeof globalThis.fetch = () => {
    sent.push(sent.length);
    const answer = answers.shift();
    return answer
      ? Promise.resolve(answer)
      : Promise.reject(new TypeError("no answer"));
  };
  return { fetch, sent };
}

const tokenAnswer = () =>
  Response.json({
    access_token: "t0k3n",
    expires_in: 3600,
    token_type: "Bearer",
  });
const unavailable = (retryAfter: number) =>
  Response.json({ error: "unavailable" }, {
    status: 503,
    headers: { "retry-after": String(retryAfter) },
  });
const SCRIPTED = {
  tokenUrl: "https://idp.partner.test/oauth/token",
  audience: "https://partner.test",
  clientId: "client",
  clientSecret: "secret",
};

Deno.test("getToken() honours Retry-After, and stops when it asks too much", async (t) => {
  await withFakeTimers(async (timers) => {
    await t.step(
      "a Retry-After within maxRetryAfter is waited for, to the millisecond",
      async () => {
        const { fetch, sent } = scriptedFetch(unavailable(1), tokenAnswer());
        const provider = createTokenProvider({
          ...SCRIPTED,
          fetch,
          retry: { initialDelay: 1, maxRetryAfter: 1500 },
        });
        const pending = provider.getToken();
        await timers.tickAsync(999);
        equal(sent.length, 1, "not yet");
        await timers.tickAsync(1);
        equal(sent.length, 2);
        equal((await pending).accessToken, "t0k3n");
      },
    );
    await t.step(
      "a longer one ends the retries with the answer's error",
      async () => {
        const { fetch, sent } = scriptedFetch(unavailable(2), tokenAnswer());
        const provider = createTokenProvider({
          ...SCRIPTED,
          fetch,
          retry: { initialDelay: 1, maxRetryAfter: 1500 },
        });
        await rejects(provider.getToken(), { status: 503, reason: "status" });
        equal(sent.length, 1);
      },
    );
  });
});

/** A provider of the in-process fake, on fake timers: waits are driven. */
function onFakeTime(
  timers: Clock,
  provider: Partial<TokenProviderOptions> = {},
) {
  const now = () => timers.now;
  const api = inProcessFake({ now });
  return {
    api,
    provider: createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      now,
      ...provider,
    }),
  };
}

Deno.test("getToken() times out a request that gets no answer", async () => {
  await withFakeTimers(async (timers) => {
    const { api, provider } = onFakeTime(timers, {
      timeout: 30,
      retry: false,
    });
    using _ = api;
    api.service.injectTokenFaults({ kind: "delay", ms: 2000 });
    await rejects(drive(timers, provider.getToken()), (error: unknown) => {
      ok(error instanceof TokenRequestError);
      equal(error.reason, "timeout");
      return true;
    });
  });
});

Deno.test("getToken() leaves no timer once its token is in: a token attempt's time limit is its own, cleared as it ends", async () => {
  await withFakeTimers(async (timers) => {
    const { api, provider } = onFakeTime(timers);
    using _ = api;
    const token = await provider.getToken();
    ok(api.service.isValidToken(token.accessToken));
    equal(timers.countTimers(), 0);
  });
});

Deno.test("getToken() stops waiting when its signal aborts", async (t) => {
  await withFakeTimers(async (timers) => {
    const { api, provider } = onFakeTime(timers, { retry: false });
    using _ = api;
    const reason = new Error("caller gave up");

    await t.step(
      "an aborted signal rejects at once, even with a cached token",
      async () => {
        await rejects(
          provider.getToken({ signal: AbortSignal.abort(reason) }),
          (error) => error === reason,
        );
        equal(api.service.tokenRequests, 0);
      },
    );

    await t.step("one caller's abort does not fail the others", async () => {
      api.service.injectTokenFaults({ kind: "delay", ms: 50 });
      const controller = new AbortController();
      const leaving = provider.getToken({ signal: controller.signal });
      const staying = provider.getToken();
      controller.abort(reason);
      await rejects(leaving, (error) => error === reason);
      const token = await drive(timers, staying);
      ok(api.service.isValidToken(token.accessToken));
      equal(api.service.tokenRequests, 1);
    });
  });
});

Deno.test("getToken() refuses a signal that is no AbortSignal (TypeError, option 'signal') before any request, cold or cached: joining a flight with it failed and joined again, for ever", async () => {
  const { api, provider, clock } = await setup();
  await using _ = api;
  for (const bad of [{}, "signal"]) {
    await rejects(provider.getToken({ signal: bad as AbortSignal }), {
      name: "TypeError",
      option: "signal",
    });
  }
  equal(api.tokenRequests, 0);
  await provider.getToken();
  clock.advance(HOUR); // due for a refresh: a flight again
  await rejects(provider.getToken({ signal: {} as AbortSignal }), {
    option: "signal",
  });
});

Deno.test("a caller that changes the cause of the failure it got changes none of the causes later callers get during the cooldown, each of the cause's class (r169b F5: every copy shared one cause)", async () => {
  const { api, provider } = await setup({}, { retry: false });
  await using _ = api;
  api.injectTokenFaults({ kind: "drop" });
  const first = await provider.getToken().catch((error) => error);
  ok(first instanceof TokenRequestError && first.cause instanceof Error);
  const { message } = first.cause;
  first.cause.message = "changed by a handler";
  const later = await provider.getToken().catch((error) => error);
  ok(later instanceof TokenRequestError);
  ok(later.cause instanceof Error);
  equal(later.cause.constructor, first.cause.constructor);
  equal(later.cause.message, message);
  equal(api.tokenRequests, 1);
});

Deno.test("a caller that changes the failure it got (a handler's status, message, reason) changes none of the copies later callers get during the cooldown (r168b F10: they got the changed fields for up to 15 min)", async () => {
  const { api, provider } = await setup({}, { retry: false });
  await using _ = api;
  api.injectTokenFaults({ kind: "status", status: 401 });
  const first = await provider.getToken().catch((error) => error);
  ok(first instanceof TokenRequestError);
  const { message } = first;
  Object.assign(first, { reason: "network", status: 502, hint: "retry" });
  first.message = `upstream failed: ${message}`;
  const later = await provider.getToken().catch((error) => error);
  ok(later instanceof TokenRequestError);
  deepStrictEqual(
    [later.reason, later.status, later.message === message],
    ["status", 401, true],
  );
  equal(api.tokenRequests, 1);
});
