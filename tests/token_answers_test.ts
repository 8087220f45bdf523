// The token endpoint's answers, processed as every token request processes
// them (src/token/_protocol.ts: tokenAttempt sends, reads the body within
// its deadline, then calls processTokenAnswer): synchronous over a read
// body, so each answer shape is driven here without a server.

import {
  deepStrictEqual,
  equal,
  notEqual,
  ok,
  throws,
} from "node:assert/strict";
import fc from "fast-check";
import { QuotaExceededError, TokenRequestError } from "../src/core/errors.ts";
import { tokenEndpoint } from "../src/token/_endpoint.ts";
import { processTokenAnswer } from "../src/token/_protocol.ts";
import { requestToken } from "../src/token/mod.ts";
import { runs } from "./_property_runs.ts";

const SECRET = "s3cr3t-0123456789-abcdefgh";
const NOW = Date.UTC(2026, 10, 28, 10, 0);
const endpoint = tokenEndpoint({
  tokenUrl: "https://idp.example.com/oauth/token",
  clientId: "client-7",
  clientSecret: SECRET,
  audience: "https://api.example.com",
  now: () => NOW,
}, "Cannot request token");

/** `text` as the body of an answer with `status` and `headers`. */
function answer(
  status: number,
  text: string,
  headers: Record<string, string> = {},
) {
  const response = new Response(null, { status, headers });
  return () => processTokenAnswer(endpoint, response, text, NOW - 50);
}

Deno.test("a good answer is a token dated from when the request was sent, with the quota it reports", () => {
  const token = answer(
    200,
    JSON.stringify({
      access_token: "tok-1",
      expires_in: 86_400,
      token_type: "Bearer",
    }),
    { "idp-client-quota-limit": "b=per_hour;q=10;r=7;t=3540" },
  )();
  equal(token.accessToken, "tok-1");
  equal(token.expiresIn, 86_400);
  equal(token.expiresAt, NOW - 50 + 86_400_000);
  deepStrictEqual(token.quota.map(({ remaining }) => remaining), [7]);
  // expires_in as a string of digits, or absent (an hour); any case of bearer.
  const lenient = answer(
    200,
    JSON.stringify({
      access_token: "t",
      expires_in: "3599",
      token_type: "bearer",
    }),
  )();
  equal(lenient.expiresIn, 3599);
  equal(
    answer(200, JSON.stringify({ access_token: "t", token_type: "Bearer" }))()
      .expiresIn,
    3600,
  );
});

Deno.test("a refusal is the error it means: 429 a QuotaExceededError, another status or a malformed 2xx a TokenRequestError", () => {
  throws(
    answer(
      429,
      JSON.stringify({
        error: "too_many_requests",
        error_description: "Client quota exceeded",
      }),
      { "idp-client-quota-limit": "b=per_hour;q=10;r=0;t=1200" },
    ),
    (error: unknown) => {
      ok(error instanceof QuotaExceededError);
      equal(error.retryAt, NOW + 1_200_000);
      return true;
    },
  );
  throws(
    answer(401, JSON.stringify({ error: "access_denied" })),
    (error: unknown) => {
      ok(error instanceof TokenRequestError);
      equal(error.reason, "status");
      equal(error.code, "access_denied");
      notEqual(error.hint, undefined);
      return true;
    },
  );
  for (
    const body of [
      "not json",
      JSON.stringify({ expires_in: 60, token_type: "Bearer" }),
      JSON.stringify({
        access_token: "t",
        expires_in: 0,
        token_type: "Bearer",
      }),
      JSON.stringify({ access_token: "t", expires_in: 60, token_type: "mac" }),
    ]
  ) {
    throws(answer(200, body), (error: unknown) => {
      ok(error instanceof TokenRequestError);
      equal(error.reason, "malformed", body);
      return true;
    });
  }
});

Deno.test("any answer: a token only from a 2xx, else a TokenRequestError (a QuotaExceededError exactly for 429), and never the secret", () => {
  const text = fc.oneof(
    fc.string(),
    fc.record({
      access_token: fc.oneof(fc.string(), fc.constant("tok"), fc.integer()),
      expires_in: fc.oneof(fc.integer(), fc.string(), fc.constant(undefined)),
      token_type: fc.constantFrom("Bearer", "bearer", "mac", 7),
      error: fc.oneof(fc.string(), fc.constant(SECRET)),
      error_description: fc.oneof(
        fc.string(),
        fc.constant(`bad secret ${SECRET}`),
        fc.constant(encodeURIComponent(`client-7:${SECRET}`)),
      ),
    }, { requiredKeys: [] }).map((body) => JSON.stringify(body)),
  );
  const quota = fc.oneof(
    fc.constant(undefined),
    fc.string(),
    fc.constant("b=per_hour;q=10;r=0;t=60"),
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 200, max: 599 }),
      text,
      quota,
      (status, body, header) => {
        const headers: Record<string, string> = header === undefined
          ? {}
          : { "idp-client-quota-limit": header.replace(/[^\x20-\x7e]/g, "") };
        let result: unknown;
        try {
          result = answer(status, body, headers)();
        } catch (error) {
          ok(error instanceof TokenRequestError, String(error));
          equal(error instanceof QuotaExceededError, status === 429);
          const shown = `${error.message} ${JSON.stringify(error)} ${
            Deno.inspect(error, { depth: 4 })
          }`;
          ok(!shown.includes(SECRET), shown);
          return;
        }
        ok(status >= 200 && status < 300, `a token from ${status}`);
        ok((result as { expiresIn: number }).expiresIn >= 1);
      },
    ),
    { numRuns: runs(200, 5_000) },
  );
});

Deno.test("requestToken takes this path: each answer it is given ends as processTokenAnswer says", async () => {
  const answers: [number, string, Record<string, string>][] = [
    [200, JSON.stringify({ access_token: "t", expires_in: 60 }), {}],
    [401, JSON.stringify({ error: "access_denied" }), {}],
    [429, "{}", { "idp-client-quota-limit": "b=per_hour;q=1;r=0;t=60" }],
    [200, "not json", {}],
  ];
  const outcome = (run: () => unknown) => {
    try {
      const token = run() as { accessToken: string; expiresIn: number };
      return { token: token.accessToken, expiresIn: token.expiresIn };
    } catch (error) {
      return {
        error: (error as Error).name,
        reason: (error as TokenRequestError).reason,
      };
    }
  };
  for (const [status, text, headers] of answers) {
    const direct = outcome(answer(status, text, headers));
    let sent: unknown;
    try {
      const token = await requestToken({
        tokenUrl: "https://idp.example.com/oauth/token",
        clientId: "client-7",
        clientSecret: SECRET,
        audience: "https://api.example.com",
        now: () => NOW,
        fetch: () => Promise.resolve(new Response(text, { status, headers })),
      });
      sent = { token: token.accessToken, expiresIn: token.expiresIn };
    } catch (error) {
      sent = {
        error: (error as Error).name,
        reason: (error as TokenRequestError).reason,
      };
    }
    deepStrictEqual(sent, direct, `${status} ${text}`);
  }
});
