// Issue 11: API calls as robust as token calls. Each behaviour against a
// loopback server: an always-401 origin, a dripping body, a reset
// connection, a page that gets one 503, a mutated environment.

import {
  deepStrictEqual,
  equal,
  ok,
  rejects,
  throws,
} from "node:assert/strict";
import { ApiError, TokenRequestError } from "../src/core/errors.ts";
import type { ApiRequestEvent } from "../src/core/events.ts";
import { createClient, createRateLimiter } from "../src/client/mod.ts";
import {
  defineEnvironment,
  type Environment,
} from "../src/core/environment.ts";
import {
  collect,
  paginate,
  type RepeatedPageError,
} from "../src/client/paginate.ts";
import { createTokenProvider, type TokenProvider } from "../src/token/mod.ts";
import { createMemoryTokenStore } from "../src/store/mod.ts";
import type { RateLimiter } from "../src/core/rate_limiter.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";
import {
  besideFake,
  drive,
  inProcessFake,
  onFakeClock,
} from "./_fast_setup.ts";

const FAST_RETRY = { initialDelay: 1, maxDelay: 20 };

async function statusOf(pending: Promise<Response>): Promise<number> {
  const response = await pending;
  await response.body?.cancel();
  return response.status;
}

/** A loopback HTTP server; `requests` counts what reached it. */
function serve(handler: (request: Request) => Response | Promise<Response>) {
  const controller = new AbortController();
  let requests = 0;
  const server = Deno.serve(
    {
      hostname: "127.0.0.1",
      port: 0,
      onListen() {},
      signal: controller.signal,
    },
    (request) => (requests++, handler(request)),
  );
  return {
    base: `http://127.0.0.1:${server.addr.port}/api/`,
    get requests() {
      return requests;
    },
    async [Symbol.asyncDispose]() {
      controller.abort();
      await server.finished;
    },
  };
}

/** A TCP listener that closes every connection without a word. */
function resetEveryConnection() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let connections = 0;
  const accepting = (async () => {
    for await (const conn of listener) {
      connections++;
      conn.close();
    }
  })().catch(() => {});
  return {
    base: `http://127.0.0.1:${listener.addr.port}/`,
    get connections() {
      return connections;
    },
    async [Symbol.asyncDispose]() {
      listener.close();
      await accepting;
    },
  };
}

function environmentWith(
  environment: Environment,
  change: Partial<Record<keyof Environment, string>>,
): Environment {
  return defineEnvironment({ ...environment, ...change });
}

Deno.test("ten calls to an origin that always answers 401 cost at most one extra token", async () => {
  await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
  await using refusing = serve(() =>
    Response.json({ error: "invalid_token" }, { status: 401 })
  );
  const environment = environmentWith(api.environment, {
    pciBaseUrl: refusing.base,
  });
  const client = createClient({ environment, ...api.credentials });
  // The API itself accepts the token: it is not the token that is wrong.
  const ok200 = await client.fetch("organizations");
  await ok200.body?.cancel();
  for (let call = 0; call < 10; call++) {
    const answer = await client.pciFetch(`cards/${call}`);
    equal(answer.status, 401, "the answer is returned as it is");
    await answer.body?.cancel();
  }
  equal(api.tokenRequests, 2, "one token, and one renewal");
  equal(refusing.requests, 11, "ten calls, one of them retried once");
});

Deno.test("a fleet whose members' clocks differ: ten 401s to a member behind the one that renewed cost no token (each cost one: expiry on a clock ahead read as a newer token renewed)", async () => {
  await using api = await startFakePartnerApi({ quota: { perHour: 20 } });
  await using refusing = serve(() =>
    Response.json({ error: "invalid_token" }, { status: 401 })
  );
  const store = createMemoryTokenStore();
  const ahead = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    store,
    now: () => Date.now() + 60_000, // within the fleet's 5 min of slack
  });
  const renewed = await ahead.getToken();
  equal(await ahead.reportUnauthorized!(renewed.accessToken), true);
  const environment = environmentWith(api.environment, {
    pciBaseUrl: refusing.base,
  });
  const behind = createClient({ environment, ...api.credentials, store });
  const before = api.tokenRequests;
  for (let call = 0; call < 10; call++) {
    const answer = await behind.pciFetch(`cards/${call}`);
    equal(answer.status, 401);
    await answer.body?.cancel();
  }
  equal(
    api.tokenRequests - before,
    1,
    "its own token; the fleet renewed this hour",
  );
});

