// Issue 37, friction 4: a token failure says what to check, in a field
// (`hint`) and at the end of its message, by the variables' names when the
// configuration came from configFromEnv, and never shows a credential.

import { equal, match, ok, rejects } from "node:assert/strict";
import { configFromEnv } from "../src/core/config.ts";
import { TokenRequestError } from "../src/core/errors.ts";
import { createClient } from "../src/client/mod.ts";
import { createTokenProvider, requestToken } from "../src/token/mod.ts";
import {
  createFakePartnerService,
  startFakePartnerApi,
} from "../src/testing/mod.ts";
import { configFor } from "./_cli_helpers.ts";

/** The token error `work` rejects with. */
async function tokenError(work: Promise<unknown>): Promise<TokenRequestError> {
  const error = await work.then(() => undefined, (error: unknown) => error);
  ok(error instanceof TokenRequestError, String(error));
  return error;
}

/** No credential in any text of `error`. */
function noCredential(error: TokenRequestError, ...values: string[]) {
  for (const value of values) {
    ok(!error.message.includes(value), "message");
    ok(!(error.hint ?? "").includes(value), "hint");
  }
}

Deno.test("a 401 from configFromEnv's settings names the variables to check", async () => {
  await using api = await startFakePartnerApi();
  const env = {
    ...configFor(api),
    PARTNER_API_CLIENT_SECRET: "wrong-secret-1",
  };
  const client = createClient(configFromEnv(env));
  const error = await tokenError(client.fetch("organizations"));
  equal(error.status, 401);
  equal(
    error.hint,
    "check PARTNER_API_CLIENT_ID, PARTNER_API_CLIENT_SECRET and PARTNER_API_AUDIENCE, and that PARTNER_API_TOKEN_URL is this environment's",
  );
  ok(error.message.endsWith(error.hint!));
  noCredential(error, "wrong-secret-1", api.credentials.clientId);
});

Deno.test("a 401 from options names the options; a spread configuration keeps the variables", async () => {
  await using api = await startFakePartnerApi();
  const bare = await tokenError(requestToken({
    ...api.environment,
    clientId: api.credentials.clientId,
    clientSecret: "wrong-secret-2",
  }));
  match(
    bare.hint!,
    /^check clientId, clientSecret and audience, and that tokenUrl/,
  );
  const spread = createTokenProvider({
    ...configFromEnv({
      ...configFor(api),
      PARTNER_API_CLIENT_SECRET: "wrong-secret-3",
    }),
    refreshMargin: 1000,
  });
  const error = await tokenError(spread.getToken());
  match(error.hint!, /PARTNER_API_CLIENT_SECRET/);
  // The cooldown hands each caller a copy: the hint stays.
  const again = await tokenError(spread.getToken());
  equal(again.hint, error.hint);
  equal(api.tokenRequests, 2);
});

Deno.test("a 404 or 405 from the token endpoint names the URL requested", async () => {
  await using api = await startFakePartnerApi();
  const typo = new URL("/oauth/tokn", api.environment.tokenUrl);
  const notFound = await tokenError(
    requestToken({ ...api.environment, ...api.credentials, tokenUrl: typo }),
  );
  equal(notFound.status, 404);
  equal(
    notFound.hint,
    `nothing takes token requests at POST ${typo.href}: check tokenUrl`,
  );
  const env = { ...configFor(api), PARTNER_API_TOKEN_URL: typo.href };
  const { environment, ...config } = configFromEnv(env);
  const named = await tokenError(requestToken({ ...environment, ...config }));
  match(named.hint!, /check PARTNER_API_TOKEN_URL$/);
});

Deno.test("sandbox settings sent to production's host are suggested as another environment's", async () => {
  // The fake behind a production-looking address (its fetch option), with
  // a sandbox's audience: refused like any wrong credential.
  const service = createFakePartnerService();
  const error = await tokenError(requestToken({
    tokenUrl: "https://idp.partner.example/oauth/token",
    audience: "https://sandbox.partner.example",
    ...service.credentials,
    fetch: (input, init) => service.handle(new Request(input, init)),
  }));
  equal(error.status, 401);
  match(
    error.hint!,
    /audience looks like a sandbox's and tokenUrl like production's: are they from one environment/,
  );
  noCredential(
    error,
    service.credentials.clientSecret,
    "sandbox.partner.example",
  );
});

Deno.test("no answer names the URL and the network; a 5xx has no hint", async () => {
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = closed.addr.port;
  closed.close();
  const error = await tokenError(requestToken({
    tokenUrl: `http://127.0.0.1:${port}/oauth/token`,
    audience: "https://partner-api.fake",
    clientId: "me",
    clientSecret: "s3cret-never-shown",
  }));
  equal(error.reason, "network");
  equal(
    error.hint,
    `check tokenUrl (http://127.0.0.1:${port}/oauth/token) and the network`,
  );
  await using api = await startFakePartnerApi();
  api.injectTokenFaults({ kind: "status", status: 503 });
  const busy = await tokenError(
    requestToken({ ...api.environment, ...api.credentials }),
  );
  equal(busy.hint, undefined);
  await rejects(
    Promise.resolve().then(() =>
      requestToken({
        ...api.environment,
        ...api.credentials,
        settingNames: { clientId: "" },
      })
    ),
    { name: "TypeError", option: "settingNames.clientId" },
  );
});
