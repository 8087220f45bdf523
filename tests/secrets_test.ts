// Nothing the module produces may show the client secret or an access token.

import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import { inspect } from "node:util";
import {
  createTokenProvider,
  type IssuedToken,
  requestToken,
} from "../src/token/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { ApiError, TokenRequestError } from "../src/core/errors.ts";
import { createClient } from "../src/client/mod.ts";
import { defineEnvironment } from "../src/core/environment.ts";
import fc from "fast-check";
import { redact, redactInPlace, serverText } from "../src/core/_redact.ts";
import { configFromEnv } from "../mod.ts";
import { runs } from "./_property_runs.ts";
import { loopbackApi, loopbackTokenEndpoint } from "./_loopback_api.ts";
import {
  createSqliteSink,
  SyncError,
  syncList,
  type SyncSink,
} from "../src/sync/mod.ts";
import { memorySink } from "./_sync_fake.ts";

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

/** Whether `secret` is anywhere `value` leads: every field, hidden, symbol-keyed and prototype getters too, nested. */
function reaches(value: unknown, secret: string, seen = new Set()): boolean {
  if (typeof value === "string") return value.includes(secret);
  if (typeof value === "symbol") return reaches(value.description, secret);
  if (typeof value === "bigint") {
    const hex = value.toString(16);
    const bytes = hex.match(/../g)!.map((pair) => parseInt(pair, 16));
    return new TextDecoder().decode(new Uint8Array(bytes)).includes(secret);
  }
  if (Object(value) !== value || seen.has(value)) return false;
  seen.add(value);
  if (value instanceof Headers || value instanceof Map) {
    return reaches([...value], secret, seen);
  }
  const keys = new Set<PropertyKey>(["message", "stack", "cause", "init"]);
  for (let at = value; at && at !== Object.prototype;) {
    for (const key of Reflect.ownKeys(at)) keys.add(key);
    at = Object.getPrototypeOf(at);
  }
  const target = value as Record<PropertyKey, unknown>;
  return [...keys].some((key) => {
    if (reaches(key, secret)) return true; // a field named by the body
    try {
      return reaches(target[key], secret, seen);
    } catch {
      return false; // a getter that throws shows nothing
    }
  });
}

/** The request's body and Authorization header as one text. */
function shown(init: unknown): string {
  const { body, headers } = init as RequestInit;
  return `${body} ${new Headers(headers).get("authorization")}`;
}

/** `text`'s bytes as the digits of one bigint. */
function bytesOf(text: string): bigint {
  const hex = [...new TextEncoder().encode(text)].map((byte) =>
    byte.toString(16).padStart(2, "0")
  );
  return BigInt(`0x${hex.join("")}`);
}

/** An error of a wrapper's own class that keeps the request behind a getter of its prototype. */
class KeptRequestError extends Error {
  readonly #init: unknown;
  constructor(init: unknown) {
    super("fetch failed");
    this.#init = init;
  }
  get options() {
    return this.#init;
  }
}

Deno.test("a fetch wrapper's error keeping its request (body, Authorization header) leads to neither secret nor token", async () => {
  await using api = await startFakePartnerApi();
  const { environment, credentials } = api;
  // As ofetch's FetchError (a hidden getter), a field (symbol-keyed too), a plain object thrown, a Map in an array, an
  // AggregateError's error, a class's getter over a private field, a null prototype, a Proxy, a message object, a symbol, a field named by it.
  const keeping = [
    (init: unknown) =>
      Object.defineProperty(new TypeError("fetch failed"), "options", {
        get: () => init,
      }),
    (init: unknown) => Object.assign(new TypeError("failed"), { init }),
    (init: unknown) => ({ init }),
    (init: unknown) =>
      Object.assign(new TypeError("failed"), { [Symbol("request")]: init }),
    (init: unknown) =>
      Object.assign(new TypeError("failed"), { tries: [new Map([[1, init]])] }),
    (init: unknown) =>
      new AggregateError([Object.assign(new Error("a"), { init })], "all"),
    (init: unknown) => new KeptRequestError(init),
    (init: unknown) => Object.assign(Object.create(null), { init }),
    (init: unknown) =>
      new Proxy(new TypeError("failed"), {
        get: (_, key) => key === "init" ? init : undefined,
      }),
    (init: unknown) =>
      Object.assign(new TypeError(), {
        message: { toString: () => "x", init },
      }),
    (init: unknown) => Symbol(shown(init)),
    (init: unknown) => bytesOf(shown(init)),
    (init: unknown) =>
      Object.assign(new TypeError("x"), { errno: bytesOf(shown(init)) }),
    (init: unknown) => Object.assign(new TypeError("x"), { [shown(init)]: 1 }),
  ];
  for (const keep of keeping) {
    const failing = (_: unknown, init?: RequestInit) =>
      Promise.reject(keep(init));
    const token = requestToken({
      ...environment,
      ...credentials,
      fetch: failing,
    });
    const tokenError = await token.catch((error) => error);
    ok(tokenError instanceof TokenRequestError);
    equal(reaches(tokenError, credentials.clientSecret), false);
    let sent = "";
    const fetch = (input: Request | URL | string, init?: RequestInit) => {
      if (String(input).endsWith("/oauth/token")) {
        return globalThis.fetch(input, init);
      }
      sent = new Headers(init?.headers).get("authorization")!.slice(7);
      return failing(input, init);
    };
    const client = createClient({
      environment,
      ...credentials,
      fetch,
      retry: false,
    });
    const apiError = await client.fetch("organizations").catch((error) =>
      error
    );
    ok(apiError instanceof ApiError && sent.length > 20);
    equal(reaches(apiError, sent), false);
  }
  // A cause that holds none is copied as it reads: its class, name, message, code.
  const refused = Object.assign(new TypeError("fetch failed"), {
    code: "ECONNREFUSED",
    url: new URL("https://partner.example/oauth/token"),
  });
  const fetch = () => Promise.reject(refused);
  const error = await requestToken({
    ...environment,
    ...credentials,
    fetch,
  }).catch((error) => error);
  ok(error.cause instanceof TypeError && error.cause !== refused);
  deepStrictEqual(
    { ...error.cause, message: error.cause.message },
    { name: "TypeError", message: "fetch failed", code: "ECONNREFUSED" },
  );
});