/**
 * A token endpoint that hands out the same token each time (it caches its tokens), `expires_in` seconds long, beside
 * an API that answers 401 while `refuses()` says so; counts of both, and its environment.
 */
function cachingEndpoint(refuses: () => boolean, expiresIn = 3600) {
  const counts = { token: 0, api: 0 };
  const endpoint = serve((request) => {
    if (new URL(request.url).pathname.endsWith("/token")) {
      counts.token++;
      return Response.json({
        access_token: "the-same-token-each-time",
        token_type: "Bearer",
        expires_in: expiresIn,
      });
    }
    counts.api++;
    return refuses()
      ? Response.json({ error: "invalid_token" }, { status: 401 })
      : Response.json({ data: [] });
  });
  const environment = defineEnvironment({
    baseUrl: endpoint.base,
    pciBaseUrl: endpoint.base,
    tokenUrl: `${endpoint.base}token`,
    audience: "partner-api",
  });
  const credentials = { clientId: "id", clientSecret: "secret-of-this-test" };
  return { endpoint, counts, environment, credentials };
}

Deno.test("a token endpoint that hands out the token the API refused again (it caches its tokens) is taken at its word: the call is retried with it, and calls after it cost no token request (each failed 'malformed' and spent one)", async () => {
  let refusing = false;
  // A 401 once (a key the API had yet to learn), then the token is good.
  const { endpoint, counts, environment, credentials } = cachingEndpoint(() =>
    counts.api === 1 || refusing
  );
  await using _ = endpoint;
  const client = createClient({ environment, ...credentials });
  for (let call = 0; call < 5; call++) {
    equal(await statusOf(client.fetch("organizations")), 200);
  }
  equal(counts.api, 6, "the first call retried once");
  equal(counts.token, 2, "one token, and one renewal");
  // Refused for good: the hour's renewal is spent, so the 401s are answered as they are, at no token.
  refusing = true;
  for (let call = 0; call < 5; call++) {
    equal(await statusOf(client.fetch("organizations")), 401);
  }
  equal(counts.token, 2, "no token request more");
});

Deno.test("a fleet sharing a store, behind a token endpoint that hands out the refused token again, spends one renewal on a 401 all its members meet at once (each member spent one: outside review r150 H3)", async () => {
  let refusing = 0;
  const { endpoint, counts, environment, credentials } = cachingEndpoint(() =>
    refusing-- > 0
  );
  await using _ = endpoint;
  const store = createMemoryTokenStore();
  const members = [1, 2, 3, 4, 5].map(() =>
    createClient({
      environment,
      tokenProvider: createTokenProvider({
        ...environment,
        ...credentials,
        store,
      }),
    })
  );
  const round = () =>
    Promise.all(
      members.map((client) => statusOf(client.fetch("organizations"))),
    );
  await round();
  const tokens = counts.token;
  refusing = members.length; // the token is refused once to each member
  await round();
  await round();
  equal(counts.token - tokens, 1, "one renewal");
});

Deno.test("a token endpoint that hands out the same token again with a lifetime of its own, once the first ran out, is taken with that lifetime (every call after the first lifetime spent a token request and failed 'malformed': outside review r150 H6)", async () => {
  const clock = manualClock();
  const { endpoint, counts, environment, credentials } = cachingEndpoint(
    () => false,
    600,
  );
  await using _ = endpoint;
  const client = createClient({ environment, ...credentials, now: clock });
  for (let lifetime = 1; lifetime <= 3; lifetime++) {
    for (let call = 0; call < 3; call++) {
      equal(await statusOf(client.fetch("organizations")), 200);
    }
    equal(counts.token, lifetime);
    clock.advance(600_000);
  }
});

Deno.test("a revoked token is replaced once an hour, and calls recover", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    now: clock,
  });
  equal(await statusOf(client.fetch("organizations")), 200);
  for (let hour = 1; hour <= 3; hour++) {
    api.revokeTokens(); // the service drops every token
    equal(await statusOf(client.fetch("organizations")), 200, "recovered");
    equal(api.tokenRequests, hour + 1);
    api.revokeTokens();
    equal(await statusOf(client.fetch("organizations")), 401, "same hour");
    equal(api.tokenRequests, hour + 1, "no second renewal in the hour");
    clock.advance(3_600_000);
  }
});

