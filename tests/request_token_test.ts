import {
  deepStrictEqual,
  equal,
  notEqual,
  ok,
  rejects,
  throws,
} from "node:assert/strict";
import { QuotaExceededError, TokenRequestError } from "../src/core/errors.ts";
import { createTokenProvider, requestToken } from "../src/token/mod.ts";
import { createClient } from "../src/client/mod.ts";
import { type FakeFault, startFakePartnerApi } from "../src/testing/mod.ts";
import { manualClock } from "./_helpers.ts";
import type { OptionError } from "../src/core/_check.ts";

Deno.test("requestToken() posts exactly the four JSON fields", async () => {
  await using api = await startFakePartnerApi();
  let sent: Request | undefined;
  const recordingFetch: typeof fetch = (input, init) => {
    sent = new Request(input, init);
    return fetch(sent.clone());
  };
  await requestToken({
    ...api.environment,
    ...api.credentials,
    fetch: recordingFetch,
  });
  ok(sent);
  equal(sent.method, "POST");
  equal(sent.headers.get("content-type"), "application/json");
  deepStrictEqual(await sent.json(), {
    client_id: api.credentials.clientId,
    client_secret: api.credentials.clientSecret,
    audience: api.environment.audience,
    grant_type: "client_credentials",
  });
});

Deno.test("requestToken() computes expiry from the clock when the request was sent", async () => {
  await using api = await startFakePartnerApi({ tokenLifetime: 3_600_000 });
  const clock = manualClock();
  const sentAt = clock();
  const slowFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    clock.advance(5000);
    return response;
  };
  const token = await requestToken({
    ...api.environment,
    ...api.credentials,
    now: clock,
    fetch: slowFetch,
  });
  equal(token.expiresIn, 3600);
  equal(token.expiresAt, sentAt + 3_600_000);
  equal(token.tokenType, "Bearer");
  equal(Object.isFrozen(token), true);
  ok(api.isValidToken(token.accessToken));
});

Deno.test("requestToken() reads the quota header, or [] when it is garbled", async () => {
  await using api = await startFakePartnerApi({ quota: { perHour: 5 } });
  const options = { ...api.environment, ...api.credentials };
  const token = await requestToken(options);
  deepStrictEqual(token.quota.map((b) => [b.bucket, b.limit, b.remaining]), [
    ["per_hour", 5, 4],
    ["per_day", 10_000, 9_999],
  ]);
  api.injectTokenFaults({
    kind: "body",
    body: JSON.stringify({
      access_token: "x",
      expires_in: 9,
      token_type: "Bearer",
    }),
    headers: { "idp-client-quota-limit": "b=per_hour;q=;;garbage" },
  });
  deepStrictEqual((await requestToken(options)).quota, []);
});

Deno.test("requestToken() reads a quota header of another name", async () => {
  await using api = await startFakePartnerApi();
  api.injectTokenFaults({
    kind: "body",
    body: JSON.stringify({
      access_token: "x",
      expires_in: 9,
      token_type: "bearer",
    }),
    headers: { "Auth0-Client-Quota-Limit": "b=per_hour;q=2;r=1;t=60" },
  });
  const token = await requestToken({
    ...api.environment,
    ...api.credentials,
    quotaHeader: "Auth0-Client-Quota-Limit",
  });
  deepStrictEqual(token.quota, [
    { bucket: "per_hour", limit: 2, remaining: 1, resetAfter: 60 },
  ]);
  equal(token.tokenType, "Bearer");
});