Deno.test("the config configFromEnv reads shows no secret when logged or serialized, and a spread of it passes the secret on", () => {
  const secret = "a-client-secret-of-the-service-0123456789";
  const config = configFromEnv({
    PARTNER_API_BASE_URL: "https://api.example/api/",
    PARTNER_API_PCI_BASE_URL: "https://pci.example/api/",
    PARTNER_API_TOKEN_URL: "https://id.example/oauth/token",
    PARTNER_API_AUDIENCE: "https://partner-api.example",
    PARTNER_API_CLIENT_ID: "client-of-the-service",
    PARTNER_API_CLIENT_SECRET: secret,
  });
  // Not an assertion diff, which shows every enumerable field as it is: the
  // secret must stay one, for a spread to carry it.
  const logged = [
    Deno.inspect(config),
    inspect(config),
    JSON.stringify(config),
  ];
  for (const text of logged) ok(!text.includes(secret), text);
  equal(config.clientSecret, secret);
  equal({ ...config }.clientSecret, secret); // how createClient gets it
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
      ok(
        error.description?.includes(
          "you sent [client_secret] | [client_secret]",
        ),
      );
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

Deno.test("a server text holding a long run of the secret, in any case or in hex, is dropped whole or named", async () => {
  const secret = "0123456789abcdefghijklmnop";
  // The secret cut in two by a character nobody would think of redacting.
  const mangled = `${secret.slice(0, 13)}\u200b${secret.slice(13)}`;
  // A run of it in hex too, in either case: the whole secret's hex is a form, a part of it is not.
  const [partHex, tailHex] = [hex(secret.slice(1, -1)), hex(secret.slice(2))];
  const cases = [
    [mangled, "0123456789ab"],
    [mangled.toUpperCase(), "0123456789ab"],
    [partHex, partHex],
    [tailHex.toUpperCase(), tailHex],
  ];
  for (const [sent, leaked] of cases) {
    await rejects(
      answeredWith(
        { error: "invalid_client", error_description: `you sent ${sent}` },
        401,
        secret,
        "client",
      ),
      (error: unknown) => {
        ok(error instanceof TokenRequestError);
        const [description, message] = [error.description, error.message]
          .map((text) => text?.toLowerCase());
        ok(!description?.includes(leaked!), error.description);
        ok(!message?.includes(leaked!));
        return true;
      },
    );
  }
});

/** Text as UTF-8 bytes, in hex. */
function hex(text: string): string {
  return Array.from(
    new TextEncoder().encode(text),
    (byte) => byte.toString(16).padStart(2, "0"),
  ).join("");
}

function b64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

/** Every form a server may quote a configured value in. */
const FORMS: Record<string, (value: string, clientId: string) => string> = {
  plain: (value) => value,
  upper: (value) => value.toUpperCase(),
  lower: (value) => value.toLowerCase(),
  hex: (value) => hex(value),
  "upper hex": (value) => hex(value).toUpperCase(),
  json: (value) => JSON.stringify(value).slice(1, -1),
  url: (value) => encodeURIComponent(value),
  "url twice": (value) => encodeURIComponent(encodeURIComponent(value)),
  form: (value) => new URLSearchParams({ s: value }).toString().slice(2),
  html: (value) =>
    value.replaceAll("&", "&amp;").replaceAll("<", "&lt;")
      .replaceAll(">", "&gt;").replaceAll('"', "&quot;"),
  base64: (value) => b64(value),
  base64url: (value) =>
    b64(value).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, ""),
  "base64 of id:secret": (value, clientId) => b64(`${clientId}:${value}`),
  // r172b F2–F5: spellings other servers write.
  nfd: (value) => value.normalize("NFD"),
  nfc: (value) => value.normalize("NFC"),
  "json, non-ASCII as \\u (Python)": (value) => asciiJson(value),
  "json of the nfd, non-ASCII as \\u": (value) =>
    asciiJson(value.normalize("NFD")),
  "json, non-ASCII as \\u and / as \\/ (PHP)": (value) =>
    asciiJson(value).replaceAll("/", "\\/"),
  "json, / as \\/": (value) =>
    JSON.stringify(value).slice(1, -1).replaceAll("/", "\\/"),
  "every byte percent-encoded": (value) =>
    hex(value).toUpperCase().replace(/../g, "%$&"),
  "html decimal references": (value) =>
    Array.from(value, (c) => `&#${c.codePointAt(0)};`).join(""),
  "html hex references": (value) =>
    Array.from(value, (c) => `&#X${c.codePointAt(0)!.toString(16)};`).join(""),
  "hex bytes apart": (value) => hex(value).replace(/..(?!$)/g, "$&:"),
};

/**
 * Spellings that escape some characters and not others (r172d F1): no list of forms holds every mix, so a text holding
 * the client secret so is dropped whole once its escapes are undone (the client id and audience are not secrets).
 */
const MIXED_FORMS: Record<string, (value: string) => string> = {
  "non-ASCII only as &#N; (xmlcharrefreplace)": (value) =>
    value.replace(/[\u0080-\u{10ffff}]/gu, (c) => `&#${c.codePointAt(0)};`),
  // As Python writes it: a backslash doubled (undoubled, `\` then `\U…` read as an escaped backslash: a seed's secret
  // holding one came through).
  "Python ascii()": (value) =>
    value.replace(/[\\\u0080-\u{10ffff}]/gu, (c) => {
      if (c === "\\") return "\\\\";
      const n = c.codePointAt(0)!, h = n.toString(16);
      return n <= 0xff
        ? `\\x${h.padStart(2, "0")}`
        : n <= 0xffff
        ? `\\u${h.padStart(4, "0")}`
        : `\\U${h.padStart(8, "0")}`;
    }),
  "JSON in JSON": (value) => JSON.stringify(asciiJson(value)).slice(1, -1),
  "URL-encoded, '/' kept (Python's quote)": (value) =>
    encodeURIComponent(value).replaceAll("%2F", "/"),
};

/** JSON text of `value` with every non-ASCII UTF-16 unit as `\uXXXX` (upper-case hex). */
function asciiJson(value: string): string {
  return JSON.stringify(value).slice(1, -1).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`,
  );
}

// CI seeds of the property below: a secret's own backslash before a character written NFD, in Python's ascii()
// (`\\\U00011099\U000110ba`), and before a character past U+FFFF, as JSON in JSON writes it (seed 1094758722:
// `\\\\\\uD800\\uDC00`). Read with a run of backslashes as one, the secret's own backslash went with the escape.
Deno.test("a secret holding a backslash before an escaped character, in Python's ascii() of its NFD form or as JSON in JSON, is dropped", () => {
  const seeds: [string, string][] = [
    ["Python ascii()", "  \\\u{11099}\u{110ba}   !"],
    ["JSON in JSON", "  !\u{10000}  \\\u{10000}"],
  ];
  for (const [form, secret] of seeds) {
    const quoted = MIXED_FORMS[form]!(secret);
    const credentials = { secret, clientId: "partner-9", audience: "api" };
    const shown = serverText(`you sent: ${quoted} (bad)`, [credentials]);
    ok(!shown.includes(quoted), `${form}: ${shown}`);
  }
});

Deno.test("a secret or token ending in a capital sigma, one character escaped, is dropped whole: its lower case does not hang on what follows it (r230a F1: 595 of 3,000 were shown)", () => {
  for (const value of ["abcdefgΣ", "abcdefghijΣ", "GOEXXLAA0CΣ"]) {
    const escaped = `x\\u0061${value.slice(1)}y`.replace(
      "\\u0061",
      `\\u${value.charCodeAt(0).toString(16).padStart(4, "0")}`,
    );
    const credentials = { secret: value, clientId: "cid" };
    for (const secrets of [[value], [credentials]]) {
      equal(
        serverText(escaped, secrets),
        "[redacted]",
        `${value} in ${escaped}`,
      );
    }
  }
});

Deno.test("a token holding the client id or secret is hidden whole, whichever order the secrets come in: the tokens are redacted first (r230a F2: 40 characters of it were shown around [client_id])", () => {
  const credentials = { secret: "s3cr3t-value-xyz", clientId: "client-12345" };
  for (const inside of [credentials.clientId, credentials.secret]) {
    const token = `AAAAAAAAAAAAAAAAAAAA${inside}BBBBBBBBBBBBBBBBBBBB`;
    for (const secrets of [[token, credentials], [credentials, token]]) {
      equal(redact(`value ${token}`, secrets), "value [redacted]");
      equal(serverText(`v ${token}`, secrets), "v [redacted]");
    }
  }
});

Deno.test("every configured credential (client secret, client id, audience) is replaced by its name in server text, in every form", () => {
  // Values never shorter than the redaction minimum, and never part of a name.
  const value = fc.string({ minLength: 8, maxLength: 40, unit: "grapheme" })
    .filter((text) =>
      text.trim().length >= 8 &&
      !"[client_secret][client_id][audience]".includes(text)
    );
  // Each run tries every form of every value: readying a credentials object
  // for redaction costs the most, and is done once for all 39 of them.
  fc.assert(
    fc.property(value, value, value, (secret, clientId, audience) => {
      const credentials = { secret, clientId, audience };
      for (const which of ["secret", "clientId", "audience"] as const) {
        const forms = which === "secret" ? { ...FORMS, ...MIXED_FORMS } : FORMS;
        for (const [form, quote] of Object.entries(forms)) {
          const quoted = quote(credentials[which], clientId);
          const shown = serverText(`you sent: ${quoted} (bad)`, [credentials]);
          ok(!shown.includes(quoted), `${form} of ${which}: ${shown}`);
          if (which === "secret") {
            ok(!shown.includes(secret), `${form}: ${shown}`);
          }
        }
      }
    }),
    { numRuns: runs(20, 500) },
  );
});

Deno.test("a whole request body echoed in base64 is replaced by the name of the credential it holds", () => {
  const credentials = {
    secret: "Zx9-very-secret-value-123",
    clientId: "client-12345",
    audience: "https://partner-api.test",
  };
  const body = JSON.stringify({
    client_id: credentials.clientId,
    client_secret: credentials.secret,
    audience: credentials.audience,
    grant_type: "client_credentials",
  });
  const form = new URLSearchParams({
    grant_type: "client_credentials",
    client_secret: credentials.secret,
  }).toString();
  for (const echoed of [b64(body), b64(form), b64(body).replace(/=+$/, "")]) {
    equal(
      serverText(`could not parse ${echoed}.`, [credentials]),
      "could not parse [client_secret].",
    );
  }
});

Deno.test("client ids and audiences shorter than 8 characters are not redacted: a short value would go everywhere", () => {
  const credentials = {
    secret: "s3cr3t-long-enough",
    clientId: "abc",
    audience: "api",
  };
  equal(
    serverText("the api for abc is down", [credentials]),
    "the api for abc is down",
  );
});

Deno.test("a secret pasted into the audience or the client id is never shown when the IdP quotes it back (Auth0, Azure AD)", async () => {
  const pasted = "Zx9-very-secret-value-123";
  const cases = [
    {
      variable: "audience",
      status: 403,
      body: (value: string) => ({
        error: "access_denied",
        error_description: `Service not found: ${value}`,
      }),
    },
    {
      variable: "clientId",
      status: 400,
      body: (value: string) => ({
        error: "unauthorized_client",
        error_description:
          `AADSTS700016: Application with identifier '${value}' was not found in the directory 'partner'.`,
      }),
    },
  ] as const;
  for (const { variable, status, body } of cases) {
    for (const [form, quote] of Object.entries(FORMS)) {
      const quoted = quote(pasted, "client-12345");
      await using server = Deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen() {} },
        () => Response.json(body(quoted), { status }),
      );
      const error = await requestToken({
        tokenUrl: `http://127.0.0.1:${server.addr.port}/token`,
        audience: "https://partner-api.test",
        clientId: "client-12345",
        clientSecret: "the-real-secret-value",
        [variable]: pasted,
      }).then(() => undefined, (error) => error);
      ok(error instanceof TokenRequestError, form);
      equal(error.status, status);
      assertClean(error, [pasted, quoted]);
      if (form === "plain") {
        ok(
          error.description?.includes(
            variable === "audience" ? "[audience]" : "[client_id]",
          ),
          error.description,
        );
      }
    }
  }
});

