// deno task bench
//
// Live calls beside a background crawl on one limiter, in one process
// (issue 47): the fake's limit scaled down (60 requests per 5 s), live calls
// at a quarter of it (one every 333 ms), a crawl of transactions at
// `priority: "low"` beside them. Runs side by side:
// - the live calls alone, through createRateLimiter;
// - for the default reserve (a tenth: 6 slots) and for one sized to the
//   live calls a window holds (15, plus one): the same calls beside the
//   crawl, through createRateLimiter and through a hand-written two-queue
//   limiter as a user would write one (the floor). Live calls beyond the
//   reserve wait behind the crawl's share with either limiter: the goal holds
//   for a reserve that covers them, as docs/rate-limit.md says.
// Printed as ratios in one run: the live calls' p99 wait (goal: at most one
// slot, interval / requests, above the calls alone), the crawl's rate
// against the floor's and against what the spare budget allows, and the
// 429s (goal 0).

import { createClient } from "../src/client/mod.ts";
import { createRateLimiter } from "../src/client/rate_limit.ts";
import type { RateLimit, RateLimiter } from "../src/core/rate_limiter.ts";
import type { RatePriority } from "../src/core/_rate_options.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";

const LIMIT: RateLimit = { requests: 60, interval: 5000 };
const LIVE_EVERY = LIMIT.interval / LIMIT.requests * 4;
const LIVE_CALLS = 60;
/** Slot interval: one slot's share of the window. */
const SLOT = LIMIT.interval / LIMIT.requests;

/**
 * The floor: two queues, live first, a background request only while no
 * live one waits and `reserve` slots stay free; a slot counts from its
 * answer. What a user would write over a sliding window log.
 */
class TwoQueueLimiter implements RateLimiter {
  readonly limit = LIMIT;
  readonly #reserve: number;
  readonly #times = new Map<number, number>();
  #next = 0;
  readonly #live: (() => void)[] = [];
  readonly #low: (() => void)[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(reserve: number) {
    this.#reserve = reserve;
  }

  take(_signal?: AbortSignal, priority?: RatePriority): Promise<number> {
    return new Promise((resolve) => {
      const go = () => {
        const ticket = this.#next++;
        this.#times.set(ticket, Infinity);
        resolve(ticket);
      };
      (priority === "low" ? this.#low : this.#live).push(go);
      this.#pump();
    });
  }
  answered(ticket: number): void {
    this.#times.set(ticket, Date.now());
    this.#pump();
  }
  refused(): void {}
  #held(now: number): number {
    let held = 0;
    for (const [ticket, at] of this.#times) {
      if (at > now - LIMIT.interval) held++;
      else this.#times.delete(ticket);
    }
    return held;
  }
  #pump(): void {
    clearTimeout(this.#timer);
    while (true) {
      const held = this.#held(Date.now());
      if (this.#live.length > 0 && held < LIMIT.requests) {
        this.#live.shift()!();
      } else if (
        this.#live.length === 0 && this.#low.length > 0 &&
        held < LIMIT.requests - this.#reserve
      ) {
        this.#low.shift()!();
      } else break;
    }
    if (this.#live.length + this.#low.length > 0) {
      this.#timer = setTimeout(() => this.#pump(), 10);
    }
  }
}

/** One run: live waits (ms), crawl calls sent during it, 429s. */
async function run(rateLimit: RateLimiter, crawl: boolean) {
  let refused = 0;
  await using api = await startFakePartnerApi({
    apiRateLimit: LIMIT,
    items: { transactions: 100_000 },
    onRequest: ({ status }) => status === 429 && refused++,
  });
  const waits: number[] = [];
  const options = { environment: api.environment, ...api.credentials };
  const live = createClient({
    ...options,
    rateLimit,
    onEvent: (event) => {
      if (event.type === "rate.wait" && event.priority !== "low") {
        waits.push(event.delayMs);
      }
    },
  });
  const background = createClient({ ...options, rateLimit, priority: "low" });
  const stop = new AbortController();
  let crawled = 0;
  const crawling = crawl
    ? (async () => {
      try {
        for await (
          const _ of background.pages("transactions", {
            limit: 10,
            signal: stop.signal,
          })
        ) crawled++;
      } catch { /* stopped */ }
    })()
    : Promise.resolve();
  const started = Date.now();
  const calls: Promise<void>[] = [];
  for (let i = 0; i < LIVE_CALLS; i++) {
    calls.push(
      live.fetch("organizations").then((r) => r.body?.cancel()),
    );
    await new Promise((done) => setTimeout(done, LIVE_EVERY));
  }
  await Promise.all(calls);
  const seconds = (Date.now() - started) / 1000;
  stop.abort();
  await crawling;
  // A call that did not wait counts as 0.
  const all = [...waits, ...Array(LIVE_CALLS - waits.length).fill(0)]
    .sort((a, b) => a - b);
  return {
    p99: all[Math.floor(all.length * 0.99)]!,
    rate: crawled / seconds,
    refused,
  };
}

/** The default reserve, a tenth of the window, and one sized to the live calls a window holds (plus one). */
const RESERVES = {
  "the default reserve (a tenth)": Math.max(1, Math.ceil(LIMIT.requests / 10)),
  "a reserve sized to the live calls": LIMIT.interval / LIVE_EVERY + 1,
};
const alone = await run(createRateLimiter(LIMIT), false);
for (const [name, reserve] of Object.entries(RESERVES)) {
  const beside = await run(createRateLimiter({ ...LIMIT, reserve }), true);
  const floor = await run(new TwoQueueLimiter(reserve), true);
  // What the spare budget allows the crawl: the limit less the live calls and
  // the reserve, per second.
  const spare = (LIMIT.requests - LIMIT.interval / LIVE_EVERY - reserve) /
    (LIMIT.interval / 1000);
  console.log(
    `${name} (${reserve} of ${LIMIT.requests}): live p99 wait beside the crawl, over the calls alone: +${
      (beside.p99 - alone.p99).toFixed(0)
    } ms = ${
      ((beside.p99 - alone.p99) / SLOT).toFixed(2)
    } slots (goal ≤ 1); ÷ the two-queue floor's: ${
      (beside.p99 / Math.max(1, floor.p99)).toFixed(3)
    }×`,
  );
  console.log(
    `${name}: the crawl's rate ÷ the two-queue floor's: ${
      (beside.rate / floor.rate).toFixed(3)
    }×; ÷ what the spare budget allows: ${(beside.rate / spare).toFixed(3)}×`,
  );
  console.log(
    `${name}: 429s: ${alone.refused} alone, ${beside.refused} beside the crawl, ${floor.refused} with the floor (goal 0)`,
  );
}

// take() and answered() of a live call: the path every paced call takes.
const shared = createRateLimiter({ requests: 100_000, interval: 1 });
Deno.bench({
  name: "take() and answered() of a live call",
  fn: () => {
    shared.answered(shared.take(undefined, "high") as number);
  },
});
