// Issue 46, clock steps in the token provider: the waits it sets itself (a
// failure's cooldown, a 429's block, the hour between two renewals after a
// 401) are measured on the steady clock, so a wall clock stepped back 1 h
// after they began lengthens none of them. The provider's `now` is moved by
// hand (stepped back, read, then moved on: an injected clock's step is seen
// when read), the service is the fake in process, and nothing sleeps.

import { equal, ok, rejects } from "node:assert/strict";
import { withGlobal } from "@sinonjs/fake-timers";
import { createTokenProvider } from "../src/token/mod.ts";
import { createMemoryTokenStore, type TokenRecord } from "../src/store/mod.ts";
import { QuotaExceededError, TokenRequestError } from "../src/core/errors.ts";
import { renewalLedger } from "../src/token/ledger.ts";
import { manualClock } from "./_helpers.ts";
import { drive, inProcessFake } from "./_fast_setup.ts";
import { systemNow } from "./_system_clock.ts";
import type { FakeFault } from "../src/testing/mod.ts";

const HOUR = 3_600_000;

/** A provider on a clock moved by hand, without retries, and its service. */
function providerOnClock() {
  const clock = manualClock();
  const api = inProcessFake();
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    fetch: api.fetch,
    now: clock,
    retry: false,
  });
  const stepBack = () => clock.set(clock() - HOUR);
  return { api, provider, clock, stepBack };
}

/**
 * A token fault's wait, the wall clock stepped back 1 h after it began: the
 * call after the step is refused too (`blocked`, at `readAt`), and one `wait`
 * ms later gets a token; the token requests before and after it.
 */
async function stepBackDuring<E extends TokenRequestError>(
  fault: FakeFault,
  kind: new (...args: never[]) => E,
  wait: number,
) {
  const { api, provider, clock, stepBack } = providerOnClock();
  api.service.injectTokenFaults(fault);
  await rejects(provider.getToken(), kind);
  stepBack();
  const readAt = clock();
  const blocked: unknown = await provider.getToken().catch((error) => error);
  ok(blocked instanceof kind);
  const during = api.service.tokenRequests;
  clock.advance(wait);
  await provider.getToken();
  return { blocked, readAt, during, after: api.service.tokenRequests };
}

Deno.test("clock steps: a 403's 10 s cooldown ends 10 s after it began, though the wall clock stepped back 1 h since", async () => {
  const fault = { kind: "status", status: 403 } as const;
  const { during, after } = await stepBackDuring(
    fault,
    TokenRequestError,
    11_000,
  );
  equal(during, 1);
  equal(after, 2);
});

Deno.test("clock steps: a 429's 60 s block ends 60 s after it began, though the wall clock stepped back 1 h since", async () => {
  const fault = { kind: "status", status: 429, retryAfter: 60 } as const;
  const { blocked, readAt, during, after } = await stepBackDuring(
    fault,
    QuotaExceededError,
    61_000,
  );
  equal(blocked.retryAt, readAt + 60_000); // when the block ends, as read now
  equal(during, 1);
  equal(after, 2);
});

Deno.test("clock steps: after a 401 the next renewal is an hour after the last, though the wall clock stepped back 1 h since", async () => {
  const { api, provider, clock, stepBack } = providerOnClock();
  const first = await provider.getToken();
  equal(await provider.reportUnauthorized!(first.accessToken), true);
  const second = await provider.getToken();
  stepBack();
  equal(await provider.reportUnauthorized!(second.accessToken), false);
  clock.advance(HOUR + 1_000);
  equal(await provider.reportUnauthorized!(second.accessToken), true);
  await provider.getToken();
  equal(api.service.tokenRequests, 3);
});

Deno.test("clock steps: a client's own 401 ledger (for a provider without one) renews an hour after the last renewal, though the wall clock stepped back 1 h since", async () => {
  const clock = manualClock();
  let invalidated = 0;
  const ledger = renewalLedger(clock, () => void invalidated++);
  equal(await ledger("first"), true);
  clock.set(clock() - HOUR);
  equal(await ledger("second"), false); // renewed a moment ago
  clock.advance(HOUR + 1_000);
  equal(await ledger("second"), true);
  equal(invalidated, 2);
});

Deno.test("clock steps: callers who come while a token request is under way join it, though the system clock stepped 1 h forward, then back, since it began", async () => {
  const api = inProcessFake();
  const answer = Promise.withResolvers<void>();
  // The system clock, stepped by hand: the provider's default clock.
  let wall = systemNow();
  Date.now = () => wall;
  try {
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: async (input, init) => {
        await answer.promise; // under way until the steps are taken
        return api.fetch(input, init);
      },
    });
    const callers = [provider.getToken()];
    for (const step of [HOUR, -2 * HOUR]) {
      await Promise.resolve(); // a new turn: the clock is read again
      wall += step;
      const signal = new AbortController().signal;
      callers.push(provider.getToken(), provider.getToken({ signal }));
    }
    answer.resolve();
    const tokens = await Promise.all(callers);
    equal(new Set(tokens.map((token) => token.accessToken)).size, 1);
    equal(api.service.tokenRequests, 1);
  } finally {
    Date.now = systemNow;
  }
});

