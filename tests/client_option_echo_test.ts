// Found by the fix of cdc6924e: a token percent-encoded in part or in full in a list's query key was echoed in the
// refusal's 'query.<key>' (message and `option`): hiddenIn found it, but only an address was replaced, and an
// option's refusal holds none. Every refusal echoing the caller's text (an option's name or value) is checked here,
// and the query value a list sends (the client secret encoded by the caller, then by the URL, was shown in the
// ApiError's address).

import { equal, ok } from "node:assert/strict";
import { createClient } from "../src/client/mod.ts";
import { ApiError } from "../src/core/errors.ts";
import { loopbackApi } from "./_loopback_api.ts";

const SECRET = "EchoSecretVALUE-0123456789abcdef";
const TOKEN = "EchoTok0VALUEabcdef0xyz";

const hex = (text: string) =>
  [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
    .join("").toUpperCase();
const ENCODINGS: Record<string, (value: string) => string> = {
  verbatim: (value) => value,
  "percent-encoded in part": (value) =>
    value.slice(0, 5) + hex(value[5]!) + value.slice(6),
  "percent-encoded in full": hex,
  base64: (value) => btoa(value),
};

type Call = (client: ReturnType<typeof createClient>, x: string) => unknown;
/** Each entry point that echoes the caller's text, and the option its refusal names (undefined: an ApiError). */
const ENTRIES: [string, Call, string | undefined][] = [
  [
    "list's query key",
    (c, x) => c.list("list/x", { query: { [x]: 5 as never } }).next(),
    "query.",
  ],
  [
    "pages' query key",
    (c, x) => c.pages("list/x", { query: { [x]: 5 as never } }).next(),
    "query.",
  ],
  [
    "list's query value, sent",
    (c, x) => c.list("items/x", { query: { k: x } }).next(),
    undefined,
  ],
  [
    "paginate's sortBy",
    (c, x) => c.list("list/x", { sortBy: `-${x}` }).next(),
    "sortBy",
  ],
  [
    "paginate's sortDirection",
    (c, x) => c.list("list/x", { sortDirection: x as never }).next(),
    "sortDirection",
  ],
  [
    "paginate's limit",
    (c, x) => c.pages("list/x", { limit: x as never }).next(),
    "limit",
  ],
  [
    "paginate's priority",
    (c, x) => c.list("list/x", { priority: x as never }).next(),
    "priority",
  ],
  [
    "fetch's init priority",
    (c, x) => c.fetch("items/x", { priority: x as never }),
    "priority",
  ],
  [
    "fetch's init header name",
    (c, x) => c.fetch("items/x", { headers: { [`${x} y`]: "v" } }),
    "init",
  ],
  [
    "fetch's init mode",
    (c, x) => c.fetch("items/x", { mode: x as never }),
    "init",
  ],
];

/** The texts `shown` may hold a value in: as is, percent-decoded up to three times, and its base64 runs decoded. */
function readings(shown: string): string[] {
  const texts = [shown];
  for (let i = 0; i < 3; i++) {
    texts.push(texts.at(-1)!.replace(/(%[0-9a-f]{2})+/gi, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    }));
  }
  const runs = texts.join(" ").match(/[A-Za-z0-9+/_-]{8,}/g) ?? [];
  for (const run of runs) {
    const text = run.replaceAll("-", "+").replaceAll("_", "/");
    for (let skip = 0; skip < 4; skip++) {
      const aligned = text.slice(skip);
      try {
        // A last group of one character holds no byte: left off.
        texts.push(
          atob(
            aligned.slice(
              0,
              aligned.length - (aligned.length % 4 === 1 ? 1 : 0),
            ),
          ),
        );
      } catch { /* not base64 at this alignment */ }
    }
  }
  return texts;
}

/** Whether `shown` holds 12 consecutive characters of `value` in a form {@linkcode readings} reads. */
function holdsRun(shown: string, value: string): boolean {
  const texts = readings(shown);
  for (let at = 0; at + 12 <= value.length; at++) {
    const run = value.slice(at, at + 12);
    if (texts.some((text) => text.includes(run))) return true;
  }
  return false;
}

Deno.test("a refusal echoing the caller's text (list's query key, paginate's options, fetch's init) and a list's sent query show neither the token nor the client secret, verbatim, percent-encoded in part or in full, or base64, and its option is named with what the project names", async () => {
  await using api = loopbackApi(
    TOKEN,
    (request) =>
      new URL(request.url).pathname.includes("/list/")
        ? Response.json([])
        : new Response("no", { status: 404 }),
  );
  const client = createClient({
    environment: api.environment,
    clientId: "cid-cid-cid",
    clientSecret: SECRET,
    retry: false,
  });
  await (await client.fetch("list/warm")).body?.cancel(); // TOKEN, sent
  let checked = 0;
  for (const value of [TOKEN, SECRET]) {
    for (const [encoding, encode] of Object.entries(ENCODINGS)) {
      for (const [entry, call, option] of ENTRIES) {
        const what = `${entry}, ${encoding} ${
          value === TOKEN ? "token" : "secret"
        }`;
        const error = await Promise.resolve().then(() =>
          call(client, encode(value))
        )
          .then((taken) => taken, (refused) => refused);
        if (option === undefined) ok(error instanceof ApiError, what);
        else {
          ok(error instanceof TypeError, what);
          const named = (error as { option?: unknown }).option;
          ok(typeof named === "string", what);
          // The project's part of a query key's name is kept: `query.[not shown]`, or `query.[redacted]`.
          if (option === "query.") {
            ok(
              /^query\.\[(not shown|redacted)\]$/.test(named),
              `${what}: ${named}`,
            );
          } else equal(named, option, what);
        }
        const err = error as Error;
        const shown = [
          err.message,
          String((error as { option?: unknown }).option),
          String(err.cause),
          Deno.inspect(error, { showHidden: true, depth: 9 }),
        ].join("\n");
        equal(
          holdsRun(shown, value),
          false,
          `${what}: ${shown.split("\n")[0]}`,
        );
        checked++;
      }
    }
  }
  equal(checked, 2 * 4 * ENTRIES.length);
});
