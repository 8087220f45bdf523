// Each edge of the token core that the round-2 review found, against a
// loopback server where one can show it. Time is driven, never waited for.

import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import { QuotaExceededError, TokenRequestError } from "../src/core/errors.ts";
import {
  createTokenProvider,
  type IssuedToken,
  requestToken,
  type TokenProvider,
} from "../src/token/mod.ts";
import { createClient } from "../src/client/mod.ts";
import {
  createFakePartnerService,
  startFakePartnerApi,
} from "../src/testing/mod.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";
import { systemClockReads } from "./_system_clock.ts";

const HOUR = 3_600_000;

/** A loopback server that answers every request with `answer()`. */
function serve(answer: (request: Request) => Response | Promise<Response>) {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    answer,
  );
  return {
    tokenUrl: `http://127.0.0.1:${server.addr.port}/oauth/token`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

const CLIENT = {
  audience: "https://partner-api.test",
  clientId: "client",
  clientSecret: 's3cr3t/with spaces&"quotes"',
};

Deno.test("the default fetch is called as a plain function, never as a method", async () => {
  await using api = await startFakePartnerApi();
  const original = globalThis.fetch;
  const calls: unknown[] = [];
  // Like workerd: fetch called with any `this` but the global throws.
  globalThis.fetch = function (this: unknown, input, init) {
    calls.push(this);
    if (this !== undefined && this !== globalThis) {
      throw new TypeError("Illegal invocation");
    }
    return original(input, init);
  };
  try {
    await requestToken({ ...api.environment, ...api.credentials });
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
    });
    await provider.getToken();
    const custom = globalThis.fetch;
    await requestToken({
      ...api.environment,
      ...api.credentials,
      fetch: custom,
    });
  } finally {
    globalThis.fetch = original;
  }
  equal(calls.length, 3);
});

Deno.test("bodyFormat 'form' sends the four fields form-encoded", async () => {
  await using api = await startFakePartnerApi({ tokenBodyFormats: ["form"] });
  const options = { ...api.environment, ...api.credentials };
  await rejects(requestToken(options), (error: unknown) => {
    ok(error instanceof TokenRequestError);
    equal(error.status, 400, "JSON is refused by a form-only server");
    return true;
  });
  const token = await requestToken({ ...options, bodyFormat: "form" });
  ok(api.isValidToken(token.accessToken));
  const provider = createTokenProvider({ ...options, bodyFormat: "form" });
  ok(api.isValidToken((await provider.getToken()).accessToken));
  await rejects(
    requestToken({ ...options, bodyFormat: "xml" as "json" }),
    TypeError,
  );
});

Deno.test("every TokenRequestError says its reason", async (t) => {
  await using api = await startFakePartnerApi({ quota: { perHour: 1 } });
  const options = { ...api.environment, ...api.credentials };
  const reason = async (
    promise: Promise<unknown>,
    expected: TokenRequestError["reason"],
  ) =>
    await rejects(promise, (error: unknown) => {
      ok(error instanceof TokenRequestError);
      equal(error.reason, expected);
      return true;
    });
  await t.step("network: nothing listens", async () => {
    const closed = await startFakePartnerApi();
    const tokenUrl = closed.environment.tokenUrl;
    await closed.close();
    await reason(requestToken({ ...options, tokenUrl }), "network");
  });
  await t.step("status: wrong secret", async () => {
    await reason(requestToken({ ...options, clientSecret: "wrong" }), "status");
  });
  await t.step("malformed: a 200 without a token", async () => {
    api.injectTokenFaults({ kind: "body", body: "{}" });
    await reason(requestToken(options), "malformed");
  });
  await t.step("quota: past the quota", async () => {
    await requestToken(options);
    await reason(requestToken(options), "quota");
  });
  await t.step("timeout: no answer in time", async () => {
    api.injectTokenFaults({ kind: "delay", ms: 200 });
    await reason(requestToken({ ...options, timeout: 20 }), "timeout");
  });
});

Deno.test("requestToken() gives up after 30 s by default, even on a fetch that ignores its signal", async () => {
  await withFakeTimers(async (clock) => {
    const hanging = () => new Promise<Response>(() => {});
    const pending = requestToken({
      tokenUrl: "https://idp.example/oauth/token",
      ...CLIENT,
      fetch: hanging,
    });
    const outcome = pending.then(() => "resolved", (error) => error);
    await clock.tickAsync(29_999);
    let settled = false;
    outcome.then(() => settled = true);
    await Promise.resolve();
    ok(!settled, "still waiting at 29.999 s");
    await clock.tickAsync(1);
    const error = await outcome;
    ok(error instanceof TokenRequestError);
    equal(error.reason, "timeout");
  });
});