Deno.test("clock steps: a 429's block of an hour ends when the wall clock passes it after the host was suspended 2 h, which the monotone clock does not count (it held 2 h more, with the service's quota long reset)", async () => {
  await withTwoClocks(async (timers) => {
    const api = inProcessFake();
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      retry: false,
    });
    const fault = { kind: "status", status: 429, retryAfter: 3600 } as const;
    api.service.injectTokenFaults(fault);
    await rejects(provider.getToken(), QuotaExceededError);
    await rejects(provider.getToken(), QuotaExceededError);
    equal(api.service.tokenRequests, 1);
    // Suspended: the wall clock moves on, performance.now() stands still.
    timers.setSystemTime(timers.now + 2 * HOUR);
    ok(api.service.isValidToken((await provider.getToken()).accessToken));
    equal(api.service.tokenRequests, 2);
  });
});

Deno.test("clock steps: a wall clock stepped forward an hour during an outage does not start the cooldown's escalation again (10 requests in the hour after it, not 4)", async () => {
  await withTwoClocks(async (timers) => {
    const api = inProcessFake();
    const outage = { kind: "status", status: 503 } as const;
    api.service.injectTokenFaults(...Array(100).fill(outage));
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      retry: false,
    });
    const minutes = async (count: number) => {
      for (let s = 0; s < count * 60; s += 10) {
        await provider.getToken().catch(() => {});
        timers.tick(10_000);
      }
    };
    await minutes(40); // the cooldown has grown to 15 min
    timers.setSystemTime(timers.now + HOUR); // NTP: no real time passed
    const before = api.service.tokenRequests;
    await minutes(60);
    ok(
      api.service.tokenRequests - before <= 5,
      `${api.service.tokenRequests - before}`,
    );
  });
});

Deno.test("clock steps: a wall clock stepped back (3 h, 5 min) does not make an expired token usable, with no store or a memory store: it is renewed when it really expires (it was handed out for as long as the step; the store's copy undid the move)", async () => {
  await withTwoClocks(async (timers) => {
    for (const step of [3 * HOUR, 5 * 60_000]) {
      for (const store of [undefined, createMemoryTokenStore()]) {
        const api = inProcessFake({ tokenLifetime: 600_000 });
        const provider = createTokenProvider({
          ...api.environment,
          ...api.credentials,
          fetch: api.fetch,
          retry: false,
          ...(store && { store }),
        });
        await provider.getToken();
        timers.tick(8 * 60_000);
        timers.setSystemTime(timers.now - step); // the wall clock alone
        timers.tick(3 * 60_000); // both: the token's 10 min are over
        const token = await provider.getToken();
        ok(api.service.isValidToken(token.accessToken), `${step} ${!!store}`);
        equal(api.service.tokenRequests, 2);
      }
    }
  });
});

Deno.test("clock steps: a wall clock stepped back 30 min while a token request is on its way does not make the token it brings outlive its real expiry, with no store or a memory store (it was handed out expired for as long as the step)", async () => {
  await withTwoClocks(async (timers) => {
    for (const store of [undefined, createMemoryTokenStore()]) {
      const { api, provider } = steppedInRequest(timers, 2, -30 * 60_000, {
        ...(store && { store }),
      });
      let expired = 0;
      for (let s = 0; s < HOUR / 1000; s += 10) {
        const token = await provider.getToken();
        if (!api.service.isValidToken(token.accessToken)) expired++;
        timers.tick(10_000);
        // A turn of the event loop: a refresh's answer is read meanwhile.
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      equal(expired, 0, `${!!store}`);
      equal(api.service.tokenRequests, 7); // 0, 9, 18 … 54 min, as with no step
    }
  });
});

Deno.test("clock steps: a wall clock stepped back 3 h during a flight that fails hands out no expired token: the failure is the answer (the old token's times were read unmoved)", async () => {
  await withTwoClocks(async (timers) => {
    const { api, provider } = steppedInRequest(timers, 2, -3 * HOUR);
    await provider.getToken();
    timers.tick(12 * 60_000); // the 10 min token has expired
    api.service.injectTokenFaults({ kind: "status", status: 503 });
    await rejects(provider.getToken(), TokenRequestError);
    equal(api.service.tokenRequests, 2);
  });
});

Deno.test("clock steps: a second provider on the same memory store, after the wall clock stepped back 4 min, reads the first one's token as expiring when it really does: none handed out expired, no request more than with no step (the store's copy read on the stepped wall clock passed the fleet's slack)", async () => {
  await withTwoClocks(async (timers) => {
    const counts = [];
    for (const step of [0, -4 * 60_000]) {
      const store = createMemoryTokenStore();
      const { api, provider: first } = steppedInRequest(timers, 0, 0, {
        store,
      });
      const second = createTokenProvider({
        ...api.environment,
        ...api.credentials,
        fetch: api.fetch,
        retry: false,
        store,
      });
      await first.getToken();
      timers.tick(5 * 60_000);
      timers.setSystemTime(timers.now + step);
      timers.tick(60_000);
      let expired = 0;
      for (let s = 0; s < 20 * 60; s += 10) {
        const token = await second.getToken();
        if (!api.service.isValidToken(token.accessToken)) expired++;
        timers.tick(10_000);
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      equal(expired, 0, `${step}`);
      counts.push(api.service.tokenRequests);
    }
    equal(counts[1], counts[0]);
  });
});

Deno.test("a token that came after retries counts its lifetime from the sending of the attempt that brought it, on both clocks: after two 503s with Retry-After 30 s, a 60 s token is handed out and kept (it was read as expired at once: a 'malformed' error and another token)", async () => {
  await withTwoClocks(async (timers) => {
    const api = inProcessFake({ tokenLifetime: 60_000, now: trueNow });
    const busy = { kind: "status", status: 503, retryAfter: 30 } as const;
    api.service.injectTokenFaults(busy, busy);
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
    });
    const token = await drive(timers, provider.getToken());
    ok(api.service.isValidToken(token.accessToken));
    equal(api.service.tokenRequests, 3);
    timers.tick(30_000);
    equal(await drive(timers, provider.getToken()), token);
    equal(api.service.tokenRequests, 3);
  }, ["setTimeout", "clearTimeout"]);
});

