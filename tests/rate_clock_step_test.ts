// Issue 38, clock steps: a wall clock stepped back by up to 25 hours holds
// no caller for those hours. The limiters measure waits on a reading that
// never goes back (a step back is no time passing; the default clock reads
// the runtime's monotone one), and a KV token store waits for a lease no
// longer than it has seen it unchanged. Fake timers and an injected clock
// moved by hand; the database is real, the fake in process (no socket).
// The fleet limiters too: pacing alone while their Redis is away, and with
// a caller already waiting when the clock steps.

import { equal, ok } from "node:assert/strict";
import { createRateLimiter } from "../src/client/rate_limit.ts";
import { createKvRateLimiter, createKvTokenStore } from "../src/store/kv.ts";
import { createRedisRateLimiter } from "../src/store/redis.ts";
import { clientDigest } from "./_store_keys.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { manualClock, withFakeTimers } from "./_helpers.ts";
import type { Clock } from "@sinonjs/fake-timers";
import type { RateLimiter } from "../src/client/rate_limit.ts";
import { drive, inProcessFake, onFakeClock, trackedIo } from "./_fast_setup.ts";

const DAY_AND_HOUR = 25 * 3_600_000;

/**
 * A fleet limiter of 1 request per second on `timers`, its clock `offset`
 * ms off: one send, then `step` (the clock stepped back 25 h, before or
 * while the next caller waits), and whether that caller is granted within
 * a minute of the test's time, not the hours stepped.
 */
async function grantedAfterStep(
  timers: Clock,
  make: (now: () => number) => RateLimiter & AsyncDisposable,
  whileWaiting: boolean,
  idle?: () => Promise<void>,
): Promise<boolean> {
  let offset = 0;
  const limiter = make(() => timers.now + offset);
  const run = <T>(work: T | PromiseLike<T>) => drive(timers, work, idle);
  limiter.answered(await run(limiter.take()));
  if (!whileWaiting) offset -= DAY_AND_HOUR;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), 60_000);
  const waiting = Promise.resolve(limiter.take(deadline.signal))
    .catch(() => undefined);
  if (whileWaiting) {
    await run(onFakeClock(timers, 100)); // it waits for the window
    offset -= DAY_AND_HOUR;
  }
  const ticket = await run(waiting);
  clearTimeout(timer);
  if (ticket !== undefined) limiter.answered(ticket);
  await run(limiter[Symbol.asyncDispose]());
  return ticket !== undefined;
}

Deno.test("clock steps: the in-process limiter's caller waits out what is left of the window, not the 25 h the wall clock stepped back", async () => {
  await withFakeTimers(async (timers) => {
    const clock = manualClock();
    const limiter = createRateLimiter({
      requests: 1,
      interval: 1000,
      now: clock,
    });
    limiter.answered(limiter.take() as number);
    clock.set(clock() - DAY_AND_HOUR);
    let granted = false;
    const waiting = Promise.resolve(limiter.take()).then((ticket) => {
      granted = true;
      return ticket;
    });
    clock.advance(1000);
    await timers.tickAsync(1000);
    ok(granted, "granted once the window passed");
    limiter.answered(await waiting);
    equal(timers.countTimers(), 0);
  });
});

Deno.test("clock steps: a KV fleet limiter whose clock steps back 25 h between two sends grants the second once the window passed", async () => {
  using kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    using db = trackedIo(kv, 1);
    const make = (now: () => number) =>
      createKvRateLimiter(db.kv, { requests: 1, interval: 1000, now });
    ok(await grantedAfterStep(timers, make, false, db.idle));
  });
});

Deno.test("clock steps: a process waiting for a dead holder's KV lease takes over within a lease of seeing it, though its clock stepped back 25 h while it waited", async () => {
  await withFakeTimers(async (timers) => {
    let offset = 0;
    const now = () => timers.now + offset;
    using api = inProcessFake({ now: () => timers.now });
    using kv = await Deno.openKv(":memory:");
    using io = trackedIo(kv);
    const key = await clientDigest(api);
    // A holder that died: its lease says it runs for 10 more seconds.
    await kv.set(["partner-api", "token", key, "lease"], {
      holder: "dead",
      until: now() + 10_000,
    });
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      now,
      store: createKvTokenStore(io.kv, { pollInterval: 50, now }),
      retry: false,
    });
    const pending = provider.getToken();
    await drive(
      timers,
      onFakeClock(timers, 100),
      io.idle,
    );
    offset -= DAY_AND_HOUR; // NTP steps the clock back while it waits
    // Its deadline: the lease (10 s) and a second, not the hours stepped.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise((done) =>
      timer = setTimeout(done, 11_000, "late")
    );
    const first = await drive(
      timers,
      Promise.race([pending.then(() => "token"), late]),
      io.idle,
    );
    clearTimeout(timer);
    equal(first, "token");
    const token = await pending;
    ok(api.service.isValidToken(token.accessToken));
    equal(api.service.tokenRequests, 1);
  });
});

Deno.test("clock steps: a Redis fleet limiter pacing alone (its Redis away) whose clock steps back 25 h grants the next send once the window passed", async () => {
  await withFakeTimers(async (timers) => {
    const make = (now: () => number) =>
      createRedisRateLimiter({
        command: () => Promise.reject(new Error("connection refused")),
        requests: 2, // alone: half the limit, 1
        interval: 1000,
        now,
      });
    using io = trackedIo(); // the script's digest: real crypto.subtle
    ok(await grantedAfterStep(timers, make, false, io.idle));
  });
});

Deno.test("clock steps: a KV fleet limiter whose clock steps back 25 h while a caller waits for the window grants it once the window passed", async () => {
  using kv = await Deno.openKv(":memory:");
  await withFakeTimers(async (timers) => {
    timers.setSystemTime(Date.UTC(2026, 10, 21, 10));
    using db = trackedIo(kv, 1);
    const make = (now: () => number) =>
      createKvRateLimiter(db.kv, { requests: 1, interval: 1000, now });
    ok(await grantedAfterStep(timers, make, true, db.idle));
  });
});
