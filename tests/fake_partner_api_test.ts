import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import { parseQuotaHeader, QUOTA_HEADER } from "../src/core/quota.ts";
import {
  type FakePartnerApi,
  startFakePartnerApi,
} from "../src/testing/mod.ts";
import { requestToken } from "../src/token/mod.ts";
import { manualClock } from "./_helpers.ts";
import { inProcess } from "./_sync_fake.ts";

/** The body a correct client sends to the fake's token endpoint. */
function tokenBody(api: FakePartnerApi) {
  return {
    client_id: api.credentials.clientId,
    client_secret: api.credentials.clientSecret,
    audience: api.environment.audience,
    grant_type: "client_credentials",
  };
}

async function post(
  url: URL,
  body: unknown,
  contentType = "application/json",
): Promise<
  { status: number; body: Record<string, unknown>; quota: string | null }
> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": contentType },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return {
    status: response.status,
    body: await response.json(),
    quota: response.headers.get(QUOTA_HEADER),
  };
}

Deno.test("startFakePartnerApi() serves a loopback environment and frozen credentials", async () => {
  await using api = await startFakePartnerApi();
  equal(api.environment.baseUrl.hostname, "127.0.0.1");
  ok(api.environment.baseUrl.pathname.endsWith("/api/"));
  ok(Object.isFrozen(api.credentials));
  deepStrictEqual(Object.keys(api.credentials), ["clientId", "clientSecret"]);
  equal(api.tokenRequests, 0);
});

/** Token requests the service refuses, with the status and OAuth error each gets. */
function refusedTokenRequests(
  url: URL,
  good: ReturnType<typeof tokenBody>,
): [string, () => ReturnType<typeof post>, number, string][] {
  return [
    [
      "a form body",
      () => post(url, "a=b", "application/x-www-form-urlencoded"),
      400,
      "invalid_request",
    ],
    ["broken JSON", () => post(url, "{"), 400, "invalid_request"],
    ["a JSON array", () => post(url, []), 400, "invalid_request"],
    [
      "an extra field",
      () => post(url, { ...good, scope: "x" }),
      400,
      "invalid_request",
    ],
    [
      "a missing field",
      () => post(url, { ...good, audience: undefined }),
      400,
      "invalid_request",
    ],
    [
      "another grant type",
      () => post(url, { ...good, grant_type: "password" }),
      400,
      "invalid_request",
    ],
    [
      "a wrong secret",
      () => post(url, { ...good, client_secret: "no" }),
      401,
      "access_denied",
    ],
    [
      "a wrong client",
      () => post(url, { ...good, client_id: "no" }),
      401,
      "access_denied",
    ],
    [
      "a wrong audience",
      () => post(url, { ...good, audience: "no" }),
      401,
      "access_denied",
    ],
  ];
}

Deno.test("the fake's token endpoint validates the request like the service", async (t) => {
  await using api = await startFakePartnerApi();
  const good = tokenBody(api);
  const url = api.environment.tokenUrl;
  const cases = refusedTokenRequests(url, good);
  for (const [name, send, status, error] of cases) {
    await t.step(`${name} gets ${status} ${error}`, async () => {
      const answer = await send();
      equal(answer.status, status);
      equal(answer.body.error, error);
      ok(
        parseQuotaHeader(answer.quota).length === 2,
        "quota header on every answer",
      );
    });
  }
  await t.step("GET gets 405", async () => {
    const response = await fetch(url);
    equal(response.status, 405);
    await response.body?.cancel();
  });
  const answer = await post(url, good);
  equal(answer.status, 200);
  equal(answer.body.token_type, "Bearer");
  equal(answer.body.expires_in, 86400);
  ok(api.isValidToken(String(answer.body.access_token)));
  equal(api.tokenRequests, cases.length + 2);
  equal(api.tokensIssued, 1);
});

Deno.test("the fake counts quota per UTC hour and day and answers 429 past it", async () => {
  const clock = manualClock(Date.UTC(2026, 10, 21, 10, 59, 30));
  await using api = await startFakePartnerApi({
    quota: { perHour: 2, perDay: 3 },
    now: clock,
    retryAfter: true,
  });
  const good = tokenBody(api);
  const url = api.environment.tokenUrl;
  equal(
    (await post(url, good)).quota,
    "b=per_hour;q=2;r=1;t=30,b=per_day;q=3;r=2;t=46830",
  );
  equal(
    (await post(url, good)).quota,
    "b=per_hour;q=2;r=0;t=30,b=per_day;q=3;r=1;t=46830",
  );
  const refused = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(good),
  });
  equal(refused.status, 429);
  equal(refused.headers.get("retry-after"), "30");
  deepStrictEqual(await refused.json(), {
    error: "too_many_requests",
    error_description: "Client quota exceeded",
  });
  clock.advance(30_000);
  equal((await post(url, good)).status, 200);
  equal(
    (await post(url, good)).quota,
    "b=per_hour;q=2;r=1;t=3600,b=per_day;q=3;r=0;t=46800",
  );
  equal(api.tokensIssued, 3);
  equal(api.tokenRequests, 5);
});

Deno.test("the fake's tokens expire on its clock and can be revoked", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({
    tokenLifetime: 60_000,
    now: clock,
  });
  const answer = await post(api.environment.tokenUrl, tokenBody(api));
  const token = String(answer.body.access_token);
  clock.advance(59_999);
  ok(api.isValidToken(token));
  clock.advance(1);
  ok(!api.isValidToken(token));
  clock.set(0);
  ok(api.isValidToken(token));
  api.revokeTokens();
  ok(!api.isValidToken(token));
  ok(!api.isValidToken("never issued"));
});

