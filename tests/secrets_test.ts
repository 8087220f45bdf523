// Nothing the module produces may show the client secret or an access token.

import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import { inspect } from "node:util";
import {
  createTokenProvider,
  type IssuedToken,
  requestToken,
} from "../src/token/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { TokenRequestError } from "../src/core/errors.ts";

/**
 * A token request to a loopback server that answers every request with
 * `body` and `status`; the server is gone once the request has settled.
 */
async function answeredWith(
  body: unknown,
  status: number,
  clientSecret: string,
  clientId: string,
): Promise<IssuedToken> {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => Response.json(body, { status }),
  );
  return await requestToken({
    tokenUrl: `http://127.0.0.1:${server.addr.port}/token`,
    audience: "https://partner-api.test",
    clientId,
    clientSecret,
  });
}

/** Every way a value can end up in a log, a report or an assertion diff. */
function renderings(value: unknown): string[] {
  const shown = [
    Deno.inspect(value, { depth: 10, showHidden: false }),
    inspect(value, { depth: 10 }),
    String(value),
    JSON.stringify(value) ?? "",
  ];
  if (value instanceof Error) {
    shown.push(value.stack ?? "", ...renderings(value.cause));
    shown.push(JSON.stringify(Object.entries(value)));
  }
  try {
    deepStrictEqual(value, { never: "equal" });
  } catch (diff) {
    shown.push((diff as Error).message);
  }
  return shown;
}

function assertClean(value: unknown, secrets: readonly string[]): void {
  for (const text of renderings(value)) {
    for (const secret of secrets) {
      ok(!text.includes(secret), `leaked in: ${text.slice(0, 200)}`);
    }
  }
}

Deno.test("errors, providers and tokens never show the secret or a token", async () => {
  await using api = await startFakePartnerApi({ quota: { perHour: 2 } });
  const secret = api.credentials.clientSecret;
  const options = { ...api.environment, ...api.credentials };
  const provider = createTokenProvider({ ...options, retry: false });
  const token = await provider.getToken();
  const secrets = [secret, token.accessToken];
  assertClean(provider, secrets);
  assertClean(provider.quota, secrets);
  assertClean(Deno.inspect(token), secrets);

  const failures: unknown[] = [];
  const collect = (promise: Promise<unknown>) =>
    rejects(promise.catch((error) => {
      failures.push(error);
      throw error;
    }));
  // A server that echoes what it was sent must not get it into an error.
  api.injectTokenFaults(
    {
      kind: "body",
      status: 400,
      body: JSON.stringify({
        error: "invalid_request",
        error_description: `bad secret ${secret}`,
      }),
    },
    {
      kind: "body",
      body: JSON.stringify({
        access_token: "t",
        token_type: "mac",
        expires_in: 1,
      }),
    },
    { kind: "drop" },
    { kind: "status", status: 503 },
  );
  for (let i = 0; i < 4; i++) await collect(requestToken(options));
  await collect(requestToken({ ...options, clientSecret: `${secret}x` }));
  await requestToken(options);
  await collect(requestToken(options)); // 429
  await provider.invalidate();
  await collect(provider.getToken()); // quota circuit
  await collect(
    requestToken({ ...options, tokenUrl: `http://example.com/${secret}` }),
  );
  ok(failures.length === 8);
  for (const failure of failures) assertClean(failure, secrets);
});