Deno.test("requestToken() rejects a bad answer with TokenRequestError", async (t) => {
  await using api = await startFakePartnerApi();
  const body = (value: unknown): FakeFault => ({
    kind: "body",
    body: typeof value === "string" ? value : JSON.stringify(value),
  });
  const good = { access_token: "abc", expires_in: 60, token_type: "Bearer" };
  const crlf = "abc\r\nSet-Cookie: stolen=1";
  const cases: [string, FakeFault, TokenRequestError["reason"]][] = [
    ["a body that is not JSON", body("{not json"), "malformed"],
    ["a JSON string body", body('"token"'), "malformed"],
    [
      "no access_token",
      body({ ...good, access_token: undefined }),
      "malformed",
    ],
    ["an empty access_token", body({ ...good, access_token: "" }), "malformed"],
    [
      "an access_token with CR/LF",
      body({ ...good, access_token: crlf }),
      "malformed",
    ],
    [
      "an access_token with a space",
      body({ ...good, access_token: "a b" }),
      "malformed",
    ],
    ["expires_in zero", body({ ...good, expires_in: 0 }), "malformed"],
    ["expires_in as text", body({ ...good, expires_in: "sixty" }), "malformed"],
    [
      "expires_in holding text to hide (r177: quoted, it could hold anything)",
      body({ ...good, expires_in: "stolen=1" }),
      "malformed",
    ],
    [
      "expires_in as a decimal string",
      body({ ...good, expires_in: "60.5" }),
      "malformed",
    ],
    [
      "expires_in as a signed string",
      body({ ...good, expires_in: "+60" }),
      "malformed",
    ],
    ["expires_in 1e300", body({ ...good, expires_in: 1e300 }), "malformed"],
    [
      "expires_in a year and a second",
      body({ ...good, expires_in: 31_536_001 }),
      "malformed",
    ],
    [
      "expires_in NaN (null in JSON)",
      body({ ...good, expires_in: null }),
      "malformed",
    ],
    ["token_type mac", body({ ...good, token_type: "mac" }), "malformed"],
    ["no token_type", body({ ...good, token_type: undefined }), "malformed"],
    [
      "a body over 64 KiB",
      body({ ...good, padding: "x".repeat(70_000) }),
      "malformed",
    ],
    ["a 500", { kind: "status", status: 500 }, "status"],
    ["a dropped connection", { kind: "drop" }, "network"],
  ];
  for (const [name, fault, reason] of cases) {
    await t.step(name, async () => {
      api.injectTokenFaults(fault);
      await rejects(
        requestToken({ ...api.environment, ...api.credentials }),
        (error: unknown) => {
          ok(error instanceof TokenRequestError);
          ok(!(error instanceof QuotaExceededError));
          equal(error.reason, reason, error.message);
          ok(!error.message.includes("stolen"), "a bad token is never quoted");
          return true;
        },
      );
    });
  }
});

Deno.test("expires_in as a string of digits is read as seconds; a missing one means an hour", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  const good = { access_token: "abc", token_type: "Bearer" };
  api.injectTokenFaults(
    { kind: "body", body: JSON.stringify({ ...good, expires_in: "3599" }) },
    { kind: "body", body: JSON.stringify(good) },
  );
  const options = { ...api.environment, ...api.credentials, now: clock };
  const text = await requestToken(options);
  equal(text.expiresIn, 3599);
  equal(text.expiresAt, clock() + 3_599_000);
  const missing = await requestToken(options);
  equal(missing.expiresIn, 3600);
  equal(missing.expiresAt, clock() + 3_600_000);
});

Deno.test("requestToken() accepts expires_in of exactly a year", async () => {
  // Sent as a body: the fake's tokenLifetime is a time option, at most 2,147,483,647 ms.
  const body = {
    access_token: "a-year-token",
    expires_in: 31_536_000,
    token_type: "Bearer",
  };
  await using api = await startFakePartnerApi({
    faults: [{ kind: "body", body: JSON.stringify(body) }],
  });
  const token = await requestToken({ ...api.environment, ...api.credentials });
  equal(token.expiresIn, 31_536_000);
});

Deno.test("requestToken() carries the OAuth error of a refusal", async () => {
  await using api = await startFakePartnerApi();
  await rejects(
    requestToken({
      ...api.environment,
      ...api.credentials,
      clientSecret: "wrong",
    }),
    (error: unknown) => {
      ok(error instanceof TokenRequestError);
      equal(error.status, 401);
      equal(error.code, "access_denied");
      equal(error.description, "Unauthorized");
      equal(error.response?.status, 401);
      equal(Object.keys(error).includes("response"), false);
      return true;
    },
  );
  await rejects(
    requestToken({ ...api.environment, ...api.credentials, audience: "other" }),
    { status: 401, code: "access_denied" },
  );
});

Deno.test("requestToken() rejects a network failure with the error as cause", async () => {
  const api = await startFakePartnerApi();
  const options = { ...api.environment, ...api.credentials };
  await api.close();
  await rejects(requestToken(options), (error: unknown) => {
    ok(error instanceof TokenRequestError);
    equal(error.status, undefined);
    ok(error.cause instanceof Error);
    return true;
  });
});

Deno.test("requestToken() does not follow a redirect with the secret", async () => {
  await using api = await startFakePartnerApi();
  await using elsewhere = await startFakePartnerApi();
  api.injectTokenFaults({
    kind: "status",
    status: 307,
    headers: { location: elsewhere.environment.tokenUrl.href },
  });
  await rejects(requestToken({ ...api.environment, ...api.credentials }), {
    name: "TokenRequestError",
    status: 307,
  });
  equal(elsewhere.tokenRequests, 0);
});