/**
 * A provider without retries whose service counts time on the steady clock (true time), with 10 min tokens; the
 * wall clock moves by `step` when token request `at` has been answered, before the provider reads the answer.
 */
function steppedInRequest(
  timers: { now: number; setSystemTime(at: number): void },
  at: number,
  step: number,
  more: { store?: ReturnType<typeof createMemoryTokenStore> } = {},
) {
  const api = inProcessFake({ tokenLifetime: 600_000, now: trueNow });
  let requests = 0;
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    retry: false,
    ...more,
    fetch: async (input, init) => {
      const answer = await api.fetch(input, init);
      if (++requests === at) timers.setSystemTime(timers.now + step);
      return answer;
    },
  });
  return { api, provider };
}

/** True time under {@linkcode withTwoClocks}: the monotone clock, which no step of the wall clock moves. */
const trueNow = () => performance.timeOrigin + performance.now();

/**
 * Runs `fn` with the wall clock (`Date`) and the monotone one (`performance`)
 * faked, both at the system's time (performance.timeOrigin is then past 0, the
 * clock the provider measures its waits on by default), and the timers in
 * `also`: `tick` moves both, `setSystemTime` the wall clock alone, as a suspend
 * or a step does.
 */
async function withTwoClocks(
  fn: (
    timers: ReturnType<ReturnType<typeof withGlobal>["install"]>,
  ) => Promise<void>,
  also: ("setTimeout" | "clearTimeout")[] = [],
) {
  const timers = withGlobal(globalThis).install({
    toFake: ["Date", "performance", ...also],
    now: systemNow(),
  });
  try {
    await fn(timers);
  } finally {
    timers.uninstall();
  }
}

Deno.test("a token whose answer came after its lifetime (a slow endpoint, a process suspended), or that ran out while the store wrote it, fails its call and holds the next for the 10 s cooldown, for providers sharing a store too: one paid token, not one a call (r168b F5, r169b F6: every call sent a request)", async () => {
  for (const [answer, write] of [[1_500, 0], [850, 150]]) {
    await expiredOnTheWay(answer!, write!);
  }
});

/** Providers on one store whose token request's answer takes `answer` ms and the store's writes `write` ms, each. */
async function expiredOnTheWay(answer: number, write: number) {
  const clock = manualClock();
  const api = inProcessFake({ tokenLifetime: 1_000 });
  const late: typeof fetch = async (input, init) => {
    const response = await api.fetch(input, init);
    clock.advance(answer); // the answer's way back
    return response;
  };
  const memory = createMemoryTokenStore();
  const store = {
    ...memory,
    get: (key: string) => memory.get(key),
    set: async (key: string, record: TokenRecord) => {
      await memory.set(key, record);
      clock.advance(write);
    },
  };
  const options = { ...api.environment, ...api.credentials, store };
  const made = { ...options, fetch: late, now: clock, retry: false } as const;
  const [first, second] = [
    createTokenProvider(made),
    createTokenProvider(made),
  ];
  const failed = (call: Promise<unknown>) =>
    rejects(call, (error) => error instanceof TokenRequestError);
  await failed(first.getToken());
  await failed(first.getToken());
  await failed(second.getToken());
  equal(api.service.tokenRequests, 1);
  clock.advance(10_000);
  await failed(first.getToken());
  equal(api.service.tokenRequests, 2);
}