Deno.test("a token answer over 64 KiB is refused without reading the rest", async () => {
  let sent = 0;
  const chunk = new Uint8Array(16 * 1024).fill(0x20);
  await using server = serve(() =>
    new Response(
      new ReadableStream({
        pull(controller) {
          // A 500 MB answer, if anyone read it all.
          if (sent >= 500 * 1024 * 1024) return controller.close();
          sent += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
      { headers: { "content-type": "application/json" } },
    )
  );
  await rejects(
    requestToken({ ...CLIENT, tokenUrl: server.tokenUrl }),
    (error: unknown) => {
      ok(error instanceof TokenRequestError);
      equal(error.reason, "malformed");
      return true;
    },
  );
  // The server runs ahead of the client by what socket buffers hold (a few
  // MB here); what matters is that the 500 MB are never pulled.
  ok(sent < 16 * 1024 * 1024, `the server sent ${sent} bytes`);
});

Deno.test("a declared Content-Length over 64 KiB is refused before reading", async () => {
  await using api = await startFakePartnerApi();
  api.injectTokenFaults({
    kind: "body",
    body: JSON.stringify({
      access_token: "a",
      expires_in: 60,
      token_type: "Bearer",
      pad: "x".repeat(70_000),
    }),
  });
  await rejects(
    requestToken({ ...api.environment, ...api.credentials }),
    (error: unknown) =>
      error instanceof TokenRequestError && error.reason === "malformed",
  );
});

Deno.test("a gzip token answer of a small declared length that inflates past 64 KiB is refused", async () => {
  const inflated = new TextEncoder().encode(JSON.stringify({
    access_token: "a",
    expires_in: 60,
    token_type: "Bearer",
    pad: " ".repeat(1024 * 1024),
  }));
  const gzip = new Uint8Array(
    await new Response(
      new Blob([inflated]).stream().pipeThrough(new CompressionStream("gzip")),
    ).arrayBuffer(),
  );
  ok(gzip.byteLength < 64 * 1024, "declared far below the bound");
  await using server = serve(() =>
    new Response(gzip, {
      headers: {
        "content-type": "application/json",
        "content-encoding": "gzip",
        "content-length": String(gzip.byteLength),
      },
    })
  );
  await rejects(
    requestToken({ ...CLIENT, tokenUrl: server.tokenUrl }),
    (error: unknown) =>
      error instanceof TokenRequestError && error.reason === "malformed",
  );
});

Deno.test("JSON.stringify of a token shows the access token redacted", async () => {
  await using api = await startFakePartnerApi();
  const token = await requestToken({ ...api.environment, ...api.credentials });
  const json = JSON.stringify({ token });
  ok(!json.includes(token.accessToken));
  equal(JSON.parse(json).token.accessToken, "[redacted]");
  equal(JSON.parse(json).token.expiresIn, token.expiresIn);
  ok(api.isValidToken(token.accessToken), "the property still reads the token");
  deepStrictEqual(Object.keys(token), [
    "tokenType",
    "expiresIn",
    "expiresAt",
    "quota",
  ]);
});

Deno.test("a token's access token never shows in a spread, Object.entries or structuredClone", async () => {
  await using api = await startFakePartnerApi();
  const token = await requestToken({ ...api.environment, ...api.credentials });
  const views = [
    JSON.stringify({ ...token }),
    JSON.stringify(Object.entries(token)),
    JSON.stringify(structuredClone(token)),
    Deno.inspect(token, { showHidden: false }),
  ];
  for (const view of views) ok(!view.includes(token.accessToken), view);
  equal(({ ...token } as { accessToken?: string }).accessToken, undefined);
  ok(api.isValidToken(token.accessToken), "the property still reads it");
});

Deno.test("a 429 whose day bucket lacks 't' still blocks until the hour bucket resets", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    now: clock,
  });
  api.injectTokenFaults({
    kind: "status",
    status: 429,
    headers: {
      "Idp-Client-Quota-Limit": "b=per_hour;q=10;r=0;t=3540,b=per_day;q=50;r=0",
    },
  });
  await rejects(provider.getToken(), (error: unknown) => {
    ok(error instanceof QuotaExceededError);
    equal(error.retryAt, clock() + 3_540_000);
    equal(error.buckets.length, 1, "the bad bucket is dropped");
    return true;
  });
  clock.advance(3_539_000);
  await rejects(provider.getToken(), QuotaExceededError);
  equal(api.tokenRequests, 1, "nothing sent while the hour bucket is empty");
  clock.advance(1_000);
  ok(api.isValidToken((await provider.getToken()).accessToken));
});

