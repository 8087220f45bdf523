// Review of round 4 (changes on main since 84446b3): each finding is a test
// that failed on the code the review read (a fix followed, named in its
// commit); the attacks that found nothing are tests too. The API origin and
// the fake run in process, reached through the client's `fetch` option (no
// socket beside fake timers); the body reader's tests keep raw loopback
// servers, on real time.

import { deepStrictEqual, equal, rejects } from "node:assert/strict";
import { ApiError, TokenRequestError } from "../src/core/errors.ts";
import { type ClientOptions, createClient } from "../src/client/mod.ts";
import { collect, pageSearchParams, paginate } from "../src/client/paginate.ts";
import { resolveUnder } from "../src/client/_path.ts";
import { requestToken } from "../src/token/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";
import { besideFake, inProcessFake } from "./_fast_setup.ts";

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
/** A finding of the review: failed before its fix. */
const finding = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, fn });

/**
 * An API origin beside the fake, which issues the tokens, both in process
 * (no socket: under fake timers only the clock moves time, never the load of
 * the machine). It answers with `answer`, or else at once, except under a
 * path ending in `/held`: those answer only once the test lets them go.
 */
function apiOrigin(
  answer?: (request: Request) => Response | Promise<Response>,
) {
  const fake = inProcessFake();
  const gates: PromiseWithResolvers<void>[] = [];
  let arrived = Promise.withResolvers<void>();
  const origin = besideFake(fake, async (request) => {
    const path = new URL(request.url).pathname;
    arrived.resolve();
    if (answer !== undefined) return await answer(request);
    if (path.endsWith("/held")) {
      const gate = Promise.withResolvers<void>();
      gates.push(gate);
      await gate.promise;
    }
    return new Response(`answer to ${path}`);
  });
  return {
    base: new URL(origin.environment.baseUrl),
    /** A client of this origin that does not retry, with `options`. */
    client: (options: Partial<ClientOptions> = {}) =>
      createClient({
        environment: origin.environment,
        ...fake.credentials,
        fetch: origin.fetch,
        retry: false,
        ...options,
      }),
    /** Resolves once the next request reached the origin. */
    nextArrival() {
      arrived = Promise.withResolvers<void>();
      return arrived.promise;
    },
    /** Lets every held answer go. */
    answerHeld() {
      for (const gate of gates.splice(0)) gate.resolve();
    },
    [Symbol.dispose]() {
      this.answerHeld();
      fake[Symbol.dispose]();
    },
  };
}

/** How a request ended: "ok", or its ApiError's reason; "pending" until then. */
function outcome(pending: Promise<Response>) {
  const state = { now: "pending" as string };
  const settled = pending.then(
    async (response) => (await response.body?.cancel(), state.now = "ok"),
    (error) => (state.now = error instanceof ApiError ? error.reason : "other"),
  );
  return { state, settled };
}

// ---------------------------------------------------------------------------
// 1. src/core/_deadlines.ts

finding(
  "deadlines: a clock set back opens a new window: a request joining then gets its whole limit, no less and no more",
  async () => {
    using api = apiOrigin();
    let clock = Date.UTC(2026, 10, 24);
    const client = api.client({
      now: () => clock,
      timeout: 40, // windows of 4 ms, each timed 44 ms from its start
    });
    await client.tokenProvider.getToken();
    const seen = await withFakeTimers(async (timers) => {
      await (await client.fetch("quick")).text(); // opens a window at T
      clock -= 60_000; // an NTP step back, still inside that window's time
      const arrived = api.nextArrival();
      const held = outcome(client.fetch("held"));
      await arrived;
      await timers.tickAsync(39);
      const early = held.state.now;
      await timers.tickAsync(6); // past the limit and its window (44 ms)
      const late = held.state.now;
      api.answerHeld();
      await held.settled;
      return [early, late];
    });
    deepStrictEqual(seen, ["pending", "timeout"]);
  },
);

finding(
  "deadlines: fake timers installed within a second of a request on real timers drive the next request's limit",
  async () => {
    using api = apiOrigin();
    const client = api.client();
    await (await client.fetch("quick")).text(); // a window on the platform's signal
    const seen = await withFakeTimers(async (timers) => {
      const arrived = api.nextArrival();
      const held = outcome(client.fetch("held"));
      await arrived;
      // README: with setTimeout replaced, the windows use setTimeout, which
      // the fakes drive. The request joins the window opened before.
      await timers.tickAsync(31_001);
      const seen = held.state.now;
      api.answerHeld();
      await held.settled;
      return seen;
    });
    equal(seen, "timeout");
  },
);

