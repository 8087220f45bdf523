// Shared by the rate limiter tests and the fleet bench: how full a window
// got, counted from outside the limiter, and a crawl by several limiters.

import { equal, ok } from "node:assert/strict";
import { createClient } from "../src/client/mod.ts";
import { collect } from "../src/client/paginate.ts";
import type { RateLimiter } from "../src/client/rate_limit.ts";
import type { Environment } from "../src/core/environment.ts";
import {
  type FakePartnerApi,
  startFakePartnerApi,
} from "../src/testing/mod.ts";

/** The most sends that held a slot at one moment: from grant to answer + interval. */
export function mostAtOnce(
  spans: readonly (readonly [number, number])[],
  interval: number,
): number {
  const edges = spans.flatMap(([from, to]) => [
    [from, 1],
    [to + interval, -1],
  ]).sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let now = 0;
  let most = 0;
  for (const [, step] of edges) most = Math.max(most, now += step!);
  return most;
}

/**
 * A simulated fleet's invariant: never more than `requests` sends held a slot at once, and each process got at
 * least 1/(2N) of the sends counted (one send of slack for the turn under way at the end).
 */
export function checkFairFleet(
  spans: readonly (readonly [number, number])[],
  counts: readonly number[],
  { requests, interval }: { requests: number; interval: number },
): void {
  ok(mostAtOnce(spans, interval) <= requests);
  const total = counts.reduce((a, b) => a + b);
  for (const count of counts) {
    ok(count + 1 >= total / (2 * counts.length), `${counts}`);
  }
}

/** The most arrivals in any window of `interval` ms. */
export function mostInAnyWindow(
  times: readonly number[],
  interval: number,
): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last++) {
    while (sorted[last]! - sorted[first]! >= interval) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

/** Where {@linkcode crawlTogether} crawls: a fake, served or in process. */
export interface CrawlTarget {
  readonly environment: Environment;
  readonly credentials: { clientId: string; clientSecret: string };
  /** How requests reach it: the runtime's fetch unless given. */
  readonly fetch?: typeof fetch;
}

/**
 * Each limiter paces one client (as one process would) crawling the fake's
 * transactions, all at once; returns the status of every request sent.
 */
export async function crawlTogether(
  api: CrawlTarget,
  limiters: readonly RateLimiter[],
  now?: () => number,
): Promise<number[]> {
  const statuses: number[] = [];
  await Promise.all(limiters.map((rateLimit) =>
    collect(
      createClient({
        environment: api.environment,
        ...api.credentials,
        ...(api.fetch === undefined ? {} : { fetch: api.fetch }),
        ...(now === undefined ? {} : { now }),
        rateLimit,
        onEvent: (event) => {
          if (event.type === "api.request") statuses.push(event.status);
        },
      }).list("transactions", { limit: 100 }),
      { maxItems: 10_000 },
    )
  ));
  return statuses;
}

/** A fleet's crawl through a limited fake, as the fleet tests check it. */
export interface PacedFleet {
  /** What ran, for the log line. */
  readonly what: string;
  /** What reached the fake, when, and how it answered. */
  readonly arrivals: readonly {
    readonly at: number;
    readonly status: number;
  }[];
  /** How many requests the fleet sent in all. */
  readonly sent: number;
  readonly limit: { readonly requests: number; readonly interval: number };
}

/**
 * Logs and checks a paced crawl by the fake's own count: no 429, every
 * request arrived, and no window held more than the limit (so the crawl
 * took at least the limit's floor). How close to the floor it comes is a
 * timing goal, measured by `deno task bench` (fleet_rate_bench.ts), not
 * asserted here: a busy machine would fail it for no fault of the code.
 */
export function checkPacedFleet(
  { what, arrivals, sent, limit }: PacedFleet,
): void {
  const refused = arrivals.filter(({ status }) => status === 429).length;
  const most = mostInAnyWindow(arrivals.map(({ at }) => at), limit.interval);
  console.log(
    `${what}, ${sent} requests at ${limit.requests} per ${limit.interval} ms: ${refused} x 429, at most ${most} in a window`,
  );
  equal(refused, 0, "no 429");
  equal(arrivals.length, sent);
  ok(most <= limit.requests, `${most} arrivals in one window`);
}

/** An arrival at the fake of a fleet with priorities. */
export interface PriorityArrival {
  readonly at: number;
  readonly live: boolean;
  readonly status: number;
}

/**
 * Checks a fleet where one process crawls in the background and others
 * send `live` calls, by the fake's count: 0 x 429, every live call arrived,
 * the crawl never held more than `requests - reserve` slots of a window,
 * and the last live call arrived while the crawl still had calls to send.
 */
export function checkLiveFirst(
  arrivals: readonly PriorityArrival[],
  limit: { requests: number; interval: number },
  reserve: number,
  live: number,
): void {
  const background = arrivals.filter((arrival) => !arrival.live);
  const calls = arrivals.filter((arrival) => arrival.live);
  const lastLive = arrivals.lastIndexOf(calls.at(-1)!);
  const crawlAfter = arrivals.slice(lastLive).filter((a) => !a.live).length;
  const most = mostInAnyWindow(background.map(({ at }) => at), limit.interval);
  console.log(
    `${background.length} background and ${calls.length} live calls; at most ${most} background in a window; ${crawlAfter} background calls after the last live one`,
  );
  equal(arrivals.filter(({ status }) => status === 429).length, 0, "no 429");
  equal(calls.length, live);
  ok(most <= limit.requests - reserve, "the crawl left the reserve free");
  ok(crawlAfter > 0, "every live call served while the crawl had calls left");
}

/** The limit of the fleets with priorities, and the limiters' default reserve for it. */
export const PRIORITY_FLEET = {
  limit: { requests: 20, interval: 1000 },
  reserve: 2,
} as const;

/**
 * Runs a fleet with priorities against the fake at `PRIORITY_FLEET`'s limit,
 * then checks it with {@linkcode checkLiveFirst}, `live` live calls in all.
 * `run` starts the processes and returns once they are done; it is given the
 * fake and the arrivals so far (each API call the fake answers: live when
 * on `/api/organizations`, the live processes' calls, background otherwise).
 */
export async function runPriorityFleet(
  live: number,
  run: (
    api: FakePartnerApi,
    arrivals: readonly PriorityArrival[],
  ) => Promise<void>,
): Promise<void> {
  const arrivals: PriorityArrival[] = [];
  {
    await using api = await startFakePartnerApi({
      apiRateLimit: PRIORITY_FLEET.limit,
      items: { transactions: 10 },
      onRequest: ({ path, status }) => {
        if (!path.startsWith("/api/")) return;
        const live = path.startsWith("/api/organizations");
        arrivals.push({ at: Date.now(), live, status });
      },
    });
    await run(api, arrivals);
  }
  checkLiveFirst(arrivals, PRIORITY_FLEET.limit, PRIORITY_FLEET.reserve, live);
}
