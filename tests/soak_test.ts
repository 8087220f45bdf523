// Fault-injection soak: the provider against a raw TCP token endpoint that
// misbehaves at random (seeded), and the client and paginator against a
// faulty list endpoint. Bounded to a few seconds; prints its figures.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import {
  ApiError,
  QuotaExceededError,
  TokenRequestError,
} from "../src/core/errors.ts";
import { createClient } from "../src/client/mod.ts";
import { createTokenProvider, type IssuedToken } from "../src/token/mod.ts";
import { type FakeFault, startFakePartnerApi } from "../src/testing/mod.ts";
import { manualClock } from "./_helpers.ts";
import { delay as sleep } from "../src/core/_retry.ts";
import { seededRandom as seeded } from "../src/testing/_list_data.ts";

// The one test that runs on real time on purpose: a socket server in this
// process answering with random delays, so that the provider meets real
// interleavings of timers and I/O. Everything else drives a fake clock.

/** Waits (up to `limitMs`, real time) until `condition()` holds. */
async function waitFor(condition: () => boolean, limitMs: number) {
  const until = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await sleep(2);
  }
}

const SEED = 20261122;
const SECRET = "soak-secret-7f3a9c";

const encoder = new TextEncoder();

/** Reads one HTTP request (headers and a Content-Length body) off `conn`. */
async function readRequest(conn: Deno.Conn): Promise<string | undefined> {
  const buffer = new Uint8Array(64 * 1024);
  let text = "";
  while (true) {
    const read = await conn.read(buffer).catch(() => null);
    if (read === null) return undefined;
    text += new TextDecoder().decode(buffer.subarray(0, read));
    const end = text.indexOf("\r\n\r\n");
    if (end === -1) continue;
    const length = Number(/content-length:\s*(\d+)/i.exec(text)?.[1] ?? 0);
    if (text.length - end - 4 >= length) return text.slice(end + 4);
  }
}

function answer(
  status: string,
  body: string,
  headers: string[] = [],
  length?: number,
) {
  return [
    `HTTP/1.1 ${status}`,
    "Content-Type: application/json",
    `Content-Length: ${length ?? encoder.encode(body).length}`,
    "Connection: close",
    ...headers,
    "",
    body,
  ].join("\r\n");
}

type Behaviour =
  | "good"
  | "reset"
  | "503"
  | "502 with Retry-After"
  | "truncated JSON"
  | "wrong field types"
  | "429"
  | "slow"
  | "garbage quota header";

const BEHAVIOURS: [Behaviour, number][] = [
  ["good", 5],
  ["reset", 1],
  ["503", 1],
  ["502 with Retry-After", 1],
  ["truncated JSON", 1],
  ["wrong field types", 1],
  ["429", 1],
  ["slow", 1],
  ["garbage quota header", 1],
];

