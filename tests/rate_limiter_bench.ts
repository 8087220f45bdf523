// deno task bench
//
// Aborting N callers queued on the rate limiter, each with its own signal,
// in any order, costs O(N): each leaves the line in O(1). Side by side in
// one run, interleaved: aborting 50,000 queued callers once against the
// floor, aborting 5,000 ten times (as many callers in all, at a linear
// cost). Goal ≤ 2×, noise included; a line searched on each abort (O(N²))
// would be about 10×. Only the aborts are timed, not the queueing. (That
// callers sharing one signal share one listener is counted, not timed, in
// rate_limiter_abort_test.ts.)

import { createRateLimiter } from "../src/client/rate_limit.ts";
import { showRatio } from "./_bench_server.ts";

const N = 5_000;
const ROUNDS = 9;

/** `n` callers with their own signals, queued behind a full window. */
function queued(n: number) {
  const controllers = Array.from({ length: n }, () => new AbortController());
  const limiter = createRateLimiter({ requests: 1, interval: 60_000 });
  const first = limiter.take() as number;
  const waits = controllers.map((controller) =>
    (limiter.take(controller.signal) as Promise<number>).catch(() => {})
  );
  return {
    /** Every other one from the middle outwards, then the rest backwards. */
    async abortAll() {
      for (let i = n >> 1; i < n; i += 2) controllers[i]!.abort();
      for (let i = n - 1; i >= 0; i--) controllers[i]!.abort();
      await Promise.all(waits);
    },
    /** Ends the window's turn: no timer is left behind. */
    done: () => limiter.answered(first),
  };
}

/** The time `times` lines of `n` callers take to be aborted, queueing left out. */
async function abortTime(n: number, times: number): Promise<number> {
  let ms = 0;
  for (let i = 0; i < times; i++) {
    const line = queued(n);
    const started = performance.now();
    await line.abortAll();
    ms += performance.now() - started;
    line.done();
  }
  return ms;
}

await abortTime(N, 2); // warm up the JIT
await abortTime(10 * N, 1);
const ratios: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  // Each goes first in every other round, so that drift falls on both alike.
  const floorFirst = round % 2 === 0;
  const early = await abortTime(floorFirst ? N : 10 * N, floorFirst ? 10 : 1);
  const late = await abortTime(floorFirst ? 10 * N : N, floorFirst ? 1 : 10);
  ratios.push(floorFirst ? late / early : early / late);
}
ratios.sort((a, b) => a - b);
console.log(
  `aborting 50,000 queued callers ÷ 5,000 ten times (the floor), interleaved: ${
    showRatio({
      median: ratios[ROUNDS >> 1]!,
      min: ratios[0]!,
      max: ratios.at(-1)!,
    })
  }`,
);

for (const n of [N, 10 * N]) {
  Deno.bench({
    name: `abort ${n.toLocaleString("en")} queued callers, own signals`,
    group: "abort",
    baseline: n === N,
    n: 10,
    warmup: 2,
    async fn(b) {
      const line = queued(n);
      b.start();
      await line.abortAll();
      b.end();
      line.done();
    },
  });
}