Deno.test("a list answer echoing the client's credentials (the secret, the id, base64 of both), given to it or to its provider, never gets them into an ApiError: its message, its excerpt or its response's headers", async () => {
  const clientId = "partner-client-7";
  const clientSecret = "s3cr3t-list-echo-9f2";
  const b64 = (text: string) => btoa(text);
  const echoed = `${clientSecret} ${b64(clientSecret)} ${
    b64(`${clientId}:${clientSecret}`)
  } ${clientId}`;
  await using api = loopbackApi(
    "AT-list-1",
    () =>
      new Response(`invalid client: ${echoed}`, {
        status: 400,
        headers: { "x-echo": echoed },
      }),
  );
  const { environment } = api;
  const credentials = { environment, clientId, clientSecret };
  // Given the credentials, or a provider made of them.
  for (
    const client of [
      createClient({ ...credentials, rateLimit: false }),
      createClient({
        environment,
        tokenProvider: createTokenProvider(credentials),
        rateLimit: false,
      }),
    ]
  ) {
    const error = await (async () => {
      for await (const _ of client.list("organizations"));
    })().then(() => undefined, (error: unknown) => error);
    ok(error instanceof ApiError, String(error));
    equal(error.status, 400);
    assertClean(error, [
      clientSecret,
      b64(clientSecret),
      clientId,
      "AT-list-1",
    ]);
    assertClean(error.response?.headers.get("x-echo"), [
      clientSecret,
      clientId,
    ]);
  }
});

/** The credentials of the sync runs below, which the service echoes. */
const SYNC_ID = "partner-client-8", SYNC_SECRET = "s3cr3t-sync-echo-4c1";

/** A client of two access tokens: the service refuses the first (401), so a run sends it, renews, and pages with the second. */
function renewedTokens(answer: (tokens: readonly string[]) => Response) {
  const tokens = ["AT-sync-first-0001", "AT-sync-renewed-0002"];
  const sent = new Set<string>();
  let issued = 0;
  const api = loopbackApi(
    () => tokens[Math.min(issued++, 1)]!,
    (request) => {
      sent.add(request.headers.get("authorization")!.slice("Bearer ".length));
      return sent.size === 1
        ? new Response("expired", { status: 401 })
        : answer(tokens);
    },
  );
  const client = createClient({
    environment: api.environment,
    clientId: SYNC_ID,
    clientSecret: SYNC_SECRET,
    rateLimit: false,
  });
  return { api, client, tokens, sent };
}

