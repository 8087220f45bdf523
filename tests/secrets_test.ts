// Nothing the module produces may show the client secret or an access token.

import { deepStrictEqual, ok, rejects } from "node:assert/strict";
import { inspect } from "node:util";
import { createTokenProvider, requestToken } from "../src/token.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";

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
