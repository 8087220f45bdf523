// Answers as Node's fetch (undici) hands them over: it keeps the reason phrase
// a server sent (UTF-8, controls) and header names Deno's Headers refuses (a
// space in one). A user's `fetch` here gives a loopback server's answer those
// properties, as a Node process gets it; the module copies answers into its
// errors, and a copy that threw lost the refusal's meaning (r168b F7, F8).

import { equal, ok, rejects } from "node:assert/strict";
import { createTokenProvider } from "../src/token/mod.ts";
import { createClient } from "../src/client/mod.ts";
import {
  ApiError,
  QuotaExceededError,
  TokenRequestError,
} from "../src/core/errors.ts";
import { loopbackApi, loopbackTokenEndpoint } from "./_loopback_api.ts";

/** `response` as undici hands it over: `reason` as its phrase, and a header whose name holds a space. */
function asNodeGivesIt(response: Response, reason: string): Response {
  const own = response.headers;
  const entries = [...own, ["x-odd name", "1"]];
  const headers = {
    get: (name: string) => own.get(name),
    has: (name: string) => own.has(name),
    [Symbol.iterator]: () => entries[Symbol.iterator](),
  };
  Object.defineProperty(response, "statusText", { value: reason });
  Object.defineProperty(response, "headers", { value: headers });
  return response;
}

const REASONS = ["Zu viele Anfragen – bitte später", "bad\x01", "\xa0"];

Deno.test("a token endpoint's 429 or 401 whose reason phrase or header names Response and Headers refuse is still that refusal: a QuotaExceededError that blocks, a TokenRequestError that cools down; one request for three calls (r168b F8: a bare TypeError each, and a request each call)", async () => {
  for (const reason of REASONS) {
    for (const status of [429, 401]) {
      let requests = 0;
      await using endpoint = loopbackTokenEndpoint(() => {
        requests++;
        return new Response("{}", {
          status,
          headers: {
            "retry-after": "3000",
            "idp-client-quota-limit": "b=per_hour;q=10;r=0;t=3000",
          },
        });
      });
      const provider = createTokenProvider({
        ...endpoint.options,
        clientId: "partner-client-11",
        clientSecret: "s3cr3t-node-answer-1",
        retry: false,
        fetch: async (input, init) =>
          asNodeGivesIt(await fetch(input, init), reason),
      });
      const kind = status === 429 ? QuotaExceededError : TokenRequestError;
      for (let call = 0; call < 3; call++) {
        await rejects(provider.getToken(), kind);
      }
      equal(requests, 1, `${status} ${JSON.stringify(reason)}`);
    }
  }
});

Deno.test("an API answer of 404 whose reason phrase or header names Response and Headers refuse is an ApiError of 404 sent once, not a network failure retried (r168b F7)", async () => {
  for (const reason of REASONS) {
    let requests = 0;
    await using api = loopbackApi("AT-node-1", () => {
      requests++;
      return new Response("no such list", { status: 404 });
    });
    const client = createClient({
      environment: api.environment,
      clientId: "partner-client-12",
      clientSecret: "s3cr3t-node-answer-2",
      rateLimit: false,
      fetch: async (input, init) =>
        asNodeGivesIt(await fetch(input, init), reason),
    });
    const error = await client.list("organizations").next().then(
      () => undefined,
      (error: unknown) => error,
    );
    ok(error instanceof ApiError, String(error));
    equal(error.status, 404);
    equal(requests, 1);
  }
});