Deno.test("a list whose item ids echo the client's credentials or the access tokens the run sent (one renewed) never gets them into syncList's SyncError ('unordered' quotes ids): its message, stack or inspection", async () => {
  const { api, client, tokens, sent } = renewedTokens(([first, renewed]) =>
    Response.json([
      { thingID: `z-${SYNC_SECRET} ${first}` },
      { thingID: `a-${btoa(`${SYNC_ID}:${SYNC_SECRET}`)} ${renewed}` },
    ])
  );
  await using _ = api;
  const sink = memorySink();
  const error = await syncList(client, "things", { id: "thingID", sink })
    .then(() => undefined, (error: unknown) => error);
  ok(error instanceof SyncError && error.reason === "unordered", `${error}`);
  deepStrictEqual([...sent], tokens);
  const secrets = [SYNC_SECRET, SYNC_ID, btoa(SYNC_SECRET), ...tokens];
  assertClean(error, secrets);
  assertClean(error.stack, secrets);
});

Deno.test("an error a sink or its driver throws quoting an item that echoes the client's credentials or the access tokens the run sent (one renewed) reaches the caller without them, redacted in place: the same object and class, its message, stack, fields, cause and inspection", async () => {
  const { api, client, tokens, sent } = renewedTokens(([first, renewed]) =>
    Response.json([{
      thingID: "a",
      note: `${SYNC_SECRET} ${first} ${renewed}`,
    }])
  );
  await using _ = api;
  let thrown: TypeError | undefined;
  const sink: SyncSink<unknown> = {
    load: () => Promise.resolve(undefined),
    write(items) {
      // A driver's error: its message, fields and cause quote the item (pg's `detail`, postgres.js's `parameters`).
      const item = JSON.stringify(items[0]);
      const cause = new Error(`driver: cannot store ${item}`);
      thrown = new TypeError(`the sink failed on ${item}`, { cause });
      const fields = { detail: item, parameters: [item] };
      return Promise.reject(Object.assign(thrown, fields));
    },
  };
  const error = await syncList(client, "things", { id: "thingID", sink })
    .then(() => undefined, (error: unknown) => error);
  ok(error === thrown && error instanceof TypeError, `${error}`);
  ok((error as { detail?: string }).detail?.includes('"thingID":"a"'));
  deepStrictEqual([...sent], tokens);
  const secrets = [SYNC_SECRET, SYNC_ID, ...tokens];
  assertClean(error, secrets);
  assertClean(error.stack, secrets);
});

Deno.test("redactInPlace cleans the errors an error holds, each once: an AggregateError's (a DOMException, whose message is its prototype's, among them), a cause chain of any depth, arrays holding themselves", () => {
  const clean = (text: string) => text.replaceAll("s3cret", "[client_secret]");
  let deep: Error = new Error("s3cret at the bottom");
  for (let i = 0; i < 20; i++) deep = new Error(`level ${i}`, { cause: deep });
  const loop: unknown[] = ["s3cret"];
  for (let i = 0; i < 10; i++) loop.push(loop);
  const inner = new DOMException("s3cret in a DOMException", "DataError");
  const error = new AggregateError([inner, deep], "s3cret");
  equal(redactInPlace(error, clean), error);
  redactInPlace(Object.assign(new Error("a loop"), { loop }), clean);
  ok(inner instanceof DOMException && !inner.message.includes("s3cret"));
  assertClean(error, ["s3cret"]);
  for (let at: unknown = deep; at instanceof Error; at = at.cause) {
    assertClean(at.message, ["s3cret"]);
  }
  equal(loop[0], "[client_secret]");
});

Deno.test("ids echoing the client secret or the access tokens the run sent (one renewed), whole or a run of 12 characters, that a sink cannot store are reported skipped without them: the result's skippedIds and the sync.skipped event", async () => {
  // Not well-formed Unicode: skipped. A run is no whole form to redact: such an id is dropped whole, as server text.
  const { api, client, tokens, sent } = renewedTokens((tokens) =>
    Response.json(
      [
        { thingID: "a" },
        ...[SYNC_SECRET, ...tokens].map((echo, i) => ({
          thingID: `u${i}-${echo}\ud800`,
        })),
        ...[SYNC_SECRET, ...tokens].map((echo, i) => ({
          thingID: `v${i}-${echo.slice(1, -1)}\ud800`,
        })),
      ],
    )
  );
  await using _ = api;
  using sink = createSqliteSink(":memory:", { table: "things" });
  const events: unknown[] = [];
  const result = await syncList(client, "things", {
    id: "thingID",
    sink,
    onEvent: (event) => events.push(event),
  });
  equal(result.skipped, 6);
  equal(result.skippedIds.length, 6);
  deepStrictEqual([...sent], tokens);
  const runs = [SYNC_SECRET, ...tokens].map((echo) => echo.slice(1, -1));
  assertClean([result.skippedIds, events], [SYNC_SECRET, ...tokens, ...runs]);
});

Deno.test("a list page answered after a 401's renewal, quoting the token the 401 refused, gets no token into the ApiError (the refused one was shown whole: only the token in use was redacted)", async () => {
  const { api, client, tokens } = renewedTokens((tokens) =>
    new Response(`token ${tokens[0]} was revoked, use ${tokens[1]}`, {
      status: 400,
    })
  );
  await using _ = api;
  const error = await (async () => {
    for await (const _ of client.list("organizations"));
  })().then(() => undefined, (error: unknown) => error);
  ok(error instanceof ApiError, String(error));
  equal(error.status, 400);
  assertClean(error, [...tokens, SYNC_SECRET]);
});

Deno.test("a fetch that fails quoting the token or the client's credentials gets neither into the ApiError's message or cause", async () => {
  const clientSecret = "s3cr3t-fetch-fail-77";
  const token = "AT-fetch-fail-123456";
  const client = createClient({
    environment: defineEnvironment({
      baseUrl: "https://api.partner.test/api/",
      pciBaseUrl: "https://pci.partner.test/api/",
      tokenUrl: "https://idp.partner.test/oauth/token",
      audience: "https://partner-api.test",
    }),
    clientId: "partner-client-8",
    clientSecret,
    rateLimit: false,
    retry: { retries: 0 },
    fetch: (input) =>
      new URL(new Request(input).url).pathname === "/oauth/token"
        ? Promise.resolve(
          Response.json({
            access_token: token,
            token_type: "Bearer",
            expires_in: 3600,
          }),
        )
        : Promise.reject(new TypeError(`refused ${token} ${clientSecret}`)),
  });
  const error = await client.fetch("organizations").then(
    () => undefined,
    (error: unknown) => error,
  );
  ok(error instanceof ApiError, String(error));
  equal(error.reason, "network");
  assertClean(error, [token, clientSecret]);
});

