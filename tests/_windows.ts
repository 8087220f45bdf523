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
  /** From the common start to the last process's end, in ms. */
  readonly elapsed: number;
  readonly limit: { readonly requests: number; readonly interval: number };
}

/**
 * Logs and checks a paced crawl: no 429, every request arrived, no window
 * held more than the limit, and it took at most 1.10× the limit's floor,
 * (⌈sent ÷ requests⌉ − 1) × interval.
 */
export function checkPacedFleet(
  { what, arrivals, sent, elapsed, limit }: PacedFleet,
): void {
  const floor = (Math.ceil(sent / limit.requests) - 1) * limit.interval;
  const refused = arrivals.filter(({ status }) => status === 429).length;
  console.log(
    `${what}, ${sent} requests at ${limit.requests} per ${limit.interval} ms: ${elapsed} ms, floor ${floor} ms (${
      (elapsed / floor).toFixed(3)
    }x), ${refused} x 429`,
  );
  equal(refused, 0, "no 429");
  equal(arrivals.length, sent);
  ok(
    mostInAnyWindow(arrivals.map(({ at }) => at), limit.interval) <=
      limit.requests,
  );
  ok(elapsed <= 1.1 * floor, `${elapsed} ms against a floor of ${floor} ms`);
}
