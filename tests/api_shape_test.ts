// Issue 17, the public API before 1.0: one vocabulary on provider, client
// and requestToken; failure kinds as fields; HTTP Basic client
// authentication. Against loopback servers and the fake.

import {
  deepStrictEqual,
  equal,
  ok,
  rejects,
  throws,
} from "node:assert/strict";
import {
  ApiError,
  PartnerApiError,
  TokenRequestError,
} from "../src/core/errors.ts";
import { createClient } from "../src/client/mod.ts";
import { createTokenProvider, requestToken } from "../src/token/mod.ts";
import { defineEnvironment } from "../src/core/environment.ts";
import { parseQuotaHeader } from "../src/core/quota.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import type { OptionError } from "../src/core/_check.ts";

/** A token endpoint that accepts HTTP Basic only, as some OAuth servers do. */
function basicOnlyServer(clientId: string, secret: string) {
  const seen: { authorization: string | null; body: string }[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const body = await request.text();
      const authorization = request.headers.get("authorization");
      seen.push({ authorization, body });
      const [id, key] = atob(authorization?.replace(/^Basic /, "") ?? "")
        .split(":")
        .map((part) => decodeURIComponent(part.replaceAll("+", " ")));
      if (id !== clientId || key !== secret || body.includes("client_secret")) {
        return Response.json({ error: "invalid_client" }, { status: 401 });
      }
      return Response.json({
        access_token: "basic-token",
        expires_in: 3600,
        token_type: "Bearer",
      });
    },
  );
  return {
    tokenUrl: `http://127.0.0.1:${server.addr.port}/oauth/token`,
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test("clientAuthentication 'basic' sends HTTP Basic, form-encoded first, and no secret in the body", async () => {
  const clientId = "client:with colon";
  const secret = "s3cr3t+/ä";
  await using server = basicOnlyServer(clientId, secret);
  const options = {
    tokenUrl: server.tokenUrl,
    audience: "https://partner-api.test",
    clientId,
    clientSecret: secret,
  };
  await rejects(requestToken(options), { reason: "status", status: 401 });
  const token = await requestToken({
    ...options,
    clientAuthentication: "basic",
  });
  equal(token.accessToken, "basic-token");
  const sent = server.seen.at(-1)!;
  ok(!sent.body.includes("client_id"), sent.body);
  deepStrictEqual(JSON.parse(sent.body), {
    audience: "https://partner-api.test",
    grant_type: "client_credentials",
  });
  throws(
    () =>
      createTokenProvider({
        ...options,
        clientAuthentication: "digest" as "basic",
      }),
    { name: "TypeError", option: "clientAuthentication" },
  );
});

Deno.test("a client that makes its own provider passes every provider option on", async () => {
  await using api = await startFakePartnerApi();
  await using server = basicOnlyServer(
    api.credentials.clientId,
    api.credentials.clientSecret,
  );
  const environment = defineEnvironment({
    ...api.environment,
    tokenUrl: server.tokenUrl,
  });
  const client = createClient({
    environment,
    ...api.credentials,
    clientAuthentication: "basic",
    bodyFormat: "form",
  });
  const token = await client.tokenProvider.getToken();
  equal(token.accessToken, "basic-token");
  equal(
    server.seen.at(-1)!.body,
    "audience=https%3A%2F%2Fpartner-api.fake&grant_type=client_credentials",
  );
});

Deno.test("options of 0.1 that were renamed, and provider options beside a provider, are refused by name", async () => {
  await using api = await startFakePartnerApi();
  const tokenProvider = createTokenProvider({
    environment: api.environment,
    ...api.credentials,
  });
  const environment = api.environment;
  for (
    const [options, option] of [
      [{ requestTimeout: 1000 }, "requestTimeout"],
      [{ maxRetryAfter: 1000 }, "maxRetryAfter"],
      [{ bodyFormat: "form" }, "bodyFormat"],
    ] as const
  ) {
    throws(
      () => createClient({ environment, tokenProvider, ...options } as never),
      { name: "TypeError", option },
    );
  }
  throws(
    () =>
      createTokenProvider({
        environment,
        tokenUrl: environment.tokenUrl,
        ...api.credentials,
      }),
    { name: "TypeError", option: "environment" },
  );
  equal(api.tokenRequests, 0);
});

Deno.test("ApiError says its reason and how many requests it took", async () => {
  await using api = await startFakePartnerApi();
  const retry = { retries: 2, initialDelay: 0, maxDelay: 0 };
  const closed = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(),
  );
  await closed.shutdown(); // nothing listens there any more
  const nowhere = createClient({
    environment: defineEnvironment({
      ...api.environment,
      baseUrl: `http://127.0.0.1:${closed.addr.port}/api/`,
    }),
    ...api.credentials,
    retry,
  });
  await rejects(nowhere.fetch("organizations"), (error: unknown) => {
    ok(error instanceof ApiError && error instanceof PartnerApiError);
    equal(error.reason, "network");
    equal(error.status, 0);
    equal(error.attempts, 3);
    return true;
  });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    retry,
  });
  api.injectApiFaults({ kind: "status", status: 500 }, {
    kind: "body",
    body: "not json",
  });
  const pages = client.list("organizations");
  await rejects(pages.next(), (error: unknown) => {
    ok(error instanceof ApiError);
    equal(error.reason, "malformed");
    equal(error.status, 200);
    equal(error.attempts, 2, "one 500 retried, then the bad page");
    return true;
  });
  ok(
    new TokenRequestError("x", { status: 400 }) instanceof PartnerApiError,
    "one base for every failure of the service",
  );
});

