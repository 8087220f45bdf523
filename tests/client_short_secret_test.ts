// Outside attack r151 F9: the base64 of a client secret of 8 to 11 characters, pasted into an option, was echoed by its
// refusal: base64 runs under 16 characters were not read, and a run's last 2 or 3 characters (a group without padding)
// were dropped, so a 12-character secret's base64 after a byte of its own was missed too.

import { equal, ok, throws } from "node:assert/strict";
import { inspect } from "node:util";
import { createClient } from "../src/client/mod.ts";
import { defineEnvironment } from "../src/core/environment.ts";
import { createTokenProvider, requestToken } from "../src/token/mod.ts";

const environment = defineEnvironment({
  baseUrl: "https://partner-api.test/api/",
  pciBaseUrl: "https://partner-api.test/api/",
  tokenUrl: "https://partner-api.test/token",
  audience: "https://partner-api.test",
});

const base64 = (text: string) => btoa(text);
const base64url = (text: string) =>
  btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");

/** Each option that refuses `value` for a client of `clientSecret`, with the option its refusal names. */
function refusals(clientSecret: string, value: string) {
  const options = { environment, clientId: "client-id", clientSecret };
  const { tokenUrl, audience } = environment;
  const bare = { tokenUrl, audience, clientId: "client-id", clientSecret };
  const client = createClient(options);
  return [
    ["timeout", () => createClient({ ...options, timeout: value as never })],
    ["priority", () => createClient({ ...options, priority: value as never })],
    [
      "refreshMargin",
      () => createTokenProvider({ ...bare, refreshMargin: value as never }),
    ],
    ["bodyFormat", () => requestToken({ ...bare, bodyFormat: value as never })],
    ["limit", () => client.list("organizations", { limit: value as never })],
  ] as const;
}

/** The refusal `refuse` throws or rejects with, checked to name `option`. */
async function refusal(option: string, refuse: () => unknown) {
  let refused: unknown;
  try {
    await refuse();
  } catch (error) {
    refused = error;
  }
  ok(refused instanceof TypeError || refused instanceof RangeError);
  equal((refused as { option?: string }).option, option);
  return `${inspect(refused)} ${(refused as Error).stack}`;
}

Deno.test("the base64 of a client secret of 8 to 12 characters, pasted into an option (as given, base64url, after a byte of another text), is not echoed by its refusal", async () => {
  const secrets = ["Sh0rtS3c", "Sh0rtS3c9", "Sh0rtS3c9x", "Sh0rtS3c9xY"];
  for (const secret of [...secrets, "Sh0rtS3c9xYz"]) {
    const pasted = [
      base64(secret),
      base64url(secret),
      base64(` ${secret}`),
      base64url(`:${secret}`),
    ];
    for (const value of pasted) {
      for (const [option, refuse] of refusals(secret, value)) {
        const shown = await refusal(option, refuse);
        ok(!shown.includes(value), shown);
        ok(!shown.includes(secret), shown);
      }
    }
    // Where the option's name holds it, the refusal goes whole.
    const provider = () =>
      createTokenProvider({
        ...environment,
        clientId: "client-id",
        clientSecret: secret,
        retry: { [base64(secret)]: 1 } as never,
      });
    throws(
      provider,
      (error: Error) => !inspect(error).includes(base64(secret)),
    );
  }
});

Deno.test("a client secret of 7 or 8 characters hides no ordinary value from a refusal: words and base64 of other text stay, and one under 8 characters is not redacted (it would cut every word)", async () => {
  for (const secret of ["Sh0rtS3", "Sh0rtS3c"]) {
    const values = [
      "organizations",
      "transactions-and-cardholders",
      base64("an ordinary value"),
      base64(secret.slice(0, 6)), // a piece of it, under 8 characters
    ];
    if (secret.length < 8) values.push(base64(secret), secret);
    for (const value of values) {
      for (const [option, refuse] of refusals(secret, value)) {
        const shown = await refusal(option, refuse);
        ok(shown.includes(value), shown);
        ok(!/\[client_secret\]|not shown/.test(shown), shown);
      }
    }
  }
});
