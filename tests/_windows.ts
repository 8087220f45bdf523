// Shared by the rate limiter tests and the fleet bench: how full a window
// got, counted from outside the limiter, and a crawl by several limiters.

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
