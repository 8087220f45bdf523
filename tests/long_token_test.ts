// Attack r153: a token longer than a refusal's echo (cut at 40, 80 or 200 characters: every realistic JWT) was never
// echoed whole, and only a token's whole forms were hidden, its runs only in a text holding a `%`. Its first 40+
// characters showed in a list's sortBy, sortDirection, priority, limit, fetch's init priority, a path refused, a query
// key; a sent path holding a run of it, or split by a `/`, in the api.request and api.list events, the ApiError and a
// page's request.url; a query value the caller encoded twice, in the ApiError and page.request.url, for the secret too.
// syncList's refusals the same, and a token or the secret percent-encoded in an item id in its SyncErrors, skippedIds
// and the sync.skipped event. Each text is now checked for a run of 12 characters of each token the client knows, as
// the secret is.

import { equal, ok } from "node:assert/strict";
import { createClient } from "../src/client/mod.ts";
import { ApiError } from "../src/core/errors.ts";
import {
  createSqliteSink,
  SyncError,
  syncList,
  type SyncOptions,
} from "../src/sync/mod.ts";
import { loopbackApi } from "./_loopback_api.ts";

const SECRET = "LongTokSecretVALUE-0123456789abcdef";
/** A token of `length` characters, no run of 12 of it in another's. */
const tokenOf = (length: number) =>
  (`T${length}` + "QwErTyUiOpAsDfGhJkLzXcVbNm0123456789".repeat(10))
    .slice(0, length);
const hex = (text: string) =>
  [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
    .join("");

/** `text`, percent-decoded up to three times, each without its `/`s too, and its base64 runs read. */
function readings(text: string): string[] {
  const texts = [text];
  for (let i = 0; i < 3; i++) {
    texts.push(texts.at(-1)!.replace(/(%[0-9a-f]{2})+/gi, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    }));
  }
  for (const run of texts.join(" ").match(/[A-Za-z0-9+/_-]{16,}/g) ?? []) {
    for (let skip = 0; skip < 4; skip++) {
      const aligned = run.slice(skip).replaceAll("-", "+").replaceAll("_", "/");
      try {
        texts.push(atob(aligned.slice(0, aligned.length & ~3)));
      } catch { /* not base64 */ }
    }
  }
  return [...texts, ...texts.map((t) => t.replaceAll("/", ""))];
}

/** Whether `shown` holds 12 characters in a row of `value`, in a form {@linkcode readings} reads. */
function holds(shown: unknown, value: string): boolean {
  const text = Deno.inspect(shown, { showHidden: true, depth: 9 }) +
    JSON.stringify(shown) + String(shown);
  const texts = readings(text).map((t) => t.toLowerCase());
  const low = value.toLowerCase();
  for (let at = 0; at + 12 <= low.length; at++) {
    if (texts.some((t) => t.includes(low.slice(at, at + 12)))) return true;
  }
  return false;
}

type Client = ReturnType<typeof createClient>;
/** Each client entry point whose refusal echoes the caller's text, and the option it names. */
const REFUSALS: [string, (c: Client, x: string) => unknown, string][] = [
  [
    "sortBy",
    (c, x) => c.list("list/x", { sortBy: `-${x} y` }).next(),
    "sortBy",
  ],
  [
    "sortDirection",
    (c, x) => c.list("list/x", { sortDirection: x as "ASC" }).next(),
    "sortDirection",
  ],
  ["limit", (c, x) => c.list("list/x", { limit: x as never }).next(), "limit"],
  [
    "priority",
    (c, x) => c.list("list/x", { priority: x as "low" }).next(),
    "priority",
  ],
  [
    "pages' limit",
    (c, x) => c.pages("list/x", { limit: x as never }).next(),
    "limit",
  ],
  [
    "fetch's init priority",
    (c, x) => c.fetch("items/x", { priority: x as "low" }),
    "priority",
  ],
  ["fetch's path", (c, x) => c.fetch(`http://evil.example/${x}`), "path"],
  ["list's path", (c, x) => c.list(`http://evil.example/${x}`).next(), "path"],
  [
    "a query key",
    (c, x) => c.list("list/x", { query: { [x]: 5 as never } }).next(),
    "query.",
  ],
];

