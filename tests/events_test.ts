// Issue 20, events: each event's fields, frozen, free of secrets, and a
// listener that throws changes nothing. Time is the injected clock.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { createClient } from "../src/client/mod.ts";
import { collect } from "../src/client/paginate.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import type { PartnerApiEvent } from "../src/core/events.ts";
import {
  type FakePartnerApiOptions,
  startFakePartnerApi,
} from "../src/testing/mod.ts";
import { backgroundWork, manualClock } from "./_helpers.ts";

/** The fake, a clock, and every event heard, of a client with its own provider. */
async function heard(fake: FakePartnerApiOptions = {}) {
  const api = await startFakePartnerApi(fake);
  const background = backgroundWork();
  const clock = manualClock(Date.now());
  const events: PartnerApiEvent[] = [];
  const tokens: string[] = [];
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    now: clock,
    retry: { retries: 2, initialDelay: 1, maxDelay: 1 },
    onEvent: (event) => events.push(event),
    waitUntil: background.waitUntil,
    // Every token issued, read from the token endpoint's answers.
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      const body = await response.clone().json().catch(() => ({}));
      if (typeof body.access_token === "string") tokens.push(body.access_token);
      return response;
    },
  });
  const of = <T extends PartnerApiEvent["type"]>(type: T) =>
    events.filter((event) => event.type === type) as Extract<
      PartnerApiEvent,
      { type: T }
    >[];
  return {
    api,
    clock,
    client,
    events,
    of,
    async [Symbol.asyncDispose]() {
      await background.settle();
      // What nobody can read: no event holds the secret or a token.
      const text = JSON.stringify(events);
      ok(!text.includes(api.credentials.clientSecret));
      ok(tokens.length > 0);
      for (const token of tokens) ok(!text.includes(token));
      for (const event of events) ok(Object.isFrozen(event));
      await api.close();
    },
  };
}

Deno.test("a token request and an API request: token.request with the quota, api.request with its fields", async () => {
  await using h = await heard({ quota: { perHour: 10 } });
  const token = await h.client.tokenProvider.getToken();
  await (await h.client.fetch("organizations?limit=5")).body?.cancel();
  const [request] = h.of("token.request");
  equal(request?.outcome, "ok");
  equal(request?.reason, undefined);
  equal(typeof request?.durationMs, "number");
  equal(request?.quota?.find((b) => b.bucket === "per_hour")?.remaining, 9);
  ok(Object.isFrozen(request?.quota?.[0]));
  deepStrictEqual(h.of("api.request"), [{
    type: "api.request",
    method: "GET",
    base: "api",
    path: "/api/organizations",
    host: "127.0.0.1",
    port: Number(h.api.environment.baseUrl.port),
    status: 200,
    attempt: 1,
    durationMs: 0,
  }]);
  ok(!JSON.stringify(h.events).includes(token.accessToken));
});

Deno.test("a background refresh: token.refresh with the time left", async () => {
  await using h = await heard({ tokenLifetime: 600_000 });
  await h.client.tokenProvider.getToken();
  h.clock.advance(570_000); // inside the refresh margin (a tenth: 60 s)
  await h.client.tokenProvider.getToken();
  const [refresh] = h.of("token.refresh");
  ok(refresh !== undefined);
  ok(refresh.expiresInMs > 0 && refresh.expiresInMs <= 30_000);
});

Deno.test("a 429 from the token endpoint: token.request with reason quota, then quota.blocked", async () => {
  await using h = await heard({ quota: { perHour: 1 } });
  await h.client.tokenProvider.getToken();
  await h.client.tokenProvider.invalidate();
  await h.client.tokenProvider.getToken().catch(() => {});
  const failed = h.of("token.request").at(-1);
  equal(failed?.outcome, "error");
  equal(failed?.reason, "quota");
  const [blocked] = h.of("quota.blocked");
  ok(blocked !== undefined && blocked.retryAt > h.clock());
});

Deno.test("a 503 then a 200: api.retry with reason, status and delay", async () => {
  await using h = await heard();
  h.api.injectApiFaults({ kind: "status", status: 503 });
  await (await h.client.fetch("organizations")).body?.cancel();
  const [retry, ...more] = h.of("api.retry");
  deepStrictEqual(more, []);
  equal(retry?.reason, "status");
  equal(retry?.status, 503);
  ok(retry.delayMs > 0 && retry.delayMs <= 1, "the backoff, with jitter");
  deepStrictEqual(h.of("api.request").map((e) => [e.status, e.attempt]), [
    [503, 1],
    [200, 2],
  ]);
});

