// Fault-injection soak: the provider against a token endpoint that
// misbehaves at random (seeded), and the client and paginator against a
// faulty list endpoint. Prints its figures.
//
// Both run in process on fake timers: the faults (a reset connection, a
// body cut short of its length, an answer slower than the time limit) are
// made at the HTTP level by `fetchOver`, which has the runtime fetch's
// manners, and every wait (timeouts, retries, the limiter's pause after a
// 429) passes as the clock says. Same seed, same run.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import {
  ApiError,
  QuotaExceededError,
  TokenRequestError,
} from "../src/core/errors.ts";
import { createTokenProvider, type IssuedToken } from "../src/token/mod.ts";
import type { FakeFault } from "../src/testing/mod.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";
import { clientOf, drive, fetchOver, inProcessFake } from "./_fast_setup.ts";
import { delay as sleep } from "../src/core/_deadlines.ts";
import { seededRandom as seeded } from "../src/testing/_list_data.ts";

const SEED = 20261122;
const SECRET = "soak-secret-7f3a9c";

/** An answer as the raw server sent it: `length` may claim more than the body. */
function answer(
  status: number,
  body: string,
  headers: Record<string, string> = {},
  length?: number,
) {
  return new Response(body, {
    status,
    headers: {
      "content-type": "application/json",
      ...(length === undefined ? {} : { "content-length": String(length) }),
      ...headers,
    },
  });
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

/** A token endpoint, reached by its `fetch`, misbehaving at random. */
function faultyTokenEndpoint(random: () => number, clock: () => number) {
  const handlers = new Set<Promise<unknown>>();
  const stats = {
    requests: 0,
    early: 0,
    behaviours: new Map<Behaviour, number>(),
  };
  let blockedUntil = -Infinity;
  // Requests in the order the client sent them: a request sent before a
  // 429 was answered was sent before the client could know of it, even if
  // it is read after.
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
  const quota = { "idp-client-quota-limit": "b=per_hour;q=100;r=50;t=3600" };

  async function serve(request: Request, order: number): Promise<Response> {
    const body = await request.text();
    stats.requests++;
    if (clock() < blockedUntil && order > blockedAfter) stats.early++;
    ok(JSON.parse(body).client_secret === SECRET);
    const behaviour = pick();
    stats.behaviours.set(behaviour, (stats.behaviours.get(behaviour) ?? 0) + 1);
    switch (behaviour) {
      case "good":
        return answer(200, token(), quota);
      case "reset": // closed with no answer
        throw new TypeError("connection reset by peer");
      case "503":
        return answer(503, '{"error":"unavailable"}');
      case "502 with Retry-After":
        return answer(502, "{}", {
          "retry-after": String(random() < 0.5 ? 0 : 5),
        });
      case "truncated JSON":
        return answer(200, '{"access_token":"tok-', {}, 400);
      case "wrong field types":
        return answer(
          200,
          '{"access_token":42,"expires_in":"60","token_type":"Bearer"}',
        );
      case "429": {
        const reset = 1 + Math.floor(random() * 3);
        blockedUntil = clock() + reset * 1000;
        blockedAfter = accepted;
        return answer(429, '{"error":"too_many_requests"}', {
          "idp-client-quota-limit": `b=per_hour;q=100;r=0;t=${reset}`,
        });
      }
      case "slow":
        await sleep(60); // past the provider's 25 ms request timeout
        return answer(200, token(), quota);
      case "garbage quota header":
        return answer(200, token(), {
          "idp-client-quota-limit": "b=;q=zz,,;;=x",
        });
    }
  }

  return {
    url: "http://127.0.0.1:9/token",
    // The server goes on with a request its client gave up on.
    fetch: fetchOver((request) => {
      const handler = serve(request, ++accepted);
      handlers.add(handler);
      handler.catch(() => {}).finally(() => handlers.delete(handler));
      return handler;
    }),
    stats,
    /** Resolves when every request taken has been answered. */
    idle: () => Promise.allSettled([...handlers]),
  };
}

Deno.test("the provider under random faults: a valid token or a typed error, never a hang", async () => {
  await withFakeTimers(async (timers) => {
    const random = seeded(SEED);
    const clock = manualClock();
    const server = faultyTokenEndpoint(random, clock);
    const provider = createTokenProvider({
      tokenUrl: server.url,
      audience: "soak",
      clientId: "soak-client",
      clientSecret: SECRET,
      fetch: server.fetch,
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
    const inspected = new Set<string>();
    const bursts = 400;
    const started = clock();
    const call = async () => {
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
        printed.push(String(error), JSON.stringify(error));
        // Inspected whole (stack and causes: slow) once per kind of error.
        const kind = `${(error as Error).name} ${
          (error as { reason?: string }).reason
        } ${(error as { status?: number }).status}`;
        if (!inspected.has(kind)) {
          inspected.add(kind);
          printed.push(Deno.inspect(error, { depth: 5 }));
        }
        if (error instanceof QuotaExceededError) results.quota++;
        else if (error instanceof TokenRequestError) results.typed++;
        else results.wrong.push(error);
      } finally {
        clearTimeout(timer);
      }
    };
    for (let burst = 0; burst < bursts; burst++) {
      await drive(timers, Promise.all(background.splice(0)));
      clock.advance(Math.floor(random() * 2500));
      const size = 1 + Math.floor(random() * 16);
      await drive(timers, Promise.all(Array.from({ length: size }, call)));
    }
    // Let a background refresh, and a slow answer, still under way finish.
    await drive(timers, Promise.all(background.splice(0)));
    await drive(timers, server.idle());

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
  // The fake in process, on fake time: its faults, the retries' waits and
  // the limiter's pause after each 429 pass as the clock says, not waited.
  await withFakeTimers(async (timers) => {
    const now = () => timers.now;
    for (let run = 0; run < 40; run++) {
      tally.runs++;
      using api = inProcessFake({ items: { cardholders: 60 }, now });
      const faults = Array.from(
        { length: Math.floor(random() * 4) },
        () => faultKinds[Math.floor(random() * faultKinds.length)]!,
      );
      // Pages in flight take faults in any order; put them after the first page.
      api.service.injectApiFaults({ kind: "delay", ms: 0 }, ...faults);
      const client = clientOf(api, {
        now,
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
      const listing = (async () => {
        for await (
          const row of client.list<{ cardholderID: string }>("cardholders", {
            limit: 5 + Math.floor(random() * 20),
            concurrency: 1 + Math.floor(random() * 4),
            signal: controller.signal,
          })
        ) {
          seen.push(row.cardholderID);
        }
      })();
      try {
        await drive(timers, listing);
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
          ok(
            !JSON.stringify(error).includes("Bearer "),
            "no token in the error",
          );
        } else tally.wrong.push(error);
      } finally {
        controller.abort();
      }
    }
  });
  console.log(
    `list soak (seed ${
      SEED + 1
    }): ${tally.runs} runs: ${tally.complete} complete, ` +
      `${tally.apiErrors} ApiError, ${tally.aborted} aborted`,
  );
  deepStrictEqual(tally.wrong, []);
  ok(tally.complete > 0 && tally.apiErrors > 0);
});