finding(
  "deadlines: with an injected clock, a request that starts in the turn its window's timer fires is timed out all the same",
  async () => {
    using api = apiOrigin();
    const client = api.client({
      now: manualClock(), // the project's own idiom: a clock moved by hand
      timeout: 100,
    });
    await client.tokenProvider.getToken();
    const seen = await withFakeTimers(async (timers) => {
      const arrived = api.nextArrival();
      const first = outcome(client.fetch("held"));
      await arrived;
      timers.tick(110); // the window's timer fires: the first request is aborted
      const next = api.nextArrival();
      const second = outcome(client.fetch("held")); // same turn: joins the window
      await first.settled;
      await next;
      await timers.tickAsync(60_000); // 600 limits later
      const seen = [first.state.now, second.state.now];
      api.answerHeld();
      await second.settled;
      return seen;
    });
    deepStrictEqual(seen, ["timeout", "timeout"]);
  },
);

finding(
  "deadlines: 'timeout' at its documented maximum (2147483647 ms) does not time a request out at once",
  async () => {
    using api = apiOrigin();
    const client = api.client({
      timeout: 2_147_483_647,
    });
    await client.tokenProvider.getToken();
    const arrived = api.nextArrival();
    const held = outcome(client.fetch("held"));
    await Promise.race([arrived, held.settled]); // it may end before it is sent
    await sleep(20);
    api.answerHeld(); // an answer after 20 ms, well within 24 days
    await held.settled;
    equal(held.state.now, "ok");
  },
);

Deno.test("deadlines: the limit of client.fetch ends at the headers on fake timers too: a body read after the limit is whole", async () => {
  using api = apiOrigin();
  const clock = manualClock();
  const client = api.client({
    now: clock,
    timeout: 50,
  });
  await client.tokenProvider.getToken();
  await withFakeTimers(async (timers) => {
    const response = await client.fetch("quick");
    clock.advance(1_000);
    await timers.tickAsync(1_000);
    equal(await response.text(), "answer to /api/quick");
  });
});

// ---------------------------------------------------------------------------
// 3. readBounded (src/core/_attempt_loop.ts)

/**
 * A raw HTTP/1.1 server on loopback: each connection's request is read
 * whole, then `head` and `chunks` are written as they are and the
 * connection closed.
 */
function rawServer(head: string, chunks: () => Iterable<Uint8Array>) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const served: Promise<void>[] = [];
  const accepting = (async () => {
    for await (const connection of listener) {
      served.push(answer(connection, head, chunks));
    }
  })();
  return {
    url: `http://127.0.0.1:${listener.addr.port}/oauth/token`,
    async [Symbol.asyncDispose]() {
      listener.close();
      await accepting.catch(() => {});
      await Promise.all(served);
    },
  };
}

async function answer(
  connection: Deno.Conn,
  head: string,
  chunks: () => Iterable<Uint8Array>,
): Promise<void> {
  try {
    await readRequest(connection);
    await connection.write(new TextEncoder().encode(head));
    for (const chunk of chunks()) {
      let written = 0;
      while (written < chunk.byteLength) {
        written += await connection.write(chunk.subarray(written));
      }
    }
  } catch {
    // The client hung up: what it read is what the test looks at.
  } finally {
    connection.close();
  }
}

/** Reads the request's head and as much body as its Content-Length says. */
async function readRequest(connection: Deno.Conn): Promise<void> {
  let text = "";
  const buffer = new Uint8Array(16 * 1024);
  while (true) {
    const read = await connection.read(buffer);
    if (read === null) return;
    text += new TextDecoder().decode(buffer.subarray(0, read));
    const end = text.indexOf("\r\n\r\n");
    if (end < 0) continue;
    const length = Number(/content-length: *(\d+)/i.exec(text)?.[1] ?? 0);
    if (text.length - end - 4 >= length) return;
  }
}

const TOKEN_CLIENT = {
  audience: "https://partner-api.test",
  clientId: "client",
  clientSecret: "secret",
};

/** A token answer padded with `padding` spaces inside its JSON. */
function paddedTokenAnswer(padding: number): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(
    `{"access_token":"a","token_type":"Bearer","expires_in":60,"pad":"${
      " ".repeat(padding)
    }"}`,
  );
}

