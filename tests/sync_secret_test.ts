// syncList's refusals quoted what they were given whole: a client secret or an
// access token pasted into the path ("transactions?token=..."), a query value,
// sortBy or another option was shown in the TypeError's message, `rule` and
// stack; a token the client's provider handed out before the run (its current
// one, not yet sent, or the one before it) in a refusal of the sink's
// checkpoint and in SyncErrors quoting the path or an item id.

import { equal, ok } from "node:assert/strict";
import { createClient } from "../src/client/mod.ts";
import {
  createSqliteSink,
  SyncError,
  syncList,
  type SyncOptions,
  type SyncSink,
} from "../src/sync/mod.ts";
import { loopbackApi } from "./_loopback_api.ts";
import { checkpointAt } from "./sync_fixtures.ts";

const SECRET = "SyncSecretVALUE-7f3a9c1e5b2d4680";
// The provider's first token, then the one a 401 renewed it to: before the run, its previous and current ones.
const TOKENS = ["TokBefore-Q8w2E4r6T1y3U5i7", "TokCurrent-Z9x7C5v3B1n2M4k6"];

/** What is pasted: the secret, a run of it, its base64; each token. */
const VALUES = [
  SECRET,
  `xx${SECRET.slice(2, 16)}yy`,
  btoa(SECRET),
  ...TOKENS,
];

type Thing = { thingID: string; date?: string };

/** An entry point: the run's path and options, what the service lists, and the refusal expected. */
interface Case {
  name: string;
  path?: (value: string) => string;
  options?: (value: string) => Partial<SyncOptions<Thing>>;
  list?: (value: string) => Thing[];
  /** The service answers page 1 to every page. */
  ignorePage?: boolean;
  /** A run before this one, over the list it gives. */
  before?: (value: string) => Thing[];
  expected: { option: string } | { reason: string };
}

const things = (n: number, prefix = "t") =>
  Array.from({ length: n }, (_, i) => ({
    thingID: `${prefix}${String(i).padStart(4, "0")}`,
  }));

/** A sink that holds a checkpoint for the list "things". */
const otherPath = (): SyncSink<Thing> => ({
  load: () => Promise.resolve({ ...checkpointAt("things", 3), id: "thingID" }),
  write: () => Promise.resolve(),
});

const CASES: Case[] = [
  {
    name: "path query",
    path: (v) => `things?token=${v}`,
    expected: opt("path"),
  },
  { name: "path fragment", path: (v) => `things#${v}`, expected: opt("path") },
  {
    name: "query sortBy",
    options: (v) => ({ query: { sortBy: v } }),
    expected: opt("query"),
  },
  {
    name: "query sortDirection",
    options: (v) => ({ query: { sortDirection: v } }),
    expected: opt("query"),
  },
  {
    name: "sortBy",
    options: (v) => ({ sortBy: `-${v}` }),
    expected: opt("sortBy"),
  },
  {
    name: "sortDirection",
    options: (v) => ({ sortDirection: v as "ASC" }),
    expected: opt("sortDirection"),
  },
  {
    name: "limit",
    options: (v) => ({ limit: v as unknown as number }),
    expected: opt("limit"),
  },
  {
    name: "a checkpoint for another path",
    path: (v) => `things/${v}`,
    options: () => ({ sink: otherPath() }),
    expected: opt("sink"),
  },
  {
    name: "unordered ids",
    list: (v) => [{ thingID: `b-${v}` }, { thingID: `a-${v}` }],
    expected: { reason: "unordered" },
  },
  {
    name: "an id without its sort value",
    options: () => ({ sortBy: "date" }),
    list: (v) => [{ thingID: v }],
    expected: { reason: "unordered" },
  },
  {
    name: "repeated pages",
    path: (v) => `things/${v}`,
    options: () => ({ maxLimit: 100 }),
    list: () => things(300),
    ignorePage: true,
    expected: { reason: "repeated-page" },
  },
  {
    name: "a head that lost the copy",
    path: (v) => `things/${v}`,
    before: () => things(60),
    list: () => things(60, "u"),
    expected: { reason: "too-many-deletes" },
  },
];

function opt(option: string) {
  return { option };
}

/** Whether `text` holds 12 characters in a row of `value`, as given, URL-encoded or base64, in any case. */
function holds(text: string, value: string): boolean {
  const lower = text.toLowerCase();
  return [value, encodeURIComponent(value), btoa(value)].some((form) => {
    const low = form.toLowerCase();
    for (let at = 0; at + 12 <= low.length; at++) {
      if (lower.includes(low.slice(at, at + 12))) return true;
    }
    return false;
  });
}

Deno.test("syncList's refusals, before and during a run, show neither the client secret (whole, a run, base64) nor a token the provider handed out, pasted into the path, a query, an option or an item id", async () => {
  let issued = 0, list: Thing[] = [], ignorePage = false;
  await using api = loopbackApi(
    () => TOKENS[Math.min(issued++, 1)]!,
    (request) => {
      const url = new URL(request.url);
      if (url.pathname === "/api/renew") {
        const first = request.headers.get("authorization")?.endsWith(
          TOKENS[0]!,
        );
        return new Response(null, { status: first ? 401 : 204 });
      }
      const limit = Number(url.searchParams.get("limit") ?? 50);
      const page = ignorePage ? 1 : Number(url.searchParams.get("page") ?? 1);
      return Response.json(list.slice((page - 1) * limit, page * limit));
    },
  );
  const client = createClient({
    environment: api.environment,
    clientId: "sync-secret-client",
    clientSecret: SECRET,
    retry: false,
  });
  // The provider hands out the first token, then (a 401) the second: neither sent by a run yet.
  await (await client.fetch("renew")).body?.cancel();
  equal(issued, 2);
  for (const value of VALUES) {
    for (const entry of CASES) {
      const shown: unknown[] = [];
      const sink = createSqliteSink<Thing>(":memory:", { table: "things" });
      const options = {
        id: "thingID",
        sink,
        onProgress: (progress: unknown) => shown.push(progress),
        onEvent: (event: unknown) => shown.push(event),
        ...entry.options?.(value),
      };
      const path = entry.path?.(value) ?? "things";
      ignorePage = entry.ignorePage === true;
      if (entry.before !== undefined) {
        list = entry.before(value);
        await syncList(client, path, options);
      }
      list = entry.list?.(value) ?? things(3);
      const error = await syncList(client, path, options).then(
        () => undefined,
        (error: unknown) => error,
      );
      sink[Symbol.dispose]();
      const label = `${entry.name}, ${value}`;
      if ("option" in entry.expected) {
        ok(error instanceof TypeError || error instanceof RangeError, label);
        equal((error as { option?: string }).option, entry.expected.option);
      } else {
        ok(error instanceof SyncError, label);
        equal(error.reason, entry.expected.reason, label);
      }
      const text = Deno.inspect(error, { showHidden: true, depth: 9 }) +
        String(error) + JSON.stringify(error) + JSON.stringify(shown);
      for (const secret of [SECRET, ...TOKENS]) {
        equal(holds(text, secret), false, `${label}: ${text}`);
      }
    }
  }
});
