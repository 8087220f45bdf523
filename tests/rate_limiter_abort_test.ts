// Aborting N queued callers costs O(N): each leaves the line in O(1), and
// callers sharing one signal share one listener on it (an EventTarget
// removes listeners in linear time each). Shown by counting the operations
// that cost more than O(1); tests/rate_limiter_bench.ts times N against 10N.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { createRateLimiter } from "../src/client/rate_limit.ts";
import { createKvRateLimiter } from "../src/store/kv.ts";
import { withFakeTimers } from "./_helpers.ts";

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
  now: () => number = Date.now,
) {
  const limiter = createRateLimiter({ requests: 1, interval: 60_000, now });
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

Deno.test("callers with their own signals, aborted in any order: one listener each, each ends with its own reason, and the line is whole after", async () => {
  await withFakeTimers(async (timers) => {
    const n = 1000;
    const signals = Array.from({ length: n }, countedSignal);
    const { limiter, first, waits } = queueBehindFullWindow(
      n,
      (i) => signals[i]!.signal,
      () => timers.now,
    );
    ok(signals.every(({ counts }) => counts.add === 1), "one listener each");
    // Every other one from the middle outwards, then the rest backwards:
    // callers leave from the middle, the ends and next to those gone.
    for (let i = n >> 1; i < n; i += 2) signals[i]!.controller.abort(i);
    for (let i = n - 1; i >= 0; i--) signals[i]!.controller.abort(i);
    deepStrictEqual(
      await Promise.all(waits),
      Array.from({ length: n }, (_, i) => i),
    );
    ok(signals.every(({ counts }) => counts.remove === 0), "none searched for");
    // A caller who comes after them all is next in line.
    let next: number | undefined;
    void (limiter.take() as Promise<number>).then((ticket) => next = ticket);
    limiter.answered(first);
    await timers.tickAsync(60_000);
    ok(next !== undefined, "the next caller got its turn");
    limiter.answered(next);
  });
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

// r173a F3: a priority Fetch does not know ("LOW", "urgent") went ahead as a live one, past the reserve.
Deno.test("a take whose signal is no AbortSignal, or whose priority Fetch does not know, is refused (TypeError, option 'signal' or 'priority'), and the callers after it are served: queued, it threw at once and failed every take behind it, in process and on KV", async () => {
  await withFakeTimers(async (timers) => {
    using kv = await Deno.openKv(":memory:");
    const limit = { requests: 1, interval: 500, now: () => timers.now };
    const limiters = [createRateLimiter(limit), createKvRateLimiter(kv, limit)];
    for (const limiter of limiters) {
      limiter.answered(await limiter.take()); // full for 500 ms
      const bad = [
        ...[{}, "signal", 1].map((signal) => ({ signal, option: "signal" })),
        ...["LOW", "urgent", "", 5, null].map((priority) => ({
          priority,
          option: "priority",
        })),
      ] as { signal?: AbortSignal; priority?: "low"; option: string }[];
      for (const { signal, priority, option } of bad) {
        let refused: unknown;
        const taken = Promise.resolve(limiter.take(signal, priority));
        await taken.catch((error) => refused = error);
        ok(refused instanceof TypeError);
        equal((refused as TypeError & { option: string }).option, option);
      }
      const next = Promise.resolve(limiter.take());
      // Ticked until served: KV's reads are real I/O, which one tick may outrun
      // (then the take waits on a fake timer nothing advances).
      let served = false;
      next.finally(() => served = true).catch(() => {});
      while (!served) await timers.tickAsync(100);
      limiter.answered(await next);
      await (limiter as Partial<AsyncDisposable>)[Symbol.asyncDispose]?.();
    }
  });
});

Deno.test("on workerd, each waiting caller's own timer wakes the line where the pause's timer died, and none is left once the callers are served or gone", async () => {
  const own = Object.getOwnPropertyDescriptor(navigator, "userAgent");
  Object.defineProperty(navigator, "userAgent", {
    value: "Cloudflare-Workers",
    configurable: true,
  });
  const { PriorityLines } = await import("../src/core/_rate_lines.ts?workerd")
    .finally(() => {
      if (own === undefined) {
        delete (navigator as { userAgent?: string }).userAgent;
      } else Object.defineProperty(navigator, "userAgent", own);
    });
  await withFakeTimers(async (timers) => {
    let served = 0;
    const lines = new PriorityLines(
      (waiter, reason) => waiter.reject(reason),
      () => timers.now,
    );
    const wake = () => void (lines.serve(lines.live, ++served) && wake());
    const waiting = [lines.join(lines.live), lines.join(lines.live)];
    lines.pause(500, wake);
    clearTimeout(lines.timer); // the request that paused ended: its timer never fires
    // Their own timers were timed again at the pause: not at their next poll, a second on.
    await timers.tickAsync(510);
    deepStrictEqual(await Promise.all(waiting), [1, 2]);
    const gone = new AbortController();
    const leaving = lines.join(lines.live, gone.signal);
    gone.abort();
    await leaving.catch(() => {});
    equal(timers.countTimers(), 0);
  });
});