Deno.test("server text in a token error is cleaned, capped and free of the secret in any encoding", async () => {
  const secret = 's3cr3t/with spaces&"quotes"+plus';
  const forms = [
    secret,
    JSON.stringify(secret).slice(1, -1),
    encodeURIComponent(secret),
    encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
    new URLSearchParams({ s: secret }).toString().slice(2),
  ];
  const osc52 = "\u001b]52;c;cGF5bG9hZA==\u0007";
  // A server that echoes what it was sent, in every encoding, at length.
  await rejects(
    answeredWith(
      {
        error: `bad\r\n${secret}`,
        error_description: `${osc52} you sent ${forms.join(" | ")} ${
          "blah ".repeat(1000)
        }`,
      },
      400,
      secret,
      "client",
    ),
    (error: unknown) => {
      ok(error instanceof TokenRequestError);
      for (
        const text of [error.description ?? "", error.code ?? "", error.message]
      ) {
        ok(text.length <= 2_100, `${text.length} characters`);
        // deno-lint-ignore no-control-regex
        ok(!/[\u0000-\u001f\u007f]/.test(text), "no control characters");
        for (const form of forms) ok(!text.includes(form), `leaked ${form}`);
      }
      ok((error.description?.length ?? 0) <= 1_000);
      ok(error.description?.includes("you sent [redacted] | [redacted]"));
      return true;
    },
  );
});

Deno.test("a secret pasted into the token URL never reaches a message", async () => {
  const closed = await startFakePartnerApi();
  const secret = closed.credentials.clientSecret;
  const base = closed.environment.tokenUrl;
  await closed.close();
  const tokenUrl = `${base}?client_secret=${encodeURIComponent(secret)}`;
  await rejects(
    requestToken({
      ...closed.environment,
      ...closed.credentials,
      tokenUrl,
      timeout: 1000,
    }),
    (error: unknown) => {
      ok(error instanceof TokenRequestError);
      equal(error.reason, "network");
      assertClean(error, [secret, encodeURIComponent(secret)]);
      return true;
    },
  );
});

Deno.test("a server echoing the secret in any form, control characters included, never gets it into an error", async () => {
  const clientId = "client";
  const secret = "s3cr3t<from>&'a file\"\n"; // read with its trailing newline
  const b64 = (text: string) =>
    btoa(String.fromCharCode(...new TextEncoder().encode(text)));
  const spaced = secret.replace("\n", " ");
  const forms = [
    secret,
    secret.trim(),
    spaced,
    JSON.stringify(secret).slice(1, -1),
    encodeURIComponent(secret),
    encodeURIComponent(encodeURIComponent(secret)),
    new URLSearchParams({ s: secret }).toString().slice(2),
    secret.trim().replaceAll("&", "&amp;").replaceAll("<", "&lt;")
      .replaceAll(">", "&gt;").replaceAll('"', "&quot;").replaceAll(
        "'",
        "&#39;",
      ),
    b64(secret),
    b64(secret).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, ""),
    b64(`${clientId}:${secret}`),
    b64(
      `${clientId}:${new URLSearchParams({ s: secret }).toString().slice(2)}`,
    ),
  ];
  for (const form of forms) {
    await rejects(
      answeredWith(
        {
          error: "invalid_client",
          error_description: `you sent ${form}.`,
        },
        401,
        secret,
        clientId,
      ),
      (error: unknown) => {
        ok(error instanceof TokenRequestError);
        equal(error.code, "invalid_client");
        const shown = renderings(error).join("\n");
        ok(!shown.includes(form), `leaked ${JSON.stringify(form)}`);
        for (let at = 0; at + 12 <= spaced.length; at++) {
          ok(!shown.includes(spaced.slice(at, at + 12)), "a run of the secret");
        }
        return true;
      },
    );
  }
});

Deno.test("a server text holding a long run of the secret is dropped whole", async () => {
  const secret = "0123456789abcdefghijklmnop";
  // The secret cut in two by a character nobody would think of redacting.
  const mangled = `${secret.slice(0, 13)}\u200b${secret.slice(13)}`;
  await rejects(
    answeredWith(
      {
        error: "invalid_client",
        error_description: `you sent ${mangled}`,
      },
      401,
      secret,
      "client",
    ),
    (error: unknown) => {
      ok(error instanceof TokenRequestError);
      ok(!error.description?.includes("0123456789ab"), error.description);
      ok(!error.message.includes("0123456789ab"));
      return true;
    },
  );
});