Deno.test("a client's environment that breaks defineEnvironment's rules is refused by its field and rule, as defineEnvironment refuses it", async () => {
  await using api = await startFakePartnerApi();
  const cases = [
    [{ baseUrl: new URL("http://api.example.com/api/") }, "baseUrl"],
    [{ audience: "" }, "audience"],
    [{ tokenUrl: new URL("http://idp.example/token") }, "tokenUrl"],
  ] as const;
  for (const [broken, field] of cases) {
    const environment = { ...api.environment, ...broken };
    let own: OptionError | undefined;
    try {
      defineEnvironment(environment);
    } catch (error) {
      own = error as OptionError;
    }
    ok(own, field);
    throws(() => createClient({ ...api.credentials, environment }), {
      name: "TypeError",
      option: `environment.${field}`,
      rule: own?.rule,
    });
  }
  equal(api.tokenRequests, 0);
});

Deno.test("a refusal shows at most 200 characters of the value it refused: a value of a million characters made a message of a million (errors.md: at most 2,000)", async () => {
  const huge = "a".repeat(1_000_000);
  const refusals = [
    () => defineEnvironment({ baseUrl: `http://${huge}/api/` } as never),
    () => parseQuotaHeader(`b=${huge}`),
    () =>
      requestToken({
        tokenUrl: `ftp://${huge}`,
        audience: "a",
        clientId: "c",
        clientSecret: "s",
      }),
  ];
  for (const refuse of refusals) {
    let message = "";
    try {
      await refuse();
    } catch (error) {
      message = (error as Error).message;
    }
    ok(message.length > 0 && message.length <= 2000, `${message.length}`);
  }
});

Deno.test("a signal that is no AbortSignal is refused by client.fetch and requestToken as by list, pages and getToken (TypeError, option 'signal'), before any request: it was the runtime's own TypeError, naming no option", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const signal = {} as AbortSignal;
  for (
    const refused of [
      client.fetch("organizations", { signal }),
      client.pciFetch("cards/1", { signal }),
      requestToken({ ...api.environment, ...api.credentials, signal }),
    ]
  ) {
    await rejects(refused, { name: "TypeError", option: "signal" });
  }
  equal(api.tokenRequests + api.apiRequests, 0);
});