Deno.test("a page whose body never finishes fails after the time limit, retried like no answer", async () => {
  await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    using api = inProcessFake({ now });
    // Resolved as each attempt reaches the origin.
    const arrived = [1, 2, 3].map(() => Promise.withResolvers<void>());
    const dripping = besideFake(api, () => {
      arrived[dripping.requests - 1]?.resolve();
      return new Response(
        new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode('{"items":['));
            // ...and nothing more, ever.
          },
        }),
        { headers: { "content-type": "application/json" } },
      );
    });
    const client = createClient({
      environment: dripping.environment,
      ...api.credentials,
      fetch: dripping.fetch,
      now,
      timeout: 50,
      retry: FAST_RETRY,
      onEvent: (event) =>
        void (event.type === "api.request" && heard.push(event)),
    });
    const heard: ApiRequestEvent[] = [];
    let settled = false;
    const listing = collect(client.list("transactions"), { maxItems: 10 })
      .finally(() => settled = true);
    listing.catch(() => {});
    // Each attempt waits out its limit: 49 ms after it reached the origin it
    // is still the only one, and the list still waits.
    for (const [attempt, arrival] of arrived.entries()) {
      await drive(timers, arrival.promise);
      await drive(timers, new Promise((resolve) => setTimeout(resolve, 49)));
      equal(dripping.requests, attempt + 1, "no retry within the limit");
      equal(settled, false);
    }
    await rejects(
      drive(timers, listing),
      (error: unknown) => {
        ok(error instanceof ApiError);
        equal(error.status, 0);
        ok(error.cause instanceof DOMException);
        equal((error.cause as DOMException).name, "TimeoutError");
        equal(error.reason, "timeout");
        equal(error.attempts, 3);
        return true;
      },
    );
    equal(dripping.requests, 3);
    // Each attempt's event says it got no answer in time, as the error does: it said a 200 (its headers).
    deepStrictEqual(
      heard.map(({ status, reason }) => [status, reason]),
      [1, 2, 3].map(() => [0, "timeout"]),
    );
  });
});

Deno.test("the caller's abort while a page body is read ends the list with its reason, and nothing is sent again", async () => {
  await using api = await startFakePartnerApi();
  let answered!: () => void;
  const headersIn = new Promise<void>((resolve) => answered = resolve);
  await using dripping = serve(() => {
    answered();
    return new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"items":['));
        },
      }),
      { headers: { "content-type": "application/json" } },
    );
  });
  const retries: unknown[] = [];
  const client = createClient({
    environment: environmentWith(api.environment, { baseUrl: dripping.base }),
    ...api.credentials,
    retry: FAST_RETRY,
    onEvent: (event) => event.type === "api.retry" && retries.push(event),
  });
  const controller = new AbortController();
  const reason = new Error("the caller left");
  const crawl = collect(
    client.list("transactions", { signal: controller.signal }),
    { maxItems: 10 },
  );
  await headersIn;
  controller.abort(reason);
  await rejects(crawl, (error) => error === reason);
  // The page's exchange settles just after the list: one turn of the loop.
  await new Promise((resolve) => setTimeout(resolve, 0));
  equal(dripping.requests, 1, "an abort is not retried");
  equal(retries.length, 0, "nor is a retry announced");
});

Deno.test("fetch() rejects with ApiError status 0 and the network cause when nothing answers", async () => {
  await using api = await startFakePartnerApi();
  await using reset = resetEveryConnection();
  const environment = environmentWith(api.environment, {
    pciBaseUrl: reset.base,
  });
  const client = createClient({
    environment,
    ...api.credentials,
    retry: FAST_RETRY,
  });
  await rejects(client.pciFetch("cards/1"), (error: unknown) => {
    ok(error instanceof ApiError);
    equal(error.status, 0);
    ok(error.cause instanceof Error);
    ok(error.message.includes((error.cause as Error).message), error.message);
    return true;
  });
  equal(reset.connections, 3, "the first attempt and two retries");
  // Not idempotent: sent once, never again.
  await rejects(
    client.pciFetch("cards/1", { method: "POST", body: "{}" }),
    ApiError,
  );
  equal(reset.connections, 4);
});

Deno.test("fetch() rejects with the caller's reason when the caller aborts", async () => {
  await using api = await startFakePartnerApi({ latency: 200 });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  await client.tokenProvider.getToken();
  const controller = new AbortController();
  const reason = new Error("caller left");
  const pending = client.fetch("organizations", { signal: controller.signal });
  controller.abort(reason);
  await rejects(pending, (error) => error === reason);
});

