// Outside review r149 F3: a call whose init fetch cannot send fails before
// sending, so it takes no token and no rate-limit slot (DESIGN: "one that
// fails before sending takes none").

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { createClient, createRateLimiter } from "../src/client/mod.ts";
import { loopbackApi } from "./_loopback_api.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";

Deno.test("an init fetch cannot send (a bad method, a forbidden method, a bad header name or value, mode 'navigate') is refused before a token request or a rate-limit slot", async () => {
  await using api = await startFakePartnerApi();
  const rateLimit = createRateLimiter({ requests: 10, interval: 300_000 });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    rateLimit,
  });
  const bad: RequestInit[] = [
    { method: "GE T" },
    { method: "CONNECT" },
    { headers: { "x-a": "a\nb" } },
    { headers: { "x a": "b" } },
    // fetch quotes the bad value: redacted, though no token is there yet.
    { headers: [["x-key", `${api.credentials.clientSecret}\u0000`]] },
    { mode: "navigate" as RequestMode },
    { method: "POST", body: "x", headers: { "x a": "b" } },
    // No string, as a caller in JavaScript may pass: fetch's own words (r168b F3: `toUpperCase` is not a function).
    ...[{}, [], Symbol("m"), () => "GET", { toString: () => ({}) }].map(
      (method) => ({ method } as unknown as RequestInit),
    ),
  ];
  for (const init of bad) {
    const error = await client.fetch("organizations", init).catch((e) => e);
    ok(error instanceof TypeError, String(error));
    equal((error as TypeError & { option?: string }).option, "init");
    equal(Deno.inspect(error).includes(api.credentials.clientSecret), false);
  }
  equal(api.tokenRequests, 0);
  equal(api.apiRequests, 0);
  // The window's 10 slots are all still free: each taken now, not waited for.
  const waits = new AbortController();
  const tickets = Array.from(
    { length: 10 },
    () => rateLimit.take(waits.signal),
  );
  waits.abort();
  await Promise.allSettled(tickets);
  equal(tickets.filter((ticket) => typeof ticket === "number").length, 10);
  for (const ticket of tickets) {
    if (typeof ticket === "number") rateLimit.answered(ticket);
  }
});

Deno.test("an init fetch can send, with headers, a method and a stream body, is still sent once", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const good: RequestInit[] = [
    { method: "get", headers: { accept: "application/json" } },
    { headers: new Headers({ "x-a": "b" }), mode: "cors" },
    {
      method: "POST",
      headers: [["content-type", "text/plain"]],
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("x"));
          controller.close();
        },
      }),
    },
  ];
  for (const init of good) {
    const response = await client.fetch("organizations", init);
    await response.body?.cancel();
  }
  equal(api.apiRequests, good.length);
  equal(api.tokenRequests, 1);
});

// Outside review r150 H4: the early refusal came before the token was known,
// so the runtime's own words quoted the client's current access token whole
// where the caller had put it in a header name or value (or an enum field).
Deno.test("an init fetch cannot send that holds the client's access token is refused without showing it, before a token request or a slot", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const { accessToken: token } = await client.tokenProvider.getToken();
  const { clientSecret } = api.credentials;
  const bad: RequestInit[] = [
    { headers: { [`X ${token}`]: "1" } },
    { headers: { "X-A": `${token}\u0000` } },
    { headers: [["X-A", `${token}\u0000`]] },
    { headers: [[`X ${token}`, "1"]] },
    { headers: { "X-A": `${clientSecret}${token}\u0000` } },
    { headers: { "X-A": `${token.toLowerCase()}\u0000` } },
    { method: "POST", body: "x", headers: { [`X\t${token}`]: "1" } },
    { mode: token as RequestMode },
    { credentials: `${token}` as RequestCredentials },
    { referrer: `http://a b/${token}` },
  ];
  for (const init of bad) {
    const error = await client.fetch("organizations", init).catch((e) => e);
    ok(error instanceof TypeError, String(error));
    equal((error as TypeError & { option?: string }).option, "init");
    const shown = `${error.message}\n${error.stack}\n${Deno.inspect(error)}`;
    for (const secret of [token, clientSecret]) {
      equal(shown.toLowerCase().includes(secret.toLowerCase()), false, shown);
    }
  }
  equal(api.tokenRequests, 1);
  equal(api.apiRequests, 0);
});

// Outside review r150 L3: headers given as a Map or a generator (fetch takes any iterable of pairs) were dropped
// silently: the client copied them as a record.
Deno.test("headers given as any iterable of pairs (a Map, a generator) are sent on every attempt, a retry's too", async () => {
  const seen: (string | null)[] = [];
  // Every first attempt answered 503 (retried at once), the second 204.
  await using api = loopbackApi("tok-abcdefgh", (request) => {
    const [a, b] = [request.headers.get("x-a"), request.headers.get("x-b")];
    const status = seen.push(b === null ? a : `${a} ${b}`) % 2 ? 503 : 204;
    return new Response(null, { status, headers: { "retry-after": "0" } });
  });
  const client = createClient({
    environment: api.environment,
    clientId: "id",
    clientSecret: "secret-abcdefgh",
  });
  const pairs = function* () {
    yield ["x-a", "generated"];
  };
  // One array handed out again for each pair; pairs that are themselves read once (r151 F8).
  const reused = function* () {
    const pair = ["x-a", "1"];
    yield pair;
    pair.splice(0, 2, "x-b", "2");
    yield pair;
  };
  const once = function* () {
    yield "x-a";
    yield "once";
  };
  const given: unknown[] = [
    new Map([["x-a", "mapped"]]),
    pairs(),
    reused(),
    new Set([once()]),
  ];
  for (const headers of given) {
    const init = { headers } as unknown as RequestInit;
    equal((await client.fetch("organizations", init)).status, 204);
  }
  deepStrictEqual(seen, [
    ...["mapped", "mapped", "generated", "generated"],
    ...["1 2", "1 2", "once", "once"],
  ]);
});

// Outside attack r151 F1, F2, F5: headers given as a string (the secret, pasted) failed with a runtime TypeError
// quoting it, null or an iterable that throws with one of no option; a secret given as priority was echoed whole.
Deno.test("headers that are no headers (a string, null, an iterable that throws or is none) and a priority that is none are refused as the init, the secret not shown, before a token or a request", async () => {
  await using api = await startFakePartnerApi();
  const { clientSecret } = api.credentials;
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const throwing = function* () {
    yield ["x-a", "1"];
    throw new RangeError(`midway ${clientSecret}`);
  };
  // Made for each call: a generator is read once.
  const inits = () =>
    [
      { headers: clientSecret },
      { headers: null },
      { headers: throwing() },
      { headers: { [Symbol.iterator]: 1 } },
      { headers: new Set([{ 0: "x-a", 1: clientSecret }]) },
      { priority: clientSecret },
    ] as unknown as RequestInit[];
  for (const send of [client.fetch, client.pciFetch]) {
    for (const init of inits()) {
      const error = await send("organizations", init).catch((e) => e);
      ok(error instanceof TypeError, String(error));
      const option = (error as TypeError & { option?: string }).option;
      ok(option === "init" || option === "priority", option);
      const shown = `${error.message} ${error.stack} ${Deno.inspect(error)}`;
      equal(shown.includes(clientSecret), false);
    }
  }
  equal(api.tokenRequests, 0);
  equal(api.apiRequests, 0);
});
