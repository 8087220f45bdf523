// Issues 22 and 27: one invariant for the quota of a client, whatever the
// interleaving. Providers (a new one now and then, over the same store, as
// new processes or isolates would be) and their clients run against the fake
// service through random sequences of 200s, 401s, 429s with odd Retry-After
// values, malformed answers, 5xx asking to wait an hour, network failures,
// endpoints broken for hours, revocations, clock leaps, concurrent callers
// and callers that hang up mid-flight. Every token request the fake sees must
// be justified: the first, one after a block or the escalating cooldown has
// ended, one for a token near its expiry, or the one 401 renewal an hour the
// whole fleet allows. Time is a manual clock.

import { deepStrictEqual, ok } from "node:assert/strict";
import fc from "fast-check";
import { ApiError, TokenRequestError } from "../src/core/errors.ts";
import { createClient } from "../src/client/mod.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { createMemoryTokenStore } from "../src/store/mod.ts";
import {
  createFakePartnerService,
  type FakeFault,
} from "../src/testing/mod.ts";
import { parseQuotaHeader } from "../src/core/quota.ts";
import { manualClock } from "./_helpers.ts";
import { runs } from "./_property_runs.ts";
import { type Action, action } from "./_quota_actions.ts";

const HOUR = 3_600_000;
const LIFETIME = 3_600; // seconds
const FIRST_COOLDOWN = 10_000;
const MAX_COOLDOWN = 15 * 60_000;
/** The provider's default: a longer Retry-After on a 5xx or 403 sets the cooldown. */
const MAX_RETRY_AFTER = 30_000;

/** What the fake answered a token request, as the test reads it. */
interface Seen {
  readonly at: number;
  readonly outcome: "ok" | "blocked" | "failed";
  /**
   * For "ok": when the token expires; for "blocked": the earliest allowed
   * next request; for "failed": what the server asked (`Retry-After` on a
   * 5xx or 403, in ms), the cooldown being the checker's to compute.
   */
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
  if (!response.ok) return { at, outcome: "failed", until: asked(response) };
  try {
    const body = JSON.parse(await response.text());
    if (body.expires_in >= 1 && /^[\x21-\x7e]+$/.test(body.access_token)) {
      return { at, outcome: "ok", until: at + body.expires_in * 1000 };
    }
  } catch {
    // a body cut off, or not JSON
  }
  return { at, outcome: "failed", until: 0 };
}

/** The wait a 5xx or 403 asked for, in ms (0: none). */
function asked(response: Response): number {
  const status = response.status;
  const value = response.headers.get("retry-after") ?? "";
  if (status !== 403 && status < 500) return 0;
  return /^[0-9]+$/.test(value) ? Number(value) * 1000 : 0;
}

/**
 * The contract's cooldown after a failure, computed here on its own: 10 s,
 * doubling with each failure that follows within 15 minutes of the last
 * cooldown's end, up to 15 minutes; a success starts again; a Retry-After
 * longer than the retries wait for sets it when longer (at most 25 h).
 */
function cooldowns(log: readonly Seen[]): number[] {
  let failures = 0;
  let lastEnd = -Infinity;
  return log.map((seen) => {
    if (seen.outcome === "ok") failures = 0;
    if (seen.outcome !== "failed") return seen.until;
    failures = failures > 0 && seen.at - lastEnd < MAX_COOLDOWN
      ? failures + 1
      : 1;
    const escalated = Math.min(
      FIRST_COOLDOWN * 2 ** (failures - 1),
      MAX_COOLDOWN,
    );
    const wait = seen.until > MAX_RETRY_AFTER
      ? Math.max(escalated, Math.min(seen.until, 25 * HOUR))
      : escalated;
    lastEnd = seen.at + wait;
    return lastEnd;
  });
}