Deno.test("fetch() rejects with the caller's reason when the caller aborts while a 401's renewal waits (a provider or store slow to answer)", async () => {
  await using api = await startFakePartnerApi();
  const provider = createTokenProvider({
    environment: api.environment,
    ...api.credentials,
  });
  let asked!: () => void;
  const renewalAsked = new Promise<void>((resolve) => asked = resolve);
  let answer!: (renew: boolean) => void;
  const tokenProvider: TokenProvider = {
    getToken: (options) => provider.getToken(options),
    invalidate: (token) => provider.invalidate(token),
    reportUnauthorized: () => {
      asked();
      return new Promise<boolean>((resolve) => answer = resolve);
    },
    quota: undefined,
  };
  const client = createClient({ environment: api.environment, tokenProvider });
  api.injectApiFaults({ kind: "status", status: 401 });
  const controller = new AbortController();
  const reason = new Error("caller left");
  const pending = client.fetch("organizations", { signal: controller.signal });
  let outcome: unknown = "pending";
  pending.catch((error) => outcome = error);
  await renewalAsked;
  controller.abort(reason);
  await new Promise((resolve) => setTimeout(resolve, 0)); // a turn: the answer has not come
  answer(false); // it comes later: nothing waits for it
  await pending.catch(() => {});
  equal(outcome, reason);
});

Deno.test("one 503 on a page costs that page one more request, and the crawl goes on", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 250 } });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    retry: FAST_RETRY,
  });
  await client.tokenProvider.getToken();
  const before = api.apiRequests;
  const items = client.list("transactions", { limit: 50 });
  const first = await items.next();
  ok(!first.done);
  api.injectApiFaults({ kind: "status", status: 503 });
  const rest = await collect(items, { maxItems: 1000 });
  equal(rest.length + 1, 250);
  equal(api.apiRequests - before, 6 + 1, "six pages, one of them twice");
});

Deno.test("a connection cut mid-page is retried", async () => {
  await using api = await startFakePartnerApi({ items: { organizations: 30 } });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    retry: FAST_RETRY,
  });
  api.injectApiFaults({ kind: "drop" });
  equal(
    (await collect(client.list("organizations"), { maxItems: 100 })).length,
    30,
  );
});

Deno.test("createClient() works from its own copy: changing the environment later changes nothing", async () => {
  await using api = await startFakePartnerApi();
  await using elsewhere = serve(() => new Response("stolen"));
  const environment = {
    baseUrl: new URL(api.environment.baseUrl),
    pciBaseUrl: new URL(api.environment.pciBaseUrl),
    tokenUrl: new URL(api.environment.tokenUrl),
    audience: api.environment.audience,
  };
  const client = createClient({ environment, ...api.credentials });
  environment.baseUrl.port = new URL(elsewhere.base).port;
  environment.pciBaseUrl.port = new URL(elsewhere.base).port;
  for (
    const answer of [
      await client.fetch("organizations"),
      await client.pciFetch("cards/ch_000001"),
    ]
  ) {
    equal(answer.status, 200);
    await answer.body?.cancel();
  }
  equal(elsewhere.requests, 0);
});

Deno.test("createClient() refuses an environment that breaks defineEnvironment's rules", async () => {
  await using api = await startFakePartnerApi();
  const handBuilt = {
    ...api.environment,
    baseUrl: new URL("http://partner-api.example/api/"),
  };
  throws(
    () => createClient({ environment: handBuilt, ...api.credentials }),
    TypeError,
  );
  throws(
    () =>
      createClient({
        environment: { ...api.environment, audience: "" },
        ...api.credentials,
      }),
    TypeError,
  );
  equal(api.tokenRequests + api.apiRequests, 0);
});

// The ops sanitizer fails it when a provider was made (it starts deriving its store's key) before the refusal.
Deno.test("createClient() refuses its own options before making a provider, and half a limiter or provider before a request", async () => {
  await using api = await startFakePartnerApi();
  const setup = { environment: api.environment, ...api.credentials };
  const store = createMemoryTokenStore();
  const bad = [
    { priority: "urgent" as "high" },
    { rateLimit: { take: () => 0 } as unknown as RateLimiter },
    { onEvent: 1 as unknown as () => void },
  ];
  for (const options of bad) {
    const option = Object.keys(options)[0];
    throws(() => createClient({ ...setup, store, ...options }), { option });
  }
  const provider = createTokenProvider(setup);
  for (const method of ["getToken", "invalidate"] as const) {
    // The provider with one method gone.
    const half: TokenProvider = Object.assign(Object.create(provider), {
      [method]: undefined,
    });
    throws(
      () => createClient({ environment: api.environment, tokenProvider: half }),
      {
        name: "TypeError",
        option: "tokenProvider",
      },
    );
  }
  equal(api.tokenRequests + api.apiRequests, 0);
});

