// Issue 38, secrets and text: what a server sends in a response header
// reaches an error's `response` cleaned like its body (a credential or the
// access token redacted, also in Deno.inspect with hidden properties), and
// a quota bucket's name reaches events, `provider.quota` and errors with
// every control character escaped, C1 (U+009B, a terminal's CSI) as well
// as C0. In process: the fetch option answers, no socket.

import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import { createClient } from "../src/client/mod.ts";
import { ApiError, TokenRequestError } from "../src/core/errors.ts";
import type { PartnerApiEvent } from "../src/core/events.ts";
import { createTokenProvider, requestToken } from "../src/token/mod.ts";
import { besideFake, inProcessFake } from "./_fast_setup.ts";

const SECRET = "s3cr3t-0123456789-abcdef";
const TARGET = {
  tokenUrl: "https://idp.example.com/oauth/token",
  audience: "https://api.example.com/",
  clientId: "client-0123456789",
  clientSecret: SECRET,
};

/** A token endpoint answering `status` with `headers`, as the fetch option. */
function answering(status: number, headers: Record<string, string>) {
  const body = status === 200
    ? {
      access_token: "issued-token-0123456789",
      expires_in: 3600,
      token_type: "Bearer",
    }
    : { error: "invalid_client" };
  return () =>
    Promise.resolve(
      new Response(JSON.stringify(body), {
        status,
        headers: { "content-type": "application/json", ...headers },
      }),
    );
}

Deno.test("headers: a client secret a token endpoint echoes in a response header is redacted in error.response, and in Deno.inspect(error, { showHidden: true })", async () => {
  for (const status of [401, 429, 503]) {
    const error = await requestToken({
      ...TARGET,
      fetch: answering(status, {
        "x-echo": `client_secret=${SECRET}`,
        "x-encoded": encodeURIComponent(`${TARGET.clientId}:${SECRET}`),
        "retry-after": "7",
      }),
    }).catch((error: unknown) => error);
    ok(error instanceof TokenRequestError, String(error));
    const { response } = error;
    equal(response?.status, status);
    equal(response?.headers.get("retry-after"), "7", "kept: not a secret");
    for (const name of ["x-echo", "x-encoded"]) {
      ok(!response?.headers.get(name)?.includes(SECRET), `${status} ${name}`);
    }
    equal(response?.headers.get("x-echo"), "client_secret=[client_secret]");
    const shown = Deno.inspect(error, { showHidden: true, depth: 10 });
    ok(shown.includes("x-echo"), "the header is shown, cleaned");
    ok(!shown.includes(SECRET), `${status}: the secret in a hidden property`);
  }
});

Deno.test("headers: the access token a list page echoes in a response header is redacted in ApiError.response", async () => {
  using fake = inProcessFake();
  const api = besideFake(fake, (request) =>
    new Response("not here", {
      status: 404,
      headers: {
        "x-seen-authorization": request.headers.get("authorization")!,
      },
    }));
  const client = createClient({
    environment: api.environment,
    ...fake.credentials,
    fetch: api.fetch,
  });
  const token = (await client.tokenProvider.getToken()).accessToken;
  await rejects(client.list("transactions").next(), (error: unknown) => {
    ok(error instanceof ApiError);
    equal(error.response?.status, 404);
    equal(
      error.response?.headers.get("x-seen-authorization"),
      "Bearer [redacted]",
    );
    ok(!Deno.inspect(error, { showHidden: true, depth: 10 }).includes(token));
    return true;
  });
});

Deno.test("headers: each response header on a token or API error is cut to 1,000 characters like a body, after redaction", async () => {
  const long = "h".repeat(10_000);
  const late = `${"p".repeat(990)}${SECRET}${"q".repeat(5_000)}`; // the secret across the cut
  const check = (headers: Headers | undefined) => {
    const kept = headers?.get("x-long") ?? "";
    ok(
      kept.length <= 1_000 && kept.startsWith("h".repeat(990)),
      `${kept.length}`,
    );
    const echoed = headers?.get("x-late") ?? "";
    ok(
      echoed.length <= 1_000 && echoed.startsWith("p".repeat(990)),
      `${echoed.length}`,
    );
    ok(!echoed.includes(SECRET.slice(0, 5)), echoed.slice(990));
  };
  const error = await requestToken({
    ...TARGET,
    fetch: answering(401, { "x-long": long, "x-late": late }),
  }).catch((error: unknown) => error);
  ok(error instanceof TokenRequestError, String(error));
  check(error.response?.headers);
  using fake = inProcessFake({ credentials: { clientSecret: SECRET } });
  const api = besideFake(fake, () =>
    new Response("not here", {
      status: 404,
      headers: { "x-long": long, "x-late": late },
    }));
  const client = createClient({
    environment: api.environment,
    ...fake.credentials,
    fetch: api.fetch,
  });
  await rejects(client.list("transactions").next(), (error: unknown) => {
    ok(error instanceof ApiError);
    check(error.response?.headers);
    return true;
  });
});

Deno.test("C1 controls: a quota bucket named with U+009B (and C0 controls) reaches token.request events, provider.quota and IssuedToken.quota escaped as \\uXXXX", async () => {
  const events: PartnerApiEvent[] = [];
  const provider = createTokenProvider({
    ...TARGET,
    fetch: answering(200, {
      "Idp-Client-Quota-Limit":
        "b=per\u009bhour\u001b[2J;q=10;r=9;t=60,b=per_day;q=50;r=49;t=600",
    }),
    onEvent: (event) => events.push(event),
  });
  const token = await provider.getToken();
  const names = ["per\\u009bhour\\u001b[2J", "per_day"];
  const event = events.find((event) => event.type === "token.request");
  deepStrictEqual(
    event?.type === "token.request" && event.quota?.map((b) => b.bucket),
    names,
  );
  deepStrictEqual(provider.quota?.buckets.map((b) => b.bucket), names);
  deepStrictEqual(token.quota.map((b) => b.bucket), names);
  // deno-lint-ignore no-control-regex
  ok(!/[\u0000-\u001f\u007f-\u009f]/.test(JSON.stringify(events)));
});