Deno.test("a token endpoint that quotes the token it issued before, when asked for a new one after a 401, gets it into no error: the client's, nor each later getToken's copy of the failure", async () => {
  const token = "AT-issued-first-0123456789abcdef";
  let issued = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      if (new URL(request.url).pathname !== "/token") {
        return new Response("expired", { status: 401 });
      }
      return issued++ === 0
        ? Response.json({
          access_token: token,
          token_type: "Bearer",
          expires_in: 3600,
        })
        : Response.json({
          error: "invalid_request",
          error_description: `${token} is still valid; Bearer ${token}`,
        }, { status: 400 });
    },
  );
  try {
    const at = `http://127.0.0.1:${server.addr.port}`;
    const client = createClient({
      environment: defineEnvironment({
        baseUrl: `${at}/api/`,
        pciBaseUrl: `${at}/pci/`,
        tokenUrl: `${at}/token`,
        audience: "https://partner-api.test",
      }),
      clientId: "partner-client-9",
      clientSecret: "s3cr3t-renewal-echo-42",
      rateLimit: false,
      retry: false,
    });
    const error = await client.fetch("organizations").then(
      () => undefined,
      (error: unknown) => error,
    );
    ok(error instanceof TokenRequestError, String(error));
    const again = await client.tokenProvider.getToken().then(
      () => undefined,
      (error: unknown) => error,
    );
    ok(again instanceof TokenRequestError, String(again));
    equal(issued, 2);
    assertClean([error, again], [token]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a long access token (20,000 characters) or client secret echoed by the service is still redacted: one pattern of all their forms was too large for V8, and the failure's message held them", async () => {
  const token = "tK".repeat(10_000);
  const clientSecret = "sE".repeat(10_000);
  await using api = loopbackApi(token, (request) =>
    Response.json({
      echo: `${request.headers.get("authorization")} ${clientSecret}`,
    }, { status: 400 }));
  const client = createClient({
    environment: api.environment,
    clientId: "long-secret-client",
    clientSecret,
  });
  const failed = await client.list("things").next().catch((error) => error);
  ok(failed instanceof ApiError, String(failed).slice(0, 200));
  assertClean(failed, [token, clientSecret]);
});

Deno.test("a secret pasted into the wrong option, or given as the options or the environment, is not echoed by the refusal (it showed 40 characters, or all of it)", async () => {
  const clientSecret = "Xk9-pasted-secret-Q7rT2mW8vLp3nB6cZ1yH4";
  const runs = [clientSecret.slice(0, 12), clientSecret.slice(-12)];
  const environment = defineEnvironment({
    baseUrl: "https://api.example.com/api/",
    pciBaseUrl: "https://pci.example.com/api/",
    tokenUrl: "https://idp.example.com/oauth/token",
    audience: "https://api.example.com",
  });
  const options = { environment, clientId: "client", clientSecret };
  const { tokenUrl, audience } = environment;
  const bare = { tokenUrl, audience, clientId: "c", clientSecret };
  const refusals: [() => unknown, string][] = [
    [
      () => createClient({ ...options, priority: clientSecret as never }),
      "priority",
    ],
    [
      () =>
        createClient({
          ...options,
          clientAuthentication: clientSecret as never,
        }),
      "clientAuthentication",
    ],
    [
      () => createClient({ ...options, bodyFormat: clientSecret as never }),
      "bodyFormat",
    ],
    [() => createClient(`clientSecret=${clientSecret}` as never), "options"],
    [
      () => createClient({ ...options, environment: clientSecret as never }),
      "environment",
    ],
    [() => requestToken(clientSecret as never), "options"],
    [
      () =>
        requestToken({
          ...bare,
          bodyFormat: clientSecret as never,
        }),
      "bodyFormat",
    ],
    [
      () =>
        createTokenProvider({
          ...bare,
          refreshMargin: clientSecret as never,
        }),
      "refreshMargin",
    ],
    [
      () =>
        createTokenProvider({
          ...bare,
          retry: { maxDelay: clientSecret as never },
        }),
      "maxDelay",
    ],
    // The option's name holds it: not shown, name and all.
    [
      () =>
        createTokenProvider({
          ...bare,
          retry: { [clientSecret]: 1 } as never,
        }),
      "",
    ],
    [
      () =>
        createClient({
          ...options,
          priority: clientSecret.toUpperCase() as never,
        }),
      "priority",
    ],
  ];
  for (const [refuse, option] of refusals) {
    let refused: unknown;
    try {
      await refuse();
    } catch (error) {
      refused = error;
    }
    if (option !== "") equal((refused as { option?: string }).option, option);
    ok(refused instanceof TypeError || refused instanceof RangeError);
    assertClean(refused, [...runs, ...runs.map((run) => run.toUpperCase())]);
  }
});

Deno.test("a client secret of 40,000 non-ASCII characters is redacted where a server repeats it: its forms' patterns were more than V8 compiles, and the SyntaxError held it", async () => {
  const clientSecret = "漢".repeat(40_000);
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      Response.json({ error: "invalid_client", echo: clientSecret }, {
        status: 400,
      }),
  );
  const failed = await requestToken({
    tokenUrl: `http://127.0.0.1:${server.addr.port}/token`,
    audience: "https://partner-api.test",
    clientId: "client-1234",
    clientSecret,
  }).catch((error) => error);
  ok(failed instanceof TokenRequestError, String(failed).slice(0, 200));
  assertClean(failed, [clientSecret.slice(0, 12)]);
});

/** An environment no request reaches (the checks below refuse before any), its audience its own origin as often. */
const OFFLINE_ENVIRONMENT = defineEnvironment({
  baseUrl: "https://partner-api.test/api/",
  pciBaseUrl: "https://partner-api.test/api/",
  tokenUrl: "https://partner-api.test/token",
  audience: "https://partner-api.test",
});

/** A client of the offline environment with `clientSecret`. */
const offlineClient = (clientSecret: string, clientId = "c") =>
  createClient({ environment: OFFLINE_ENVIRONMENT, clientId, clientSecret });

Deno.test("a client's secret pasted into a list option or the path is not echoed by the refusal, whole or cut, which still names the option; its id and audience, a base's words, stay (client.list and client.pages echoed it, as any value: outside reviews r115 P1, r116)", () => {
  const secret = "s3cr3t-Pasted-Into-The-Wrong-Option-" +
    "0123456789".repeat(3);
  const environment = OFFLINE_ENVIRONMENT;
  const client = createClient({
    environment,
    clientId: "transactions",
    clientSecret: secret,
  });
  const misuses: [string, string, object][] = [
    ["limit", "organizations", { limit: secret }],
    ["sortDirection", "organizations", { sortDirection: secret }],
    ["page", "organizations", { page: "x".repeat(50) + secret }],
    ["path", `organizations#${secret}`, {}],
    ["path", `organizations?sortBy=-${"a".repeat(40)}${secret}`, {}],
    ["query.transactions", "organizations", { query: { transactions: 1 } }],
  ];
  for (const [option, path, options] of misuses) {
    for (const walk of [client.list, client.pages]) {
      try {
        walk(path, options);
        ok(false, `${option} was taken`);
      } catch (error) {
        equal((error as { option?: string }).option, option);
        const shown = inspect(error);
        ok(!shown.includes(secret.slice(0, 12)), shown);
      }
    }
  }
});

Deno.test("a client secret holding quotes or backslashes, pasted into a createClient option, is not echoed in its escaped form (the echo escaped it, and the check looked for it as given: r115 P2)", () => {
  const environment = OFFLINE_ENVIRONMENT;
  for (
    const secret of ['ab"cd"ef"gh"ij"kl"mn"op', "ab\\cd\\ef\\gh\\ij\\kl\\mn"]
  ) {
    const escaped = JSON.stringify(secret).slice(1, -1);
    for (const option of ["timeout", "clientAuthentication"]) {
      try {
        createClient({
          environment,
          clientId: "client-id",
          clientSecret: secret,
          [option]: secret,
        });
        ok(false, `${option} was taken`);
      } catch (error) {
        equal((error as { option?: string }).option, option);
        const shown = inspect(error);
        ok(!shown.includes(secret) && !shown.includes(escaped), shown);
      }
    }
  }
});