Deno.test("createClient() refuses a provider of another environment", async () => {
  await using sandbox = await startFakePartnerApi();
  await using production = await startFakePartnerApi();
  const productionProvider = createTokenProvider({
    ...production.environment,
    ...production.credentials,
  });
  throws(
    () =>
      createClient({
        environment: sandbox.environment,
        tokenProvider: productionProvider,
      }),
    { name: "TypeError", option: "tokenProvider" },
  );
  const otherAudience = createTokenProvider({
    ...sandbox.environment,
    ...sandbox.credentials,
    audience: "https://production.example",
  });
  throws(
    () =>
      createClient({
        environment: sandbox.environment,
        tokenProvider: otherAudience,
      }),
    TypeError,
  );
  equal(sandbox.tokenRequests + production.tokenRequests, 0);
});

Deno.test("encoded separators never leave with the token", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  for (
    const path of [
      "..%2f..%2fadmin",
      "..%2F..%2Fadmin",
      "a%5c..%5cadmin",
      "x/%2e%2e/%2e%2e/admin",
    ]
  ) {
    await rejects(client.fetch(path), TypeError);
    throws(() => client.list(path), TypeError);
  }
  equal(api.tokenRequests + api.apiRequests, 0);
});

Deno.test("a body that cannot be sent twice is never re-sent after a 401", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  await client.tokenProvider.getToken();
  api.revokeTokens();
  async function* chunks() {
    yield new TextEncoder().encode('{"a":1}');
  }
  const answer = await client.fetch("organizations", {
    method: "POST",
    body: chunks() as unknown as BodyInit,
  });
  equal(answer.status, 401, "the 401 is returned, not a 200 of an empty POST");
  await answer.body?.cancel();
  equal(api.tokenRequests, 1);
});

Deno.test("ApiError.bodyExcerpt holds no part of a token echoed near the cut", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    retry: false,
  });
  const token = (await client.tokenProvider.getToken()).accessToken;
  for (const at of [250, 280, 290, 299]) {
    api.injectApiFaults({
      kind: "body",
      status: 400,
      body: `${"x".repeat(at)}Bearer ${token} and more`,
    });
    await rejects(
      collect(client.list("organizations"), { maxItems: 1 }),
      (error: unknown) => {
        ok(error instanceof ApiError);
        const excerpt = error.bodyExcerpt ?? "";
        ok(excerpt.length <= 300);
        for (let length = 6; length <= token.length; length++) {
          ok(
            !excerpt.includes(token.slice(0, length)),
            `${length} characters of the token at ${at}`,
          );
        }
        ok(!error.message.includes(token.slice(0, 6)));
        return true;
      },
    );
  }
});

Deno.test("ApiError messages carry the status and the start of the body", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  await rejects(
    collect(client.list("organizations", { sortBy: "shoeSize" }), {
      maxItems: 1,
    }),
    (error: unknown) => {
      ok(error instanceof ApiError);
      equal(error.status, 400);
      equal(error.reason, "status");
      // The body says what was wrong; the URL alone would not.
      ok(error.message.includes("bad_request"), error.message);
      return true;
    },
  );
});

Deno.test("a server that ignores 'page' ends a dedupeBy list with an Error, not for ever", async () => {
  await using api = await startFakePartnerApi();
  await using stuck = serve(() =>
    Response.json({
      organizations: Array.from(
        { length: 10 },
        (_, i) => ({ organizationID: `o${i}` }),
      ),
    })
  );
  const environment = environmentWith(api.environment, { baseUrl: stuck.base });
  const client = createClient({ environment, ...api.credentials });
  await rejects(
    collect(
      client.list<{ organizationID: string }>("organizations", {
        limit: 10,
        dedupeBy: (o) => o.organizationID,
      }),
      { maxItems: 1_000_000 },
    ),
    (error: unknown) =>
      error instanceof Error &&
      (error as RepeatedPageError).reason === "repeated-page",
  );
  equal(stuck.requests, 2);
});