/** `body` in HTTP chunks of 64 KiB, with the last chunk. */
function* chunked(body: Uint8Array): Iterable<Uint8Array> {
  const encoder = new TextEncoder();
  for (let at = 0; at < body.byteLength; at += 65_536) {
    const part = body.subarray(at, at + 65_536);
    yield encoder.encode(`${part.byteLength.toString(16)}\r\n`);
    yield part;
    yield encoder.encode("\r\n");
  }
  yield encoder.encode("0\r\n\r\n");
}

finding(
  "read body: a chunked answer that also declares a small Content-Length is held to the 64 KiB bound (a 1 MiB token answer is refused)",
  async () => {
    const body = paddedTokenAnswer(1024 * 1024);
    // Transfer-Encoding wins (RFC 9112 6.3); the runtime keeps both headers.
    await using server = rawServer(
      "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" +
        "transfer-encoding: chunked\r\ncontent-length: 10\r\n" +
        "connection: close\r\n\r\n",
      () => chunked(body),
    );
    await rejects(
      requestToken({ ...TOKEN_CLIENT, tokenUrl: server.url }),
      (error: unknown) =>
        error instanceof TokenRequestError && error.reason === "malformed",
    );
  },
);

Deno.test("read body: bytes past a declared Content-Length are not read, and a gzip body without content-encoding is read as the bytes it is", async () => {
  const answer = paddedTokenAnswer(10);
  const trailing = new TextEncoder().encode("x".repeat(1024 * 1024));
  await using longer = rawServer(
    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" +
      `content-length: ${answer.byteLength}\r\nconnection: close\r\n\r\n`,
    () => [answer, trailing],
  );
  const token = await requestToken({ ...TOKEN_CLIENT, tokenUrl: longer.url });
  equal(token.expiresIn, 60, "the answer as declared, the rest never read");
  const gzip = new Uint8Array(
    await new Response(
      new Blob([paddedTokenAnswer(100_000)]).stream()
        .pipeThrough(new CompressionStream("gzip")),
    ).arrayBuffer(),
  );
  await using compressed = rawServer(
    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" +
      `content-length: ${gzip.byteLength}\r\nconnection: close\r\n\r\n`,
    () => [gzip],
  );
  await rejects(
    requestToken({ ...TOKEN_CLIENT, tokenUrl: compressed.url }),
    (error: unknown) =>
      error instanceof TokenRequestError && error.reason === "malformed",
    "gzip bytes are no JSON: never inflated without the header",
  );
});

// ---------------------------------------------------------------------------
// 4. src/client/_list.ts pageAddresses

/** Page addresses as the code of 84446b3 built them. */
function addressBefore(
  url: URL,
  extra: Record<string, string>,
  request: { page: number; limit: number },
): URL {
  const pageUrl = new URL(url);
  for (const [name, value] of Object.entries(extra)) {
    pageUrl.searchParams.set(name, value);
  }
  for (const [name, value] of pageSearchParams(request)) {
    pageUrl.searchParams.set(name, value);
  }
  return pageUrl;
}

/** An address as a server reads it: path, and the parameters, sorted. */
function asRead(url: URL): string {
  const params = [...url.searchParams].sort(([a, x], [b, y]) =>
    a === b ? (x < y ? -1 : x > y ? 1 : 0) : a < b ? -1 : 1
  );
  return `${url.pathname} ${JSON.stringify(params)}`;
}

Deno.test("list addresses: every page asks what the code before round 4 asked (queries, encodings, page parameters in the path, 'query'; a fragment is refused since, as syncList refuses it)", async () => {
  const asked: URL[] = [];
  using api = apiOrigin((request) => {
    const url = new URL(request.url);
    asked.push(url);
    const page = Number(url.searchParams.get("page"));
    return Response.json(page === 1 ? [1, 2] : [3]);
  });
  const client = api.client();
  const paths = [
    "transactions",
    "transactions?status=open",
    "transactions?sortBy=b&x=1",
    "transactions?q=a%20b+c&flag&tag=a&tag=b",
    "caf%C3%A9/items?name=%E2%9C%93&amp;=%26",
    "/transactions/?",
  ];
  const queries = [{}, { status: "closed", "a b": "c&d=e", "": "empty" }];
  const differ: string[] = [];
  for (const path of paths) {
    for (const query of queries) {
      asked.length = 0;
      await collect(client.list(path, { limit: 2, query }), {
        maxItems: 10,
      });
      const url = resolveUnder(api.base, path, "test");
      const before = [1, 2].map((page) =>
        asRead(addressBefore(url, query, { page, limit: 2 }))
      );
      const now = asked.map(asRead);
      if (JSON.stringify(now) !== JSON.stringify(before)) {
        differ.push(
          `${path} ${JSON.stringify(query)}: ${now} (was ${before})`,
        );
      }
    }
  }
  deepStrictEqual(differ, []);
});