Deno.test("a client secret echoed percent- or form-encoded in an address's refusal (a '/', a space or an 'é' every few characters) is kept out as the raw one is (outside review r117 F1)", () => {
  const environment = OFFLINE_ENVIRONMENT;
  const secrets = [
    "Zq8X/kP2m+Lw9R/tV4n+Bc7Y/hJ3d+Fg6S/aE1u+Ko5i/Wm0e==",
    "Zq8X kP2m Lw9R tV4n Bc7Y hJ3d Fg6S aE1u Ko5i",
    "Zq8Xé kP2mé Lw9Ré tV4né Bc7Yé hJ3dé Fg6Sé",
  ];
  for (const secret of secrets) {
    const client = offlineClient(secret, "client-id");
    const refusals: [string, () => unknown][] = [
      ["path", () => client.list(`organizations?sortDirection=${secret}`)],
      ["path", () => client.pages(`organizations?sortBy=-x&q=${secret}`)],
      ["path", () => client.list(`organizations#${secret}`)],
      ["path", () => client.list(`https://other.test/${secret}`)],
      ["environment.baseUrl", () =>
        createClient({
          environment: {
            ...environment,
            baseUrl: new URL(`https://partner-api.test/api/?q=${secret}`),
          },
          clientId: "client-id",
          clientSecret: secret,
        })],
    ];
    eachRefusal(refusals, (error) => {
      const shown = inspect(error);
      const decoded = decodeURIComponent(shown.replaceAll("+", " "));
      ok(!decoded.includes(secret.slice(0, 14)), shown);
    });
  }
});

/** Each of `refusals` throws an option error naming its option, which `check` then looks at. */
function eachRefusal(
  refusals: readonly [string, () => unknown][],
  check: (error: unknown) => void,
) {
  for (const [option, refused] of refusals) {
    try {
      refused();
      ok(false, `${option} was taken`);
    } catch (error) {
      equal((error as { option?: string }).option, option);
      check(error);
    }
  }
}

/** Each of `refusals` names its option, the secret in it shown by name only. */
const refusedHidingSecret = (refusals: readonly [string, () => unknown][]) =>
  eachRefusal(refusals, (error) => {
    ok(/\[client_secret\]|not shown/.test(inspect(error)), inspect(error));
  });

Deno.test("a client secret the URL parser or an encoding changes (its own '%41' beside a space, a '\\' read as '/', a tab dropped, a host punycoded, its 'Basic' base64) is kept out of an option's refusal (outside reviews r118 F1, r117 F2)", () => {
  const clientId = "c";
  const secrets = [
    "жЖщЩфФъЪэЭюЮяЯшШ/2024", // a host before its '/', punycoded (r120 F1)
    "Zq8X %41kP2m %41Lw9R %41tV4n %41Bc7Y %41hJ3d",
    "Zq8X %FFkP2m %FFLw9R %FFtV4n %FFBc7Y %FFhJ3d",
    "Zq8X\\kP2m\\Lw9R\\tV4n\\Bc7Y\\hJ3d\\Fg6S",
    "Zq8X\tkP2m\tLw9R\ttV4n\tBc7Y\thJ3d\tFg6S",
    "Zq8XékP2méLw9RétV4néBc7YéhJ3dé",
  ];
  for (const secret of secrets) {
    const client = offlineClient(secret, clientId);
    const pair = new TextEncoder().encode(`${clientId}:${secret}`);
    const basic = `Basic ${btoa(String.fromCharCode(...pair))}`;
    const refusals: [string, () => unknown][] = [
      ["path", () => client.list(`organizations?sortDirection=${secret}`)],
      ["path", () => client.list(`organizations#${secret}`)],
      ["path", () => client.list(`https://other.test/${secret}`)],
      // Echoed up to 200 characters: a 40-character echo holds 11 of a Cyrillic secret's (2 bytes each), under a run.
      ["path", () => client.list(`organizations#${basic}`)],
    ];
    // As a host, where it can be one (the parser punycodes it).
    if (URL.canParse(`https://${secret}.test/x`)) {
      refusals.push(["path", () => client.list(`https://${secret}.test/x`)]);
    }
    refusedHidingSecret(refusals);
  }
});

Deno.test("a client secret's base64 is kept out of an option's refusal as HTTP Basic sends it (its symbols form-encoded first) and percent-encoded in a path's query (a '/' as '%2F'): outside review r119 F1, F3", () => {
  const environment = OFFLINE_ENVIRONMENT;
  const clientId = "client-id-123";
  const secret = "Zq8X!kP2m?Lw9R#tV4n&Bc7Y*hJ3d$Fg6S/Zq?8X?kP";
  const client = createClient({ environment, clientId, clientSecret: secret });
  const form = (text: string) =>
    new URLSearchParams({ s: text }).toString().slice(2);
  const basic = `Basic ${btoa(`${form(clientId)}:${form(secret)}`)}`;
  const refusals: [string, () => unknown][] = [
    ["path", () => client.list(`https://other.test/${basic}`)],
    ["path", () => client.list(`organizations?sortDirection=${btoa(secret)}`)],
    ["limit", () => client.list("organizations", { limit: basic as never })],
  ];
  refusedHidingSecret(refusals);
});

Deno.test("a refusal holding no part of the client secret stays whole, whatever the secret holds ('/', '@', '&', '..'): a piece of it as an address parses it (a host of one letter) is no form of it (outside review r119 F2)", () => {
  const secrets = [
    "R/cxkB6MKn81Sewb099CnFHi1Tup+N4xv5NYeJjH5qY=",
    "ok/7MDENGx9Lq2Wv5Zt8Rb3Yc6Hn",
    "admin:s3cr3t-Pw@api",
    "&Zq8XkP2mLw9RtV4nBc7YhJ3d",
    "../../../../../../../../s",
    "%6f%72%67%61%6e%69",
  ];
  for (const secret of secrets) {
    const client = offlineClient(secret);
    const refusals: [string, () => unknown][] = [
      [
        "query.status",
        () => client.list("organizations", { query: { status: {} as string } }),
      ],
      [
        "path",
        () => client.list("https://partner-api.test/other/organizations"),
      ],
      [
        "sortDirection",
        () => client.list("organizations", { sortDirection: "up" as "ASC" }),
      ],
    ];
    eachRefusal(refusals, (error) => {
      ok(!inspect(error).includes("[client_secret]"), inspect(error));
    });
  }
});