Deno.test("requestToken() rejects a 429 with QuotaExceededError and the reset time", async () => {
  const clock = manualClock(Date.UTC(2026, 10, 21, 10, 59));
  await using api = await startFakePartnerApi({
    quota: { perHour: 1 },
    now: clock,
  });
  const options = { ...api.environment, ...api.credentials, now: clock };
  await requestToken(options);
  await rejects(requestToken(options), (error: unknown) => {
    ok(error instanceof QuotaExceededError);
    equal(error.status, 429);
    equal(error.code, "too_many_requests");
    equal(error.description, "Client quota exceeded");
    equal(error.buckets[0]?.remaining, 0);
    equal(error.retryAt, Date.UTC(2026, 10, 21, 11));
    return true;
  });
  equal(api.tokenRequests, 2);
});

Deno.test("requestToken() prefers Retry-After for the reset time of a 429", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({ now: clock });
  api.injectTokenFaults({ kind: "status", status: 429, retryAfter: 17 });
  await rejects(
    requestToken({ ...api.environment, ...api.credentials, now: clock }),
    { name: "QuotaExceededError", retryAt: clock() + 17_000 },
  );
});

Deno.test("requestToken() rejects with the signal's reason when aborted", async () => {
  await using api = await startFakePartnerApi();
  const options = { ...api.environment, ...api.credentials };
  const reason = new Error("stop");
  await rejects(
    requestToken({ ...options, signal: AbortSignal.abort(reason) }),
    (error) => error === reason,
  );
  equal(api.tokenRequests, 0);
  api.injectTokenFaults({ kind: "delay", ms: 5000 });
  const controller = new AbortController();
  const pending = requestToken({ ...options, signal: controller.signal });
  setTimeout(() => controller.abort(reason), 20);
  await rejects(pending, (error) => error === reason);
});

Deno.test("requestToken() refuses bad options before sending anything", async () => {
  await using api = await startFakePartnerApi();
  const options = { ...api.environment, ...api.credentials };
  const bad: [string, string, Record<string, unknown>][] = [
    ["tokenUrl", "must use https", { tokenUrl: "http://idp.example.com/t" }],
    ["clientId", "must be a non-empty string", { clientId: "" }],
    ["clientSecret", "must be a non-empty string", {
      clientSecret: undefined,
    }],
    ["audience", "must be a non-empty string", { audience: 5 }],
    // Spaces alone are empty too, as defineEnvironment has it: "   " went to the IdP.
    ["audience", "must be a non-empty string", { audience: "   " }],
    ["clientId", "must be a non-empty string", { clientId: " \t" }],
    ["fetch", "must be a function", { fetch: "fetch" }],
  ];
  for (const [option, rule, override] of bad) {
    await rejects(
      requestToken({ ...options, ...override } as typeof options),
      (error: unknown) => {
        ok(error instanceof TypeError);
        const fields = error as OptionError;
        deepStrictEqual({ option: fields.option, rule: fields.rule }, {
          option,
          rule,
        });
        return true;
      },
    );
  }
  equal(api.tokenRequests, 0);
});

Deno.test("requestToken() gets a new token each time", async () => {
  await using api = await startFakePartnerApi();
  const options = { ...api.environment, ...api.credentials };
  const [a, b] = [await requestToken(options), await requestToken(options)];
  notEqual(a.accessToken, b.accessToken);
  equal(api.tokenRequests, 2);
});

Deno.test("a quotaHeader no Headers takes, or a now that does not read epoch ms, is refused by requestToken, the provider and the client before any request (each call spent a token, then failed)", async () => {
  await using api = await startFakePartnerApi();
  const base = { ...api.environment, ...api.credentials };
  const bad: [Record<string, unknown>, string][] = [
    [{ quotaHeader: "Quota Limit" }, "quotaHeader"],
    [{ quotaHeader: "x\nInjected: 1" }, "quotaHeader"],
    [{ now: () => new Date() }, "now"],
    [{ now: () => NaN }, "now"],
    [{ now: () => "1764600000000" }, "now"],
  ];
  for (const [options, option] of bad) {
    await rejects(requestToken({ ...base, ...options } as never), {
      name: "TypeError",
      option,
    });
    throws(() => createTokenProvider({ ...base, ...options } as never), {
      name: "TypeError",
      option,
    });
  }
  for (const [options, option] of bad.filter(([, name]) => name === "now")) {
    const environment = api.environment;
    throws(
      () =>
        createClient({ ...api.credentials, environment, ...options } as never),
      {
        name: "TypeError",
        option,
      },
    );
  }
  equal(api.tokenRequests, 0);
});
