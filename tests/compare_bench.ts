// deno task bench
//
// Our token provider against what a user would pick instead, in one run,
// against the same fake token server on loopback:
// - @badgateway/oauth2-client: OAuth2Fetch, client credentials, its own cache;
// - openid-client v6: clientCredentialsGrant, which has no cache, alone and
//   with the 10-line cache a user would add (then it is at the floor: its
//   requests are one per lifetime, as ours);
// - naive: one requestToken() per call.
// The peers post form bodies as they do by default; the fake takes them, so
// no adapter adds to their latency. The peers are used here only, never by
// the library.
//
// Scenarios: 1,000 concurrent cold calls; 10,000 calls spread over three
// token lifetimes; a burst of 1,000 inside the refresh window; calls past the
// quota. Every contender runs behind the same limit of 256 calls in flight.
// For each: token requests, failed calls, tokens that were no longer valid
// when handed out, and p50/p95/p99 latency of getting a token, over five
// rounds. The floor for token requests is one per token lifetime (plus one
// per 429 reset past the quota); for latency, one round trip when cold and
// nothing when warm.

import { OAuth2Client, OAuth2Fetch } from "npm:@badgateway/oauth2-client@3.3.1";
import * as oidc from "npm:openid-client@6.8.9";
import { createTokenProvider, requestToken } from "../src/token/mod.ts";
import {
  type FakePartnerApi,
  type FakePartnerApiOptions,
  startFakePartnerApi,
} from "../src/testing/mod.ts";

type GetToken = () => Promise<string>;
type Contender = { name: string; make: (api: FakePartnerApi) => GetToken };

const CONTENDERS: Contender[] = [
  {
    name: "@partner-api/client",
    make: (api) => {
      const provider = createTokenProvider({
        ...api.environment,
        ...api.credentials,
      });
      return async () => (await provider.getToken()).accessToken;
    },
  },
  {
    name: "@badgateway/oauth2-client",
    make: (api) => {
      const client = new OAuth2Client({
        server: api.environment.tokenUrl.origin,
        tokenEndpoint: api.environment.tokenUrl.pathname,
        clientId: api.credentials.clientId,
        clientSecret: api.credentials.clientSecret,
        authenticationMethod: "client_secret_post",
      });
      const wrapper = new OAuth2Fetch({
        client,
        getNewToken: () =>
          client.clientCredentials({
            extraParams: { audience: api.environment.audience },
          }),
        scheduleRefresh: false,
      });
      return async () => (await wrapper.getToken()).accessToken;
    },
  },
  {
    name: "openid-client v6 (no cache)",
    make: (api) => {
      const grant = openidGrant(api);
      return async () => (await grant()).access_token;
    },
  },
  {
    name: "openid-client v6 + a 10-line cache",
    make: (api) => {
      // What a user adds to it: one flight at a time, reuse until a minute
      // (or a tenth of the lifetime) before expiry.
      const grant = openidGrant(api);
      let token: { value: string; until: number } | undefined;
      let flight: Promise<string> | undefined;
      return async () => {
        if (token && Date.now() < token.until) return token.value;
        return await (flight ??= grant().then((answer) => {
          const lifetime = (answer.expires_in ?? 3600) * 1000;
          const until = Date.now() + lifetime - Math.min(60_000, lifetime / 10);
          token = { value: answer.access_token, until };
          return token.value;
        }).finally(() => flight = undefined));
      };
    },
  },
  {
    name: "naive (a request per call)",
    make: (api) => async () =>
      (await requestToken({ ...api.environment, ...api.credentials }))
        .accessToken,
  },
];

/** openid-client's client-credentials grant against the fake. */
function openidGrant(api: FakePartnerApi) {
  const config = new oidc.Configuration(
    {
      issuer: api.environment.tokenUrl.origin,
      token_endpoint: api.environment.tokenUrl.href,
    },
    api.credentials.clientId,
    api.credentials.clientSecret,
  );
  oidc.allowInsecureRequests(config); // the fake is plain http on loopback
  return () =>
    oidc.clientCredentialsGrant(config, {
      audience: api.environment.audience,
    });
}

interface Outcome {
  requests: number;
  failed: number;
  stale: number;
  latencies: number[];
}

/**
 * At most `limit` calls in flight, the rest queued, for every contender
 * alike: a peer that sends a request per call would otherwise open
 * thousands of connections at once and die of EMFILE, and a comparison
 * where one side crashes measures nothing. Queueing time counts in latency.
 */
function limited(getToken: GetToken, limit = 256): GetToken {
  let active = 0;
  const queue: (() => void)[] = [];
  return async () => {
    if (active >= limit) await new Promise<void>((go) => queue.push(go));
    active++;
    try {
      return await getToken();
    } finally {
      active--;
      queue.shift()?.();
    }
  };
}