Deno.test("a client secret holding a lone surrogate is redacted as the form encoder sends it, and an option's refusal stays a TypeError naming the option (its redaction threw URIError: outside review r119, side note)", () => {
  const secret = "\uD800abcdefghijklmnop";
  const sent = new URLSearchParams({ s: secret }).toString().slice(2);
  equal(serverText(`echo: ${sent}`, [secret]), "echo: [redacted]");
  try {
    createTokenProvider({
      clientId: "c",
      clientSecret: secret,
      environment: {
        ...OFFLINE_ENVIRONMENT,
        tokenUrl: new URL("http://x.test/t"),
      },
    });
    ok(false, "the token URL was taken");
  } catch (error) {
    ok(error instanceof TypeError, String(error));
    equal((error as { option?: string }).option, "tokenUrl");
  }
});

Deno.test("a client secret pasted into a client.fetch or pciFetch path is not echoed by its refusal (outside the base, a '..' segment, an address the parser refuses), which still names 'path' (only list and pages hid it: outside review r122 N1)", async () => {
  const secret = "Zq8XkP2mLw9RtV4nBc7YhJ3dFg6SaE1u";
  const client = createClient({
    environment: OFFLINE_ENVIRONMENT,
    clientId: "c",
    clientSecret: secret,
  });
  const paths = [
    `https://other.test/${secret}`,
    `x/../${secret}`,
    `https://a b/${secret}`,
  ];
  for (const path of paths) {
    for (const fetch of [client.fetch, client.pciFetch]) {
      await rejects(fetch(path), (error: Error & { option?: string }) => {
        equal(error.option, "path");
        ok(!inspect(error).includes(secret.slice(0, 12)), inspect(error));
        return error instanceof TypeError;
      });
    }
  }
});

Deno.test("a piece of the client secret the URL parser reads as a host (its 8 to 11 characters, or an IP it writes anew) hides no refusal holding that host: a base's or a token URL's (outside review r122 F1)", () => {
  for (
    const [secret, host] of [
      ["ops@acme.test/Zq8XkP2m", "acme.test"],
      ["0x7f.1/Zq8XkP2mLw9R", "127.0.0.1"],
    ] as const
  ) {
    const base = new URL(`https://${host}/api/`);
    const environment = defineEnvironment({
      baseUrl: base,
      pciBaseUrl: base,
      tokenUrl: new URL("token", base),
      audience: base.origin,
    });
    const client = createClient({
      environment,
      clientId: "c",
      clientSecret: secret,
    });
    try {
      client.list(`https://${host}/other/organizations`);
      ok(false, "the path was taken");
    } catch (error) {
      equal((error as { option?: string }).option, "path");
      ok(inspect(error).includes(`https://${host}/other`), inspect(error));
    }
  }
});

Deno.test("a client secret pasted into a path that is sent shows in no ApiError of its answer or its failure (a 404 of a list, a fetch that gets no answer), in any form the URL parser gives it ('$' kept, a space encoded): its message and url quoted the address whole (outside reviews r123, r125 F1, older); the client id and a base's words stay, and a secret under 8 characters cuts no word (r125 F3)", async () => {
  for (
    const clientSecret of [
      undefined,
      "Zq8XkP2mLw9R$tV4nBc7YhJ3d Fg6SaE1uKo5i",
      "Zq8XkP2mLw9R)tV4nBc7YhJ3d$Fg6 SaE1uKo5i", // a ')' ended the hidden part (r126 F5)
    ]
  ) {
    await using api = await startFakePartnerApi(
      clientSecret === undefined ? {} : { credentials: { clientSecret } },
    );
    const secret = api.credentials.clientSecret;
    const client = createClient({
      environment: api.environment,
      ...api.credentials,
    });
    const failing = createClient({
      environment: api.environment,
      ...api.credentials,
      retry: false,
      fetch: (input, init) =>
        String(input).includes("/token")
          ? fetch(input, init)
          : Promise.reject(new TypeError("connection refused")),
    });
    const refusals = [
      () => client.list(`organizations/${secret}/notes`).next(),
      () => client.list(`organizations/x:${secret}`).next(), // so did a ':' (r126 F6)
      () => client.list(`reports?note=${secret}`).next(),
      () => failing.fetch(`organizations/${secret}`),
    ];
    for (const refused of refusals) {
      await rejects(refused(), (error: ApiError) => {
        ok(error instanceof ApiError, String(error));
        const shown = inspect(error) + error.url;
        for (let at = 0; at + 12 <= secret.length; at += 3) {
          ok(!shown.includes(secret.slice(at, at + 12)), shown);
        }
        ok(shown.includes(api.environment.baseUrl.host), shown);
        // the hidden path keeps the ':' after it (outside review r127, LOW)
        ok(!error.message.includes("] the partner API's"), error.message);
        return true;
      });
    }
  }
  await using api = await startFakePartnerApi({
    credentials: { clientSecret: "test" },
  });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  await rejects(client.list("reports/test").next(), (error: ApiError) => {
    equal(
      error.url,
      new URL("reports/test?limit=50&page=1", api.environment.baseUrl).href,
    );
    return error.reason === "status";
  });
});

/** A `fetch` that keeps the reason phrase a server sent, as Node's does: here the server's `x-reason` header. */
const reasonKeeping = async (input: RequestInfo | URL, init?: RequestInit) => {
  const response = await fetch(input, init);
  const statusText = response.headers.get("x-reason") ?? "";
  const { status, headers } = response;
  return new Response(response.body, { status, statusText, headers });
};

Deno.test("a reason phrase (statusText) quoting the client secret, kept by the runtime's fetch (Node's does), reaches no error's response: a token error's or an ApiError's (r168b F1: error.response.statusText held it)", async () => {
  const clientId = "partner-client-9", clientSecret = "s3cr3t-reason-5d2";
  for (const status of [400, 429, 500]) {
    await using endpoint = loopbackTokenEndpoint(() =>
      new Response("{}", {
        status,
        headers: { "x-reason": `Bad client_secret=${clientSecret}` },
      })
    );
    const error = await requestToken({
      ...endpoint.options,
      clientId,
      clientSecret,
      fetch: reasonKeeping,
    }).then(() => undefined, (error: unknown) => error);
    ok(error instanceof TokenRequestError, String(error));
    assertClean(inspect(error, { showHidden: true, depth: 10 }), [
      clientSecret,
    ]);
  }
  await using api = loopbackApi(
    "AT-reason-1",
    () =>
      new Response("no", {
        status: 500,
        headers: { "x-reason": `Bad ${clientSecret}` },
      }),
  );
  const client = createClient({
    environment: api.environment,
    clientId,
    clientSecret,
    rateLimit: false,
    retry: false,
    fetch: reasonKeeping,
  });
  const error = await client.list("organizations").next().then(
    () => undefined,
    (error: unknown) => error,
  );
  ok(error instanceof ApiError, String(error));
  assertClean(inspect(error, { showHidden: true, depth: 10 }), [clientSecret]);
});