/** Every request justified by the one before it; 401 renewals an hour apart. */
function checkLog(log: readonly Seen[]): void {
  let lastRenewal = -Infinity;
  const ends = cooldowns(log);
  for (let i = 1; i < log.length; i++) {
    const before = { ...log[i - 1]!, until: ends[i - 1]! };
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
    // One secret for every run: its store key is stretched once per process.
    credentials: {
      clientId: "property-client",
      clientSecret: "property-secret",
    },
  });
  const main = "http://127.0.0.1:9";
  const environment = service.environmentAt(main, "http://127.0.0.1:10");
  const log: Seen[] = [];
  const pending: Promise<void>[] = [];
  let outage: FakeFault | undefined;
  // The fake served in process: every request reaches it as a Request.
  const serve: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    if (!request.url.startsWith(main)) return await service.handlePci(request);
    const token = new URL(request.url).pathname ===
      environment.tokenUrl.pathname;
    if (token && outage !== undefined) service.injectTokenFaults(outage);
    const response = await service.handle(request);
    if (!token) return response;
    const at = clock();
    pending.push(
      classify(response.clone(), at).then((seen) => void log.push(seen)),
    );
    return response;
  };
  // Every process of the fleet shares this store; each has its own provider.
  const store = createMemoryTokenStore();
  const background: Promise<unknown>[] = [];
  const newProcess = () => {
    const tokenProvider = createTokenProvider({
      ...environment,
      ...service.credentials,
      now: clock,
      fetch: serve,
      retry: false,
      store,
      // The clock leaps only once background refreshes are done: a refresh
      // still running when it jumps minutes would look overdue, which in
      // reality only work a runtime dropped can be.
      waitUntil: (promise) => void background.push(promise),
    });
    return createClient({
      environment,
      tokenProvider,
      fetch: serve,
      now: clock,
      retry: false,
    });
  };
  let client = newProcess();
  const call = async (hangUp = false) => {
    const caller = new AbortController();
    try {
      const pending = client.fetch("organizations", { signal: caller.signal });
      if (hangUp) caller.abort(new Error("hung up"));
      const response = await pending;
      await response.body?.cancel();
    } catch (error) {
      ok(
        error instanceof TokenRequestError || error instanceof ApiError ||
          (hangUp && caller.signal.aborted),
        String(error),
      );
    }
  };
  for (const step of actions) {
    reach(step);
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
      case "new process":
        await Promise.all(background.splice(0));
        client = newProcess();
        break;
      case "outage":
        outage = step.fault;
        for (let minute = 0; minute < step.minutes; minute += 5) {
          await call();
          await Promise.all(background.splice(0));
          clock.advance(5 * 60_000);
        }
        outage = undefined;
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
        await Promise.all([
          ...Array.from({ length: step.count }, () => call()),
          ...Array.from({ length: step.hangUps }, () => call(true)),
        ]);
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
  for (const seen of log) stats.reached.add(`token ${seen.outcome}`);
}

const stats = { runs: 0, requests: 0, calls: 0, reached: new Set<string>() };

/** Notes the kind of `step`, and of the fault it injects, as reached. */
function reach(step: Action): void {
  stats.reached.add(step.kind);
  if (step.kind === "calls" && step.unauthorized) {
    stats.reached.add("calls with 401s");
  }
  if (step.kind === "calls" && step.hangUps > 0) {
    stats.reached.add("calls with hang-ups");
  }
  if (step.kind === "token fault" || step.kind === "outage") {
    const { fault } = step;
    stats.reached.add(
      `fault ${fault.kind === "status" ? fault.status : fault.kind}`,
    );
  }
}

/**
 * Every kind of step the generators make, and every outcome of a token
 * request: the few runs of the quick subset must still reach each of them.
 */
const KINDS = [
  "advance",
  "token fault",
  "calls",
  "calls with 401s",
  "calls with hang-ups",
  "revoke",
  "new process",
  "outage",
  ...[429, 500, 401, 503, 403, "body", "drop"].map((kind) => `fault ${kind}`),
  "token ok",
  "token blocked",
  "token failed",
];

Deno.test("across random interleavings, every token request is justified and none is sent while blocked", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(action, { minLength: 10, maxLength: 40, size: "max" }),
      runScenario,
    ),
    { numRuns: runs(25, 800), seed: 20261122 },
  );
  console.log(
    `quota property: ${stats.runs} runs, ${stats.calls} call rounds, ${stats.requests} token requests`,
  );
  ok(stats.requests > stats.runs, "the scenarios did request tokens");
  const missed = KINDS.filter((kind) => !stats.reached.has(kind));
  deepStrictEqual(missed, [], "every kind of step and outcome was reached");
});