Deno.test("a token endpoint answering 503 then 200: token.retry with reason, status and delay, and a token.request per attempt", async () => {
  await using h = await heard();
  h.api.injectTokenFaults({ kind: "status", status: 503 });
  await h.client.tokenProvider.getToken();
  const [retry, ...more] = h.of("token.retry");
  deepStrictEqual(more, []);
  equal(retry?.reason, "status");
  equal(retry?.status, 503);
  ok(retry.delayMs > 0 && retry.delayMs <= 1, "the backoff, with jitter");
  deepStrictEqual(h.of("token.request").map((e) => e.outcome), [
    "error",
    "ok",
  ]);
});

Deno.test("a revoked token: api.renewal, and the request sent once more", async () => {
  await using h = await heard();
  await h.client.tokenProvider.getToken();
  h.api.revokeTokens();
  const response = await h.client.fetch("organizations");
  await response.body?.cancel();
  equal(response.status, 200);
  deepStrictEqual(h.of("api.renewal"), [{
    type: "api.renewal",
    path: "/api/organizations",
  }]);
  equal(h.of("token.request").length, 2);
});

Deno.test("a full rate window: rate.wait with how long", async () => {
  await using api = await startFakePartnerApi();
  const clock = manualClock(Date.now());
  const events: PartnerApiEvent[] = [];
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    now: clock,
    rateLimit: { requests: 1, interval: 1 },
    onEvent: (event) => events.push(event),
  });
  await (await client.fetch("organizations")).body?.cancel();
  const second = client.fetch("organizations");
  // The second call has its token (cached) and waits for its slot.
  await new Promise((resolve) => setTimeout(resolve, 0));
  // The window frees 1 ms after the first answer, by the injected clock; the
  // limiter's timer (real, 1 ms) then lets the second go.
  clock.advance(25);
  await (await second).body?.cancel();
  const waits = events.filter((event) => event.type === "rate.wait");
  equal(waits.length, 1);
  equal(waits[0]?.type === "rate.wait" && waits[0].delayMs, 25);
});

Deno.test("a crawl: api.list with pages and items, once, even when the caller stops early", async () => {
  await using h = await heard({ items: { organizations: 23 } });
  await collect(h.client.list("organizations", { limit: 10 }), {
    maxItems: 100,
  });
  for await (const _ of h.client.list("organizations", { limit: 10 })) break;
  deepStrictEqual(
    h.of("api.list").map(({ path, outcome, pages, items }) => ({
      path,
      outcome,
      pages,
      items,
    })),
    [
      { path: "/api/organizations", outcome: "ok", pages: 3, items: 23 },
      { path: "/api/organizations", outcome: "ok", pages: 1, items: 1 },
    ],
  );
});

Deno.test("a listener that throws changes nothing", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    onEvent: () => {
      throw new Error("listener broke");
    },
  });
  const response = await client.fetch("organizations");
  await response.body?.cancel();
  equal(response.status, 200);
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    onEvent: () => {
      throw new Error("listener broke");
    },
  });
  ok((await provider.getToken()).expiresAt > 0);
});

Deno.test("a listener that returns a rejecting promise is ignored: no unhandled rejection", async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (event: PromiseRejectionEvent) => {
    event.preventDefault();
    unhandled.push(event.reason);
  };
  globalThis.addEventListener("unhandledrejection", onUnhandled);
  try {
    await using api = await startFakePartnerApi();
    const rejecting = (): Promise<void> =>
      Promise.reject(new Error("listener broke"));
    const client = createClient({
      environment: api.environment,
      ...api.credentials,
      onEvent: rejecting,
    });
    const response = await client.fetch("organizations");
    await response.body?.cancel();
    equal(response.status, 200);
    // Rejections are reported after the microtasks run out: give them a turn.
    await new Promise((resolve) => setTimeout(resolve, 0));
    deepStrictEqual(unhandled, []);
  } finally {
    globalThis.removeEventListener("unhandledrejection", onUnhandled);
  }
});