Deno.test("paginate() refuses more than 64 pages in flight before any request", () => {
  let requested = 0;
  const fetchPage = () => (requested++, Promise.resolve([]));
  throws(() => paginate(fetchPage, { concurrency: 2_000_000 }), RangeError);
  throws(() => paginate(fetchPage, { concurrency: 65 }), RangeError);
  paginate(fetchPage, { concurrency: 64 });
  equal(requested, 0);
});

Deno.test("PUT and DELETE are retried, POST and PATCH are not", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    retry: FAST_RETRY,
  });
  const statuses: Record<string, number> = {};
  for (const method of ["PUT", "DELETE", "POST", "PATCH"]) {
    api.injectApiFaults({ kind: "status", status: 503 });
    const answer = await client.fetch("organizations", {
      method,
      body: method === "DELETE" ? null : "{}",
    });
    statuses[method] = answer.status;
    await answer.body?.cancel();
  }
  deepStrictEqual(statuses, { PUT: 405, DELETE: 405, POST: 503, PATCH: 503 });
});

Deno.test("fetch()'s time limit ends with the headers: a slow body still reads through", async () => {
  await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    using api = inProcessFake({ now });
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => release = resolve);
    const slow = besideFake(api, () =>
      new Response(
        new ReadableStream({
          async start(controller) {
            controller.enqueue(new TextEncoder().encode("first "));
            await released; // the test lets the rest go once the limit is long past
            controller.enqueue(new TextEncoder().encode("and last"));
            controller.close();
          },
        }),
      ));
    const client = createClient({
      environment: slow.environment,
      ...api.credentials,
      // Like the runtime's fetch, it ends the body when its signal aborts.
      fetch: slow.fetch,
      now,
      timeout: 20,
    });
    const response = await drive(timers, client.fetch("anything"));
    onFakeClock(timers, 120).then(release);
    equal(await drive(timers, response.text()), "first and last");
  });
});

Deno.test("a caller's fetch that throws at once is no answer, typed, after the retries", async () => {
  await using api = await startFakePartnerApi();
  const thrown: TypeError[] = [];
  const client = createClient({
    environment: api.environment,
    tokenProvider: createTokenProvider({
      ...api.environment,
      ...api.credentials,
    }),
    fetch: () => {
      thrown.push(new TypeError("this fetch is broken"));
      throw thrown.at(-1);
    },
    retry: FAST_RETRY,
  });
  await rejects(client.fetch("organizations"), (error: unknown) => {
    ok(error instanceof ApiError);
    equal(error.status, 0);
    equal(error.reason, "network");
    // The last attempt's error, copied (a thrown value may keep the request): its class and message.
    ok(error.cause instanceof TypeError && error.cause !== thrown.at(-1));
    equal(error.cause.message, "this fetch is broken");
    return true;
  });
  equal(thrown.length, 3);
});

Deno.test("a host the runtime refuses (no net permission) fails after one attempt, naming the flag for the PCI host", async () => {
  await using api = await startFakePartnerApi();
  let calls = 0;
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    fetch: (input, init) => {
      if (!String(input).startsWith(api.environment.pciBaseUrl.href)) {
        return fetch(input, init);
      }
      calls++;
      // As Deno before 2.0 refuses a host --allow-net does not name (NotCapable since).
      const denied = new Error('Requires net access to "127.0.0.1"');
      throw Object.assign(denied, { name: "PermissionDenied" });
    },
    retry: FAST_RETRY,
  });
  const { host } = api.environment.pciBaseUrl;
  await rejects(client.pciFetch("cards"), (error: unknown) => {
    ok(error instanceof ApiError);
    deepStrictEqual([error.status, error.reason, error.attempts], [
      0,
      "network",
      1,
    ]);
    equal((error.cause as Error).name, "PermissionDenied");
    ok(error.message.includes(`add --allow-net=${host} `), error.message);
    ok(error.message.includes("pciBaseUrl's host"), error.message);
    return true;
  });
  equal(calls, 1);
});