finding(
  "list addresses: a sort named in the path's query is kept when no sort option is given, as 84446b3 sent it",
  async () => {
    await using api = await startFakePartnerApi();
    const client = createClient({
      environment: api.environment,
      ...api.credentials,
    });
    type Transaction = { transactionID: string };
    const newest = (path: string, options = {}) =>
      collect(
        client.list<Transaction>(path, { limit: 5, ...options }),
        { maxItems: 5 },
      ).then((items) => items.map((item) => item.transactionID));
    const byOption = await newest("transactions", {
      sortBy: "creationDate",
      sortDirection: "DESC",
    });
    const byPath = await newest(
      "transactions?sortBy=creationDate&sortDirection=DESC",
    );
    deepStrictEqual(byPath, byOption);
  },
);

// ---------------------------------------------------------------------------
// 5. src/client/paginate.ts iterate

finding(
  "paginate: dedupeBy runs only over the items handed out: a throw past maxItems loses none before the cut",
  async () => {
    type Row = { id?: string };
    // The fourth row is malformed; maxItems 2 never needs it (nor did 84446b3).
    const page: Row[] = [{ id: "a" }, { id: "b" }, { id: "c" }, {}];
    const items = paginate<Row>(() => Promise.resolve(page), {
      limit: 4,
      maxItems: 2,
      dedupeBy: (row) => row.id!.toLowerCase(),
    });
    deepStrictEqual(await collect(items, { maxItems: 10 }), page.slice(0, 2));
  },
);

finding(
  "paginate: a caller that breaks after the first item stops dedupeBy there",
  async () => {
    const keyed: number[] = [];
    const items = paginate(
      ({ limit }) =>
        Promise.resolve(Array.from({ length: limit }, (_, i) => i)),
      { limit: 1000, dedupeBy: (n) => (keyed.push(n), n) },
    );
    for await (const _ of items) break;
    equal(keyed.length, 1, `dedupeBy ran ${keyed.length} times for 1 item`);
  },
);

Deno.test("paginate: no item is handed out after the signal aborts mid-page, at any concurrency, with or without dedupe and a cut", async () => {
  for (const concurrency of [1, 3]) {
    for (const dedupe of [false, true]) {
      const controller = new AbortController();
      const handed: number[] = [];
      const items = paginate(
        ({ page, limit }) =>
          Promise.resolve(
            Array.from({ length: limit }, (_, i) => (page - 1) * limit + i),
          ),
        {
          limit: 5,
          maxItems: 12,
          concurrency,
          signal: controller.signal,
          ...(dedupe ? { dedupeBy: (n: number) => n } : {}),
        },
      );
      await rejects(
        (async () => {
          for await (const n of items) {
            handed.push(n);
            if (n === 6) controller.abort(new Error("stop"));
          }
        })(),
        (error: Error) => error.message === "stop",
      );
      deepStrictEqual(handed, [0, 1, 2, 3, 4, 5, 6]);
    }
  }
});

Deno.test("paginate: dedupe, maxItems and the repeated-page check agree with the code before round 4 on pages with repeats", async () => {
  // Page 2 repeats page 1's keys but one, page 3 repeats all of them.
  const pages = [[1, 2, 3], [3, 2, 4], [1, 2, 4]];
  const fetchPage = ({ page }: { page: number }) =>
    Promise.resolve(pages[page - 1] ?? []);
  const run = (maxItems: number) =>
    collect(
      paginate(fetchPage, { limit: 3, maxItems, dedupeBy: (n) => n }),
      { maxItems: 100 },
    ).catch((error) => error.reason as string);
  deepStrictEqual(await run(3), [1, 2, 3]);
  deepStrictEqual(await run(4), [1, 2, 3, 4]);
  equal(await run(5), "repeated-page");
});
