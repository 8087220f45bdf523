// Shared by the rate limiter tests and the fleet bench: how full a window
// got, counted from outside the limiter, and a crawl by several limiters.

import { equal, ok } from "node:assert/strict";
import { createClient } from "../src/client/mod.ts";
import { collect } from "../src/client/paginate.ts";
import type { RateLimiter } from "../src/client/rate_limit.ts";
import type { Environment } from "../src/core/environment.ts";

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