/** A token endpoint on a raw socket, misbehaving at random. */
function startFaultyTokenEndpoint(random: () => number, clock: () => number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const handlers = new Set<Promise<void>>();
  const stats = {
    requests: 0,
    early: 0,
    behaviours: new Map<Behaviour, number>(),
  };
  let blockedUntil = -Infinity;
  // Connections in the order the client opened them: a request opened before
  // a 429 was answered was sent before the client could know of it, even if
  // a loaded machine reads it after.
  let accepted = 0;
  let blockedAfter = Infinity;
  const total = BEHAVIOURS.reduce((sum, [, weight]) => sum + weight, 0);
  const pick = (): Behaviour => {
    let roll = random() * total;
    for (const [behaviour, weight] of BEHAVIOURS) {
      if ((roll -= weight) < 0) return behaviour;
    }
    return "good";
  };
  const token = () =>
    JSON.stringify({
      access_token: `tok-${crypto.randomUUID()}`,
      expires_in: 1 + Math.floor(random() * 5),
      token_type: "Bearer",
    });

  async function serve(conn: Deno.Conn, order: number) {
    try {
      const body = await readRequest(conn);
      if (body === undefined) return;
      stats.requests++;
      if (clock() < blockedUntil && order > blockedAfter) stats.early++;
      ok(JSON.parse(body).client_secret === SECRET);
      const behaviour = pick();
      stats.behaviours.set(
        behaviour,
        (stats.behaviours.get(behaviour) ?? 0) + 1,
      );
      const quota = "Idp-Client-Quota-Limit: b=per_hour;q=100;r=50;t=3600";
      let reply: string | undefined;
      switch (behaviour) {
        case "good":
          reply = answer("200 OK", token(), [quota]);
          break;
        case "reset":
          return; // closed with no answer
        case "503":
          reply = answer("503 Service Unavailable", '{"error":"unavailable"}');
          break;
        case "502 with Retry-After":
          reply = answer("502 Bad Gateway", "{}", [
            `Retry-After: ${random() < 0.5 ? 0 : 5}`,
          ]);
          break;
        case "truncated JSON":
          reply = answer("200 OK", '{"access_token":"tok-', [], 400);
          break;
        case "wrong field types":
          reply = answer(
            "200 OK",
            '{"access_token":42,"expires_in":"60","token_type":"Bearer"}',
          );
          break;
        case "429": {
          const reset = 1 + Math.floor(random() * 3);
          blockedUntil = clock() + reset * 1000;
          blockedAfter = accepted;
          reply = answer(
            "429 Too Many Requests",
            '{"error":"too_many_requests"}',
            [
              `Idp-Client-Quota-Limit: b=per_hour;q=100;r=0;t=${reset}`,
            ],
          );
          break;
        }
        case "slow":
          await sleep(60); // past the provider's 25 ms request timeout
          reply = answer("200 OK", token(), [quota]);
          break;
        case "garbage quota header":
          reply = answer("200 OK", token(), [
            "Idp-Client-Quota-Limit: b=;q=zz,,;;=x",
          ]);
          break;
      }
      await conn.write(encoder.encode(reply)).catch(() => {});
    } finally {
      try {
        conn.close();
      } catch {
        // already closed by the peer
      }
    }
  }

  (async () => {
    for await (const conn of listener) {
      const handler = serve(conn, ++accepted);
      handlers.add(handler);
      handler.finally(() => handlers.delete(handler));
    }
  })().catch(() => {});

  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/token`,
    stats,
    get busy() {
      return handlers.size;
    },
    async close() {
      listener.close();
      await Promise.all(handlers);
    },
  };
}

Deno.test("the provider under random faults: a valid token or a typed error, never a hang", async () => {
  const random = seeded(SEED);
  const clock = manualClock();
  const server = startFaultyTokenEndpoint(random, clock);
  const provider = createTokenProvider({
    tokenUrl: server.url,
    audience: "soak",
    clientId: "soak-client",
    clientSecret: SECRET,
    now: clock,
    retry: { retries: 2, initialDelay: 1, maxDelay: 20, maxRetryAfter: 20 },
    timeout: 25,
    random,
    // Time leaps between bursts only once background refreshes are done:
    // a refresh still running when the clock jumps seconds would look
    // overdue, which in reality only work a runtime dropped can be.
    waitUntil: (promise) => background.push(promise),
  });
  const background: Promise<unknown>[] = [];
  const results = {
    calls: 0,
    tokens: 0,
    typed: 0,
    quota: 0,
    hung: 0,
    wrong: [] as unknown[],
  };
  const printed: string[] = [];
  const bursts = 400;
  const started = clock();
  for (let burst = 0; burst < bursts; burst++) {
    await Promise.all(background.splice(0));
    clock.advance(Math.floor(random() * 2500));
    const size = 1 + Math.floor(random() * 16);
    await Promise.all(Array.from({ length: size }, async () => {
      results.calls++;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const hang = new Promise<"hang">((resolve) =>
        timer = setTimeout(() => resolve("hang"), 3000)
      );
      try {
        const outcome: IssuedToken | "hang" = await Promise.race([
          provider.getToken(),
          hang,
        ]);
        if (outcome === "hang") results.hung++;
        else if (clock() < outcome.expiresAt) results.tokens++;
        else results.wrong.push(`expired token handed out at ${clock()}`);
      } catch (error) {
        printed.push(String(error), Deno.inspect(error, { depth: 5 }));
        if (error instanceof QuotaExceededError) results.quota++;
        else if (error instanceof TokenRequestError) results.typed++;
        else results.wrong.push(error);
      } finally {
        clearTimeout(timer);
      }
    }));
  }
  // Let a background refresh still under way finish before closing.
  await waitFor(() => server.busy === 0, 5000);
  await sleep(60);
  await waitFor(() => server.busy === 0, 5000);
  await server.close();

  const lifetimes = Math.round((clock() - started) / 3000);
  console.log(
    `soak (seed ${SEED}): ${results.calls} calls in ${bursts} bursts over ~${lifetimes} token lifetimes: ` +
      `${results.tokens} valid tokens, ${results.typed} TokenRequestError, ${results.quota} QuotaExceededError; ` +
      `${server.stats.requests} token requests (${
        [...server.stats.behaviours].map(([b, n]) => `${b} ${n}`).join(", ")
      })`,
  );
  deepStrictEqual(results.wrong, []);
  equal(results.hung, 0);
  equal(server.stats.early, 0, "no request before a 429's reset");
  // One flight per burst at most, plus at most one background refresh, each
  // at most 1 + 2 retries.
  ok(
    server.stats.requests <= bursts * 2 * 3,
    `${server.stats.requests} token requests`,
  );
  ok(
    results.tokens > 0 && results.typed > 0 && results.quota > 0,
    "every outcome was exercised",
  );
  ok(
    printed.every((text) => !text.includes(SECRET)),
    "no error shows the secret",
  );
});

Deno.test("the client and paginator under random API faults: every item once, or a typed error", async () => {
  const random = seeded(SEED + 1);
  const faultKinds: FakeFault[] = [
    { kind: "status", status: 500 },
    { kind: "status", status: 503 },
    { kind: "status", status: 401 },
    { kind: "status", status: 429, retryAfter: 0 },
    { kind: "drop" },
    { kind: "body", body: "{" },
    { kind: "delay", ms: 3 },
  ];
  const expected = Array.from(
    { length: 60 },
    (_, i) => `ch_${String(i + 1).padStart(6, "0")}`,
  );
  const tally = {
    runs: 0,
    complete: 0,
    apiErrors: 0,
    aborted: 0,
    wrong: [] as unknown[],
  };
  for (let run = 0; run < 40; run++) {
    tally.runs++;
    await using api = await startFakePartnerApi({ items: { cardholders: 60 } });
    const faults = Array.from(
      { length: Math.floor(random() * 4) },
      () => faultKinds[Math.floor(random() * faultKinds.length)]!,
    );
    // Pages in flight take faults in any order; put them after the first page.
    api.injectApiFaults({ kind: "delay", ms: 0 }, ...faults);
    const client = createClient({
      environment: api.environment,
      ...api.credentials,
      // Retried as by default, only sooner: the soak is about outcomes.
      retry: { retries: 2, initialDelay: 1, maxDelay: 20 },
    });
    const controller = new AbortController();
    const abortReason = new Error("run aborted");
    if (random() < 0.15) {
      setTimeout(
        () => controller.abort(abortReason),
        Math.floor(random() * 10),
      );
    }
    const seen: string[] = [];
    try {
      for await (
        const row of client.list<{ cardholderID: string }>("cardholders", {
          limit: 5 + Math.floor(random() * 20),
          concurrency: 1 + Math.floor(random() * 4),
          signal: controller.signal,
        })
      ) {
        seen.push(row.cardholderID);
      }
      deepStrictEqual(
        seen,
        expected,
        "a complete list has every item once, in order",
      );
      tally.complete++;
    } catch (error) {
      deepStrictEqual(
        seen,
        expected.slice(0, seen.length),
        "nothing twice, nothing skipped",
      );
      if (error === abortReason) tally.aborted++;
      else if (error instanceof ApiError) {
        tally.apiErrors++;
        ok(!JSON.stringify(error).includes("Bearer "), "no token in the error");
      } else tally.wrong.push(error);
    } finally {
      controller.abort();
    }
  }
  console.log(
    `list soak (seed ${
      SEED + 1
    }): ${tally.runs} runs: ${tally.complete} complete, ` +
      `${tally.apiErrors} ApiError, ${tally.aborted} aborted`,
  );
  deepStrictEqual(tally.wrong, []);
  ok(tally.complete > 0 && tally.apiErrors > 0);
});
