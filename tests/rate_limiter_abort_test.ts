// Aborting N queued callers costs O(N): each leaves the line in O(1), and
// callers sharing one signal share one listener on it (an EventTarget
// removes listeners in linear time each). Shown by counting the operations
// that cost more than O(1) and by comparing N with 10N, never by a time limit.

import { equal, ok } from "node:assert/strict";
import { createRateLimiter } from "../src/client/rate_limit.ts";

/** A signal whose listener calls are counted. */
function countedSignal() {
  const controller = new AbortController();
  const counts = { add: 0, remove: 0 };
  const { signal } = controller;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = (...args: Parameters<typeof add>) => {
    counts.add++;
    add(...args);
  };
  signal.removeEventListener = (...args: Parameters<typeof remove>) => {
    counts.remove++;
    remove(...args);
  };
  return { controller, signal, counts };
}

/** Queues `n` callers behind a full window; returns their settled promises. */
function queueBehindFullWindow(
  n: number,
  signalOf: (i: number) => AbortSignal,
) {
  const limiter = createRateLimiter({ requests: 1, interval: 60_000 });
  const first = limiter.take() as number;
  const waits = Array.from(
    { length: n },
    (_, i) => (limiter.take(signalOf(i)) as Promise<number>).catch((e) => e),
  );
  return { limiter, first, waits };
}

Deno.test("100,000 callers queued on one signal: one listener on it, and one abort ends them all", async () => {
  const { controller, signal, counts } = countedSignal();
  const { limiter, first, waits } = queueBehindFullWindow(
    100_000,
    () => signal,
  );
  equal(counts.add, 1, "one listener for the whole line");
  const reason = new Error("gave up");
  controller.abort(reason);
  const settled = await Promise.all(waits);
  ok(settled.every((value) => value === reason));
  equal(counts.remove, 0, "nothing removed one by one");
  limiter.answered(first); // no timer left behind: the sanitizer checks
});

Deno.test("callers with their own signals, aborted in any order: 10N cost about 10 times N", async () => {
  // The slowest of N against 10N; a queue that searched its line on each
  // abort (O(N²)) would take about 100 times as long.
  const run = async (n: number) => {
    const controllers = Array.from({ length: n }, () => new AbortController());
    const { limiter, first, waits } = queueBehindFullWindow(
      n,
      (i) => controllers[i]!.signal,
    );
    const started = Date.now();
    // Every other one from the middle outwards, then the rest backwards.
    for (let i = n >> 1; i < n; i += 2) controllers[i]!.abort();
    for (let i = n - 1; i >= 0; i--) controllers[i]!.abort();
    await Promise.all(waits);
    const ms = Math.max(1, Date.now() - started);
    limiter.answered(first);
    return ms;
  };
  await run(1000); // warm up the JIT
  const small = Math.min(await run(5000), await run(5000));
  const large = await run(50_000);
  console.log(`abort 5,000: ${small} ms, 50,000: ${large} ms`);
  ok(large < small * 40, `${large} ms for 10N against ${small} ms for N`);
});

Deno.test("leaving the line keeps the order of those who stay", async () => {
  const controllers = Array.from({ length: 6 }, () => new AbortController());
  const limiter = createRateLimiter({ requests: 1, interval: 1 });
  const first = limiter.take() as number;
  const order: number[] = [];
  const waits = controllers.map((controller, i) =>
    (limiter.take(controller.signal) as Promise<number>).then((ticket) => {
      order.push(i);
      limiter.answered(ticket);
    }, () => {})
  );
  for (const i of [0, 3, 5]) controllers[i]!.abort();
  limiter.answered(first);
  await Promise.all(waits);
  equal(order.join(), "1,2,4");
});