Deno.test("a fake token of a lifetime under 1 s is valid the 1 s its expires_in says (never refused earlier, as DESIGN's service)", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({
    tokenLifetime: 500,
    now: clock,
  });
  const answer = await post(api.environment.tokenUrl, tokenBody(api));
  equal(answer.body.expires_in, 1);
  clock.advance(999);
  ok(api.isValidToken(String(answer.body.access_token)));
  clock.advance(1);
  ok(!api.isValidToken(String(answer.body.access_token)));
});

Deno.test("startFakePartnerApi() refuses bad options", async () => {
  await rejects(startFakePartnerApi({ tokenLifetime: 0 }), RangeError);
  await rejects(startFakePartnerApi({ quota: { perHour: -1 } }), RangeError);
  await rejects(startFakePartnerApi({ tokenLifetime: 1.5 }), RangeError);
});

// The resource sanitizer fails these when the first server stays up (it hung the process).
Deno.test("startFakePartnerApi() refusing its PCI port leaves no server running", async () => {
  await rejects(startFakePartnerApi({ pciPort: -1 }), { option: "pciPort" });
  await using taken = await startFakePartnerApi();
  const pciPort = Number(new URL(taken.environment.pciBaseUrl).port);
  await rejects(startFakePartnerApi({ pciPort }), Deno.errors.AddrInUse);
});

Deno.test("close() can be called twice and answers 404 elsewhere before it", async () => {
  const api = await startFakePartnerApi();
  const response = await fetch(new URL("/nowhere", api.environment.baseUrl));
  equal(response.status, 404);
  await response.body?.cancel();
  await api.close();
  await api.close();
});

Deno.test("the fake dates a new transaction after every one it held, the newest removed since too: new items come last (a new one dated before a removed newest one sorted behind a copy's newest row, and the sweep refused its first page: deep sweep property, seed 10)", async () => {
  const { service, client } = inProcess({ items: { transactions: 0 } });
  type Row = { transactionID: string; creationDate: string };
  const dated = async () => {
    const rows = await Array.fromAsync(client.list<Row>("transactions"));
    return new Map(rows.map((row) => [row.transactionID, row.creationDate]));
  };
  service.insertTransactions(3); // dated a second apart, ahead of the clock
  const [newest, date] = [...await dated()].sort(([, a], [, b]) =>
    a < b ? 1 : -1
  )[0]!;
  service.remove("transactions", newest);
  service.insertTransactions(1);
  const added = [...(await dated()).values()].sort().at(-1)!;
  ok(added > date, `${added} after ${date}`);
});

Deno.test("the fake's 429 names its window as the service words it: '1 second', '2 seconds', '5 minutes' (it said '1 seconds')", async () => {
  const said = [];
  for (const interval of [1000, 2000, 300_000]) {
    await using api = await startFakePartnerApi({
      apiRateLimit: { requests: 2, interval },
    });
    const token = await requestToken({
      ...api.environment,
      ...api.credentials,
    });
    const headers = { authorization: `Bearer ${token.accessToken}` };
    const url = new URL("organizations", api.environment.baseUrl);
    for (let i = 0; i < 2; i++) await (await fetch(url, { headers })).text();
    const refused = await fetch(url, { headers });
    equal(refused.status, 429);
    said.push((await refused.json()).error);
  }
  deepStrictEqual(said, [
    "Sending more than 2 requests in 1 second is not allowed",
    "Sending more than 2 requests in 2 seconds is not allowed",
    "Sending more than 2 requests in 5 minutes is not allowed",
  ]);
});

// r213b F2, F3: a default of 50 past a maxLimit of 10 was refused (400), and a page cut to maxLimit said the limit asked.
Deno.test("the fake's page size: its default within maxLimit, and the envelope's limit the size it served, cut or default", async () => {
  const cases = [
    [{ maxLimit: 10 }, "transactions", 10],
    [{ maxLimit: 3, beyondMaxLimit: "cut" }, "transactions?limit=5&page=2", 3],
    [{}, "transactions", 50],
  ] as const;
  for (const [options, path, limit] of cases) {
    const fake = inProcess({ items: { transactions: 60 }, ...options });
    const answer = await fake.client.fetch(path);
    equal(answer.status, 200, path);
    const body = await answer.json();
    deepStrictEqual([body.limit, body.transactions.length], [limit, limit]);
    fake.service.close();
  }
});

// r213b F6: an API fault answered as the token endpoint does: its quota header, an OAuth error, a token's first bytes.
Deno.test("an injected API fault is shaped as an API answer: no quota header, no OAuth error, no token's bytes", async () => {
  await using api = await startFakePartnerApi();
  const token = await requestToken({ ...api.environment, ...api.credentials });
  const get = () =>
    fetch(new URL("organizations", api.environment.baseUrl), {
      headers: { authorization: `Bearer ${token.accessToken}` },
    });
  api.injectApiFaults({ kind: "status", status: 503 }, { kind: "drop" });
  const failed = await get();
  equal(failed.status, 503);
  equal(failed.headers.get(QUOTA_HEADER), null);
  equal("error_description" in await failed.json(), false);
  const dropped = await get();
  const reader = dropped.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  ok(!first.includes("access_token"), first);
  await rejects(reader.read()); // cut
});