Deno.test("quota bucket names quoting the client secret or the access token the answer carries (the token endpoint's quota header) reach no event, snapshot, provider field, token or error: each is redacted like other server text (r168b F4: 3 surfaces on a 200, 5 on a 429; r216a F1: the token, on a 200 and a malformed one; r217b F1, r220a F3, r221a F1: its name written with an escape, in a body cut short, nested or quoted too, and a token holding a backslash written as an escape; r222a F2: quoted with \\u0022; r223a F2: quoted twice, or with escapes mixed)", async () => {
  const clientId = "partner-client-10", clientSecret = "s3cr3t-bucket-7e3";
  const accessToken = "tok_AbCdEfGhIjKl0123456789";
  // The token's name as JSON writes it, escaped, and so in a body cut short or nested in another field (r220a F3);
  // a token holding a backslash, and one quoted in an error_description (r221a F1: the value's escapes read twice).
  const forms = [
    "plain",
    "escaped",
    "escaped, cut",
    "escaped, nested",
    "escaped, holding a backslash",
    "escaped, quoted",
    "quoted in \\u0022",
    "quoted twice",
    "quoted, escapes mixed",
  ];
  const answers = ([[200, 3600], [200, 0], [429, 3600]] as const).flatMap((
    [status, expiresIn],
  ) => forms.map((form) => [status, expiresIn, form] as const));
  for (const [status, expiresIn, form] of answers) {
    const token = form.endsWith("backslash")
      ? accessToken.replace("_", "\\")
      : accessToken;
    const fields = {
      access_token: token,
      token_type: "Bearer",
      expires_in: expiresIn,
    };
    let body = JSON.stringify(
      form.endsWith("nested") ? { last: fields } : form.endsWith("twice")
        ? {
          error: "x",
          error_description: JSON.stringify({ sent: JSON.stringify(fields) }),
        }
        : form.includes("quoted")
        ? { error: "x", error_description: JSON.stringify(fields) }
        : fields,
    );
    // One quote as `\u0022`, the others as `\"`: neither undone alone reads the name (r223a F2).
    if (form.endsWith("mixed")) body = body.replace('\\"', "\\u0022");
    if (form.startsWith("escaped")) {
      body = body.replace("access_token", "access\\u005ftoken");
    }
    if (form.endsWith("cut")) body = body.slice(0, -3);
    // Quotes inside a string as some encoders write them (r222a F2).
    if (form.endsWith("u0022")) body = body.replaceAll('\\"', "\\u0022");
    // Its backslash as JSON may write it too: `\u005c`, read once more a `\` before a letter.
    if (form.endsWith("backslash")) body = body.replace("\\\\", "\\u005c");
    await using endpoint = loopbackTokenEndpoint(() =>
      new Response(
        body,
        {
          status,
          headers: {
            "idp-client-quota-limit": [
              clientSecret,
              token,
              `per_${token.slice(4)}`,
            ]
              .map((name) => `b=${name};q=10;r=${status === 200 ? 9 : 0};t=300`)
              .join(","),
          },
        },
      )
    );
    const shown: unknown[] = [];
    const provider = createTokenProvider({
      ...endpoint.options,
      clientId,
      clientSecret,
      onEvent: (event) => shown.push(event),
      onQuota: (snapshot) => shown.push(snapshot),
    });
    shown.push(await provider.getToken().catch((error: unknown) => error));
    shown.push(provider.quota);
    ok(shown.length >= 3, String(shown.length));
    for (const value of shown) {
      const texts = [
        inspect(value, { showHidden: true, depth: 10 }),
        JSON.stringify(value),
      ];
      for (const text of texts) {
        assertClean(text, [clientSecret, accessToken.slice(4)]);
      }
    }
  }
});

Deno.test("an answer holding many token fields hides every one of them, the one it issues and one its error quotes after decoys too (r224a F1: a cap of 8 let decoys push the real one out)", async () => {
  const accessToken = "tok_AbCdEfGhIjKl0123456789";
  const decoys = Array.from(
    { length: 20 },
    (_, i) => ({ id_token: `decoy_${String(i).padStart(7, "0")}` }),
  );
  for (const status of [200, 400]) {
    const body = JSON.stringify({
      x: decoys,
      error: "invalid_grant",
      error_description: `issued ${accessToken}`,
      data: { access_token: accessToken },
      ...(status === 200 && { access_token: accessToken, expires_in: 0 }),
    });
    await using endpoint = loopbackTokenEndpoint(() =>
      new Response(body, {
        status,
        headers: {
          "idp-client-quota-limit": `b=${accessToken};q=10;r=9;t=300`,
          "x-debug": accessToken,
        },
      })
    );
    const error = await requestToken({
      ...endpoint.options,
      clientId: "c",
      clientSecret: "s3cr3t-of-the-client",
    }).then(() => undefined, (error: unknown) => error);
    ok(error instanceof TokenRequestError, String(error));
    const shown = inspect(error, { showHidden: true, depth: 10 });
    assertClean(shown, [accessToken.slice(4)]);
  }
});

Deno.test("a token answer refused or malformed that holds an access token all the same (in its error texts, a header, its base64) gets it into no error: message, code, description, response headers, also cut short, as a refresh or id token, or written as PHP writes it (r172b F1, r172d F3: the token was quoted whole)", async () => {
  const token = "tok_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
  const answers: [number, string][] = [
    [400, `{"error":"invalid_request","error_description":"issued ${token}"`],
    [401, `{"error":"${token}"`],
    [200, `{"expires_in":-1,"token_type":"Bearer"`],
    [200, `{"expires_in":60,"token_type":"mac"`],
    // r172d F3: an answer cut short, a refresh token, a token as PHP writes it.
    [200, `{"expires_in":36`],
    [
      400,
      `{"error":"x","refresh_token":"${token}","error_description":"${token}"`,
    ],
    [400, `{"error":"${token.replaceAll("_", "/")}"`],
  ];
  for (const [status, start] of answers) {
    const said = start.includes("/") ? token.replaceAll("_", "/") : token;
    const field = start.includes("refresh") ? "id_token" : "access_token";
    const body = `${start},"${field}":"${said.replaceAll("/", "\\/")}"` +
      (start.endsWith("36") ? "" : "}");
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () =>
        new Response(body, {
          status,
          headers: { "x-issued": said, "x-issued-b64": btoa(said) },
        }),
    );
    const error = await requestToken({
      tokenUrl: `http://127.0.0.1:${server.addr.port}/token`,
      audience: "https://partner-api.test",
      clientId: "client",
      clientSecret: "s3cr3t-of-the-client",
    }).then(() => undefined, (error: unknown) => error);
    ok(error instanceof TokenRequestError, `${status} ${body}`);
    const headers = [...error.response?.headers ?? []].flat().join(" ");
    assertClean([error, headers], [said, btoa(said)]);
  }
});

Deno.test("settingNames given the client secret in place of a name (the value, not the variable's name) shows it in no hint or message (r172b F6)", async () => {
  const secret = "S3cr3t-Value_0123456789abcdefXYZ";
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => Response.json({ error: "invalid_client" }, { status: 401 }),
  );
  const error = await requestToken({
    tokenUrl: `http://127.0.0.1:${server.addr.port}/token`,
    audience: "https://partner-api.test",
    clientId: "client",
    clientSecret: secret,
    settingNames: { clientSecret: secret, tokenUrl: `${secret}_URL` },
  }).then(() => undefined, (error: unknown) => error);
  ok(error instanceof TokenRequestError);
  ok(error.hint?.includes("[client_secret]"));
  assertClean(error, [secret]);
});
