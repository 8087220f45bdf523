// Issue 22: one invariant for the quota, whatever the interleaving. A
// provider and a client run against the fake service through random
// sequences of 200s, 401s, 429s with odd Retry-After values, malformed
// answers, network failures, revocations, clock leaps and concurrent
// callers. Every token request the fake sees must be justified: the first,
// one after a cooldown or a block has ended, one for a token near its
// expiry, or the one 401 renewal an hour allows. Time is a manual clock.

import { ok } from "node:assert/strict";
import fc from "fast-check";
import { ApiError, TokenRequestError } from "../src/core/errors.ts";
import { createClient } from "../src/client/mod.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import {
  createFakePartnerService,
  type FakeFault,
} from "../src/testing/mod.ts";
import { parseQuotaHeader } from "../src/core/quota.ts";
import { manualClock } from "./_helpers.ts";

const HOUR = 3_600_000;
const LIFETIME = 3_600; // seconds
const COOLDOWN = 10_000;

type Action =
  | { readonly kind: "advance"; readonly ms: number }
  | { readonly kind: "token fault"; readonly fault: FakeFault }
  | {
    readonly kind: "calls";
    readonly count: number;
    readonly unauthorized: boolean;
  }
  | { readonly kind: "revoke" };

const retryAfters = fc.constantFrom(
  undefined,
  "1.5",
  "-5",
  "+60",
  "0",
  "30",
  "7200",
  "soon",
  "Tue, 01 Jan 2019 00:00:00 GMT",
  "Fri, 31 Dec 2999 23:59:59 GMT",
);

const tokenFault: fc.Arbitrary<FakeFault> = fc.oneof(
  fc.tuple(retryAfters, fc.integer({ min: 0, max: 4000 })).map((
    [retryAfter, reset],
  ) => ({
    kind: "status" as const,
    status: 429,
    headers: {
      "idp-client-quota-limit": `b=per_hour;q=10;r=0;t=${reset}`,
      ...(retryAfter === undefined ? {} : { "retry-after": retryAfter }),
    },
  })),
  fc.constant<FakeFault>({
    kind: "body",
    body: '{"access_token":"a b","expires_in":60,"token_type":"Bearer"}',
  }),
  fc.constant<FakeFault>({
    kind: "body",
    body: '{"access_token":"abc","expires_in":0,"token_type":"Bearer"}',
  }),
  fc.constant<FakeFault>({ kind: "status", status: 500 }),
  fc.constant<FakeFault>({ kind: "status", status: 401 }),
  fc.constant<FakeFault>({ kind: "drop" }),
);

const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.integer({ min: 0, max: 40 * 60_000 }).map((ms) => ({
      kind: "advance" as const,
      ms,
    })),
  },
  {
    weight: 2,
    arbitrary: tokenFault.map((fault) => ({
      kind: "token fault" as const,
      fault,
    })),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("calls" as const),
      count: fc.integer({ min: 1, max: 5 }),
      unauthorized: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "revoke" as const }) },
);

/** What the fake answered a token request, as the test reads it. */
interface Seen {
  readonly at: number;
  readonly outcome: "ok" | "blocked" | "failed";
  /** For "ok": when the token expires; for "blocked": the earliest allowed next request. */
  readonly until: number;
}

/** The contract's block after a 429, computed here on its own. */
function blockEnd(response: Response, at: number): number {
  const reset = parseQuotaHeader(response.headers.get("idp-client-quota-limit"))
    .filter((bucket) => bucket.remaining === 0)
    .reduce((max, bucket) => Math.max(max, bucket.resetAfter * 1000), 0);
  const value = response.headers.get("retry-after") ?? "";
  let asked = 0;
  if (/^[0-9]+$/.test(value)) asked = Number(value) * 1000;
  else if (/GMT$/.test(value)) asked = Math.max(0, Date.parse(value) - at);
  return at + Math.min(Math.max(reset, asked), 25 * HOUR);
}