Deno.test("absurd quota waits block for 25 hours at most, with a typed error", async (t) => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  const cases: [string, Record<string, string>][] = [
    ["a huge 't'", {
      "Idp-Client-Quota-Limit":
        `b=per_hour;q=1;r=0;t=${Number.MAX_SAFE_INTEGER}`,
    }],
    ["a huge Retry-After", { "retry-after": "99999999999999999999" }],
    ["a Retry-After date in the year 9999", {
      "retry-after": "Fri, 31 Dec 9999 23:59:59 GMT",
    }],
  ];
  for (const [name, headers] of cases) {
    await t.step(name, async () => {
      const provider = createTokenProvider({
        ...api.environment,
        ...api.credentials,
        now: clock,
      });
      api.injectTokenFaults({ kind: "status", status: 429, headers });
      await rejects(provider.getToken(), (error: unknown) => {
        ok(error instanceof QuotaExceededError);
        equal(error.retryAt, clock() + 25 * HOUR);
        return true;
      });
    });
  }
});

Deno.test("a 429 asking no wait (Retry-After: 0 or a date gone, a bucket reset now) is a QuotaExceededError that blocks 10 s: 50 callers 40 ms apart send one request (r216a F2: each sent one)", async (t) => {
  const clock = manualClock();
  const cases: [string, Record<string, string>][] = [
    ["Retry-After: 0", { "retry-after": "0" }],
    ["a date gone", {
      "retry-after": new Date(clock() - 60_000).toUTCString(),
    }],
    ["t=0", { "Idp-Client-Quota-Limit": "b=per_hour;q=10;r=0;t=0" }],
  ];
  for (const [name, headers] of cases) {
    await t.step(name, async () => {
      await using api = await startFakePartnerApi({ now: clock });
      const provider = createTokenProvider({
        ...api.environment,
        ...api.credentials,
        now: clock,
      });
      api.injectTokenFaults({ kind: "status", status: 429, headers });
      for (let call = 0; call < 50; call++) {
        await rejects(provider.getToken(), (error: unknown) => {
          ok(error instanceof QuotaExceededError);
          equal(error.reason, "quota");
          return true;
        });
        clock.advance(40);
      }
      equal(api.tokenRequests, 1);
      clock.advance(8_000);
      ok(api.isValidToken((await provider.getToken()).accessToken));
    });
  }
});

Deno.test("Retry-After dates are measured against the injected clock (2031 behaves like 2026)", async () => {
  const clock = manualClock(Date.UTC(2031, 5, 1, 9, 15));
  await using api = await startFakePartnerApi({ now: clock });
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    now: clock,
  });
  const inTwoMinutes = new Date(clock() + 120_000).toUTCString();
  api.injectTokenFaults({
    kind: "status",
    status: 429,
    headers: { "retry-after": inTwoMinutes },
  });
  await rejects(provider.getToken(), (error: unknown) => {
    ok(error instanceof QuotaExceededError);
    equal(error.retryAt, clock() + 120_000);
    return true;
  });
  clock.advance(120_000);
  ok(api.isValidToken((await provider.getToken()).accessToken));
});

Deno.test("a provider reads the time only through its `now`: its decisions and its attempts' time limits (one time model)", async () => {
  const clock = manualClock();
  const service = createFakePartnerService({
    now: clock,
    tokenLifetime: 60_000,
  });
  // In memory: no socket, no other clock.
  const provider = createTokenProvider({
    ...service.environmentAt("https://partner.test", "https://pci.test"),
    ...service.credentials,
    fetch: (input, init) => service.handle(new Request(input, init)),
    now: clock,
  });
  const reads = await systemClockReads(async () => {
    await provider.getToken();
    clock.advance(120_000);
    await provider.getToken(); // expired: a second request, timed again
  });
  equal(service.tokenRequests, 2);
  equal(reads, 0);
});

Deno.test("a provider of your own may invalidate synchronously (void | Promise<void>): a client renews after a 401 all the same", async () => {
  await using api = await startFakePartnerApi();
  let current: IssuedToken | undefined;
  let dropped = 0;
  const provider: TokenProvider = {
    getToken: async () =>
      current ??= await requestToken({
        ...api.environment,
        ...api.credentials,
      }),
    // Returns nothing: DESIGN types it `void | Promise<void>`.
    invalidate() {
      dropped++;
      current = undefined;
    },
    quota: undefined,
  };
  const client = createClient({
    environment: api.environment,
    tokenProvider: provider,
  });
  api.injectApiFaults({ kind: "status", status: 401 });
  const answer = await client.fetch("organizations");
  await answer.body?.cancel();
  equal(answer.status, 200);
  equal(dropped, 1);
  equal(api.tokenRequests, 2);
});