for (const length of [64, 300]) {
  const TOKEN = tokenOf(length);

  Deno.test(`a token of ${length} characters echoed by a refusal (list's, pages' and fetch's options, a path, a query key) is not shown, whole, a run of it, or after 30 characters`, async () => {
    await using api = loopbackApi(TOKEN, () => Response.json([]));
    const client = createClient({
      environment: api.environment,
      clientId: "cid-cid-cid",
      clientSecret: SECRET,
      retry: false,
    });
    await (await client.fetch("list/warm")).body?.cancel(); // TOKEN, sent
    for (const x of [TOKEN, "x".repeat(30) + TOKEN]) {
      for (const [entry, call, option] of REFUSALS) {
        const error = await Promise.resolve().then(() => call(client, x))
          .then(() => undefined, (refused) => refused);
        ok(error instanceof TypeError, entry);
        const named = String((error as { option?: unknown }).option);
        // A query key's name: the project's part kept, the caller's [redacted] or [not shown].
        ok(option.endsWith(".") ? named.startsWith(option) : named === option);
        equal(holds(error, TOKEN), false, `${entry}: ${error.message}`);
      }
    }
  });

  Deno.test(`a sent path or query holding a token of ${length} characters (a run, split by a '/', encoded twice) shows in no event, ApiError or page's request.url`, async () => {
    await using api = loopbackApi(
      TOKEN,
      (request) =>
        new URL(request.url).pathname.startsWith("/api/list/")
          ? Response.json([{ id: 1 }])
          : new Response("no", { status: 404 }),
    );
    const events: unknown[] = [];
    const client = createClient({
      environment: api.environment,
      clientId: "cid-cid-cid",
      clientSecret: SECRET,
      retry: false,
      onEvent: (event) => events.push(event),
    });
    await (await client.fetch("list/warm")).body?.cancel(); // TOKEN, sent
    for (const value of [TOKEN, SECRET]) {
      const sent: [string, string?][] = [
        [value.slice(0, 30)],
        [`${value.slice(0, 20)}/${value.slice(20)}`],
        ["x", hex(value).replaceAll("%", "%25")], // the caller's, encoded twice
      ];
      for (const [path, q] of sent) {
        for (const base of ["list", "items"]) {
          events.length = 0;
          const shown = await Array.fromAsync(
            client.pages(
              `${base}/${path}`,
              q === undefined ? {} : { query: { q } },
            ),
          ).then((pages) => pages, (error) => error);
          if (base === "items") ok(shown instanceof ApiError, path);
          else equal(shown.length, 1, path);
          equal(holds(shown, value), false, `${base}/${path}: ${shown}`);
          equal(holds(events, value), false, `${base}/${path}: events`);
        }
      }
    }
  });

  Deno.test(`syncList shows no token of ${length} characters echoed by a refusal, nor a token or the secret percent-encoded in an item id (SyncError, skippedIds, sync.skipped)`, async () => {
    let list: { thingID: string; date?: string }[] = [];
    await using api = loopbackApi(TOKEN, () => Response.json(list));
    const client = createClient({
      environment: api.environment,
      clientId: "cid-cid-cid",
      clientSecret: SECRET,
      retry: false,
    });
    await (await client.fetch("warm")).body?.cancel(); // TOKEN, handed out
    type Options = Partial<SyncOptions<{ thingID: string }>>;
    const refusals: [string, (v: string) => Options, string?][] = [
      ["sortBy", (v) => ({ sortBy: `-${v}` })],
      ["sortDirection", (v) => ({ sortDirection: v as "ASC" })],
      ["limit", (v) => ({ limit: v as never })],
      ["maxLimit", (v) => ({ maxLimit: v as never })],
      ["query", (v) => ({ query: { [v]: 1 as never } }), "query."],
      ["path", () => ({}), "path"],
    ];
    const run = async (path: string, options: Options) => {
      using sink = createSqliteSink(":memory:", { table: "things" });
      return await syncList(client, path, { id: "thingID", sink, ...options });
    };
    for (const [option, options, named = option] of refusals) {
      const path = option === "path" ? `http://evil.example/${TOKEN}` : "t";
      const error = await run(path, options(TOKEN)).catch((e) => e);
      ok(String(error.option).startsWith(named), option);
      equal(holds(error, TOKEN), false, `${option}: ${error.message}`);
    }
    for (const value of [TOKEN, SECRET]) {
      const id = hex(value);
      list = [{ thingID: `b-${id}` }, { thingID: `a-${id}` }];
      const unordered = await run("t", {}).catch((e) => e);
      ok(unordered instanceof SyncError && unordered.reason === "unordered");
      list = [{ thingID: id }];
      const unsorted = await run("t", { sortBy: "date" }).catch((e) => e);
      ok(unsorted instanceof SyncError && unsorted.reason === "unordered");
      list = [{ thingID: `a-${id}` }, { thingID: "b" }];
      const events: unknown[] = [];
      const result = await run("t", {
        onEvent: (event) => events.push(event),
        sink: {
          load: () => Promise.resolve(undefined),
          write: (_items, _checkpoint, ids) =>
            Promise.resolve({ skippedIds: ids.filter((i) => i !== "b") }),
        },
      });
      equal(result.skipped, 1);
      for (const shown of [unordered, unsorted, result, events]) {
        equal(holds(shown, value), false, Deno.inspect(shown));
      }
    }
  });
}