Deno.test("a refused host's message names the base as settingNames calls it, beside a provider of the caller's too; an empty name is a TypeError", async () => {
  await using api = await startFakePartnerApi();
  const refuse = () => {
    throw Object.assign(new Error("refused"), { name: "NotCapable" });
  };
  const tokenProvider = createTokenProvider({
    environment: api.environment,
    ...api.credentials,
  });
  const settingNames = { baseUrl: "MY_API", pciBaseUrl: "MY_PCI" };
  const client = createClient({
    environment: api.environment,
    tokenProvider,
    settingNames,
    fetch: refuse,
  });
  for (
    const [call, name] of [
      [() => client.fetch("organizations"), "MY_API's host"],
      [() => client.pciFetch("cards"), "MY_PCI's host"],
    ] as const
  ) {
    await rejects(call(), (error: unknown) => {
      ok(error instanceof ApiError);
      equal(error.attempts, 1);
      ok(error.message.includes(name), error.message);
      return true;
    });
  }
  throws(
    () =>
      createClient({
        environment: api.environment,
        tokenProvider,
        settingNames: { baseUrl: "" },
      }),
    { name: "TypeError", option: "settingNames.baseUrl" },
  );
});

Deno.test("a call that fails before sending (no token) takes no rate-limit slot", async () => {
  await using api = await startFakePartnerApi();
  const rateLimit = createRateLimiter({ requests: 1, interval: 300_000 });
  const noToken = createClient({
    environment: api.environment,
    clientId: api.credentials.clientId,
    clientSecret: "not-the-secret",
    rateLimit,
  });
  await rejects(noToken.fetch("organizations"), TokenRequestError);
  // The one slot of the window is still free: taken now, not waited for.
  const ticket = rateLimit.take();
  equal(typeof ticket, "number");
  rateLimit.answered(ticket as number);
});

Deno.test("a RequestInit fetch cannot send (a bad header value, a GET with a body, an unknown mode or priority) rejects with a TypeError (option: 'init', or 'priority') after one attempt, with no retry", async () => {
  await using api = await startFakePartnerApi();
  const events: string[] = [];
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    onEvent: (event) => events.push(event.type),
  });
  const bad: RequestInit[] = [
    { headers: { "x-a": "a\nb" } },
    { method: "GET", body: "x" },
    { mode: "bogus" as RequestMode },
    { priority: "bogus" as RequestPriority },
  ];
  for (const init of bad) {
    events.length = 0;
    const error = await client.fetch("organizations", init).catch((e) => e);
    ok(error instanceof TypeError, String(error));
    // A priority is checked by name, on every runtime (Node 20's Request takes any).
    const option = init.priority === undefined ? "init" : "priority";
    equal((error as TypeError & { option?: string }).option, option);
    equal(events.filter((type) => type === "api.retry").length, 0);
  }
  equal(api.apiRequests, 0);
});

Deno.test("a GET or HEAD with a body, or a priority fetch lacks, is refused before a token or a rate-limit slot", async () => {
  await using api = await startFakePartnerApi();
  const rateLimit = createRateLimiter({ requests: 3, interval: 300_000 });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    rateLimit,
  });
  const secret = api.credentials.clientSecret;
  const bad: RequestInit[] = [
    { body: "x" },
    { method: "head", body: "x" },
    { priority: "urgent" as RequestPriority },
    // fetch quotes the bad header value: redacted, though no token is there yet.
    { body: "x", headers: { "x-key": `${secret}\u0000` } },
  ];
  for (const init of bad) {
    const error = await client.fetch("organizations", init).catch((e) => e);
    const option = init.priority === undefined ? "init" : "priority";
    equal((error as TypeError & { option?: string }).option, option);
    equal(Deno.inspect(error).includes(secret), false);
  }
  equal(api.tokenRequests, 0);
  for (let slot = 0; slot < 3; slot++) { // the window's 3 slots are still free
    const ticket = rateLimit.take();
    equal(typeof ticket, "number");
    rateLimit.answered(ticket as number);
  }
});

Deno.test("events keep their order: a 401's api.request before the api.renewal it leads to, a page's after its body (moved after the body, the 401's came after its renewal)", async () => {
  using api = inProcessFake();
  const heard: string[] = [];
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    fetch: api.fetch,
    onEvent: (event) => {
      if (!event.type.startsWith("api.")) return;
      const status = "status" in event ? `(${event.status})` : "";
      heard.push(`${event.type}${status}`);
    },
  });
  await (await client.fetch("organizations")).body?.cancel();
  api.service.revokeTokens();
  await (await client.fetch("organizations")).body?.cancel();
  deepStrictEqual(heard, [
    "api.request(200)",
    "api.request(401)",
    "api.renewal",
    "api.request(200)",
  ]);
});