/** Runs `calls` calls of `getToken`, each started at `startAt(i)` ms from now. */
async function measure(
  api: FakePartnerApi,
  getToken: GetToken,
  calls: number,
  startAt: (i: number) => number,
): Promise<Outcome> {
  const before = api.tokenRequests;
  const outcome: Outcome = { requests: 0, failed: 0, stale: 0, latencies: [] };
  const origin = performance.now();
  await Promise.all(Array.from({ length: calls }, async (_, i) => {
    const wait = origin + startAt(i) - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const started = performance.now();
    try {
      const token = await getToken();
      outcome.latencies.push(performance.now() - started);
      if (!api.isValidToken(token)) outcome.stale++;
    } catch {
      outcome.failed++;
    }
  }));
  outcome.requests = api.tokenRequests - before;
  return outcome;
}

const LIFETIME = 1000; // ms: three lifetimes fit in a few seconds of real time
const SCENARIOS: {
  name: string;
  fake: FakePartnerApiOptions;
  run: (api: FakePartnerApi, getToken: GetToken) => Promise<Outcome>;
  /** The goal of the p50 ratio, where the design sets one. */
  goal?: string;
}[] = [
  {
    name: "1,000 concurrent calls, cold",
    fake: {},
    goal: "≤ 1.00×, issue 40",
    run: (api, get) => measure(api, get, 1000, () => 0),
  },
  {
    name: "10,000 calls over three 1 s lifetimes",
    fake: { tokenLifetime: LIFETIME },
    run: (api, get) => measure(api, get, 10_000, (i) => (i * 3000) / 10_000),
  },
  {
    // 75 ms before expiry: inside every client's last tenth of a 1 s token,
    // so the burst meets the refresh instead of straddling the expiry.
    name: "1,000 calls at once, 75 ms before the token expires",
    fake: { tokenLifetime: LIFETIME },
    run: async (api, get) => {
      await get();
      return measure(api, get, 1000, () => LIFETIME - 75);
    },
  },
  {
    name: "calls past the quota (2 tokens/h, 1 s tokens, 300 calls over 3 s)",
    fake: { tokenLifetime: LIFETIME, quota: { perHour: 2 } },
    run: (api, get) => measure(api, get, 300, (i) => i * 10),
  },
];

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

// Warm every contender up first (JIT, connections), or whichever runs first
// pays for it in the first scenario.
for (const contender of CONTENDERS) {
  await using api = await startFakePartnerApi({
    quota: { perHour: 1e9, perDay: 1e9 },
  });
  await measure(api, contender.make(api), 200, () => 0);
}

const ms = (value: number) =>
  Number.isNaN(value) ? "-" : `${value.toFixed(2)} ms`;
console.log(
  `Token providers compared, ${
    new Date().toISOString().slice(0, 10)
  }, deno task bench\n`,
);
// Five rounds per scenario, each in another order, so that no contender
// always runs first; each row is the round with the median p50, and "stale"
// the worst round. Each run starts once the one before it has settled: a
// contender that sends a request per call leaves a thousand sockets closing
// and their garbage behind, and in the rotation the same contender always
// follows it (ours, at first: 1.5-4× badgateway's p50 when cold, against
// 0.9-1.0× with a pause and a collection between runs).
const ROUNDS = 5;
/** Lets the last run's sockets close and collects its garbage. */
async function settle(): Promise<void> {
  await new Promise((done) => setTimeout(done, 100));
  (globalThis as { gc?: () => void }).gc?.();
}
for (const scenario of SCENARIOS) {
  const runs = new Map<Contender, Outcome[]>(CONTENDERS.map((c) => [c, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = [...CONTENDERS.slice(round), ...CONTENDERS.slice(0, round)];
    for (const contender of order) {
      await settle();
      await using api = await startFakePartnerApi({
        quota: { perHour: 1e9, perDay: 1e9 },
        ...scenario.fake,
      });
      runs.get(contender)!.push(
        await scenario.run(api, limited(contender.make(api))),
      );
    }
  }
  const median = (outcomes: Outcome[]) =>
    outcomes.toSorted((a, b) =>
      percentile(a.latencies, 0.5) - percentile(b.latencies, 0.5)
    )[
      Math.floor(outcomes.length / 2)
    ]!;
  const ours = median(runs.get(CONTENDERS[0]!)!);
  const rows = CONTENDERS.map((contender) => {
    const outcomes = runs.get(contender)!;
    const outcome = median(outcomes);
    return {
      client: contender.name,
      "token requests": outcome.requests,
      "× ours": `${
        (outcome.requests / Math.max(1, ours.requests)).toFixed(1)
      }×`,
      failed: outcome.failed,
      "stale (worst)": Math.max(...outcomes.map((o) => o.stale)),
      p50: ms(percentile(outcome.latencies, 0.5)),
      p95: ms(percentile(outcome.latencies, 0.95)),
      p99: ms(percentile(outcome.latencies, 0.99)),
    };
  });
  console.log(scenario.name);
  console.table(rows);
  // Only where the design sets a goal: a warm p50 is a ratio of
  // sub-microsecond readings.
  if (scenario.goal === undefined) continue;
  const peer = median(runs.get(CONTENDERS[1]!)!);
  console.log(
    `p50 of ${CONTENDERS[0]!.name} ÷ ${
      CONTENDERS[1]!.name
    } (goal ${scenario.goal}): ${
      (percentile(ours.latencies, 0.5) / percentile(peer.latencies, 0.5))
        .toFixed(2)
    }×\n`,
  );
}