async function classify(response: Response, at: number): Promise<Seen> {
  if (response.status === 429) {
    return { at, outcome: "blocked", until: blockEnd(response, at) };
  }
  if (!response.ok) return { at, outcome: "failed", until: at + COOLDOWN };
  try {
    const body = JSON.parse(await response.text());
    if (body.expires_in >= 1 && /^[\x21-\x7e]+$/.test(body.access_token)) {
      return { at, outcome: "ok", until: at + body.expires_in * 1000 };
    }
  } catch {
    // a body cut off, or not JSON
  }
  return { at, outcome: "failed", until: at + COOLDOWN };
}

/** Every request justified by the one before it; 401 renewals an hour apart. */
function checkLog(log: readonly Seen[]): void {
  let lastRenewal = -Infinity;
  for (let i = 1; i < log.length; i++) {
    const before = log[i - 1]!;
    const now = log[i]!;
    const start = log[0]!.at;
    const where = `request ${i} at +${
      now.at - start
    } ms, after ${before.outcome} at +${before.at - start} ms (until +${
      before.until - start
    } ms)`;
    if (before.outcome !== "ok") {
      ok(now.at >= before.until, `sent while blocked or cooling: ${where}`);
      continue;
    }
    if (now.at >= before.until - (LIFETIME * 1000) / 2) continue; // near expiry
    ok(
      now.at - lastRenewal >= HOUR,
      `a second 401 renewal in an hour: ${where}`,
    );
    lastRenewal = now.at;
  }
}

async function runScenario(actions: readonly Action[]): Promise<void> {
  const clock = manualClock();
  const service = createFakePartnerService({
    now: clock,
    tokenLifetime: LIFETIME * 1000,
    quota: { perHour: 1_000_000 },
  });
  const main = "http://127.0.0.1:9";
  const environment = service.environmentAt(main, "http://127.0.0.1:10");
  const log: Seen[] = [];
  const pending: Promise<void>[] = [];
  // The fake served in process: every request reaches it as a Request.
  const serve: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    if (!request.url.startsWith(main)) return await service.handlePci(request);
    const response = await service.handle(request);
    if (new URL(request.url).pathname !== environment.tokenUrl.pathname) {
      return response;
    }
    const at = clock();
    pending.push(
      classify(response.clone(), at).then((seen) => void log.push(seen)),
    );
    return response;
  };
  const tokenProvider = createTokenProvider({
    ...environment,
    ...service.credentials,
    now: clock,
    fetch: serve,
    retry: false,
    // The clock leaps only once background refreshes are done: a refresh
    // still running when it jumps minutes would look overdue, which in
    // reality only work a runtime dropped can be.
    waitUntil: (promise) => void background.push(promise),
  });
  const background: Promise<unknown>[] = [];
  const client = createClient({
    environment,
    tokenProvider,
    fetch: serve,
    now: clock,
    retry: false,
  });
  const call = async () => {
    try {
      const response = await client.fetch("organizations");
      await response.body?.cancel();
    } catch (error) {
      ok(
        error instanceof TokenRequestError || error instanceof ApiError,
        String(error),
      );
    }
  };
  for (const step of actions) {
    switch (step.kind) {
      case "advance":
        await Promise.all(background.splice(0));
        clock.advance(step.ms);
        break;
      case "token fault":
        service.injectTokenFaults(step.fault);
        break;
      case "revoke":
        service.revokeTokens();
        break;
      case "calls":
        if (step.unauthorized) {
          service.injectApiFaults(
            ...Array.from({ length: step.count }, () => ({
              kind: "status" as const,
              status: 401,
            })),
          );
        }
        await Promise.all(Array.from({ length: step.count }, call));
        break;
    }
  }
  await Promise.all([...pending, ...background]);
  service.close();
  log.sort((a, b) => a.at - b.at);
  checkLog(log);
  stats.runs++;
  stats.requests += log.length;
  stats.calls += actions.filter((a) => a.kind === "calls").length;
}

const stats = { runs: 0, requests: 0, calls: 0 };

Deno.test("across random interleavings, every token request is justified and none is sent while blocked", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(action, { minLength: 10, maxLength: 40, size: "max" }),
      runScenario,
    ),
    { numRuns: 500, seed: 20261122 },
  );
  console.log(
    `quota property: ${stats.runs} runs, ${stats.calls} call rounds, ${stats.requests} token requests`,
  );
  ok(stats.requests > stats.runs, "the scenarios did request tokens");
});
