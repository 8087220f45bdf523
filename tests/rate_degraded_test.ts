// `rate.degraded` says why a fleet limiter paces alone (newcomer r197 N1: a Redis refusing every command for want of
// its password read as an outage, each process paced alone for good, and nothing told the two apart), in whole epoch
// ms (N4: `retryAt` read fractions of the steady clock), and never in the store's own words.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { createRedisRateLimiter } from "../src/store/redis.ts";
import { failureOf, UnexpectedAnswer } from "../src/store/_fleet_config.ts";
import type { RateDegradedEvent } from "../src/core/events.ts";
import { withFakeTimers } from "./_helpers.ts";
import { drive, onFakeClock, trackedIo } from "./_fast_setup.ts";

const refused = (message: string, code?: string) =>
  Object.assign(new Error(message), code === undefined ? {} : { code });

Deno.test("failureOf: a timeout, an unexpected answer, a code (a system's, or a Redis error reply's first word), else none: never the error's words", () => {
  const cases: [unknown, object][] = [
    [new DOMException("late", "TimeoutError"), { reason: "timeout" }],
    [new UnexpectedAnswer("another type"), { reason: "answer" }],
    [refused("NOAUTH Authentication required."), {
      reason: "error",
      code: "NOAUTH",
    }],
    [refused("WRONGPASS invalid username-password pair"), {
      reason: "error",
      code: "WRONGPASS",
    }],
    [refused("connect ECONNREFUSED 127.0.0.1:6379", "ECONNREFUSED"), {
      reason: "error",
      code: "ECONNREFUSED",
    }],
    [refused("redis://:HUNTER2@db failed"), { reason: "error" }],
    [refused("SECRET-WITH-DASHES", 42 as unknown as string), {
      reason: "error",
    }],
    ["a thrown text", { reason: "error" }],
    [undefined, { reason: "error" }],
  ];
  for (const [error, cause] of cases) deepStrictEqual(failureOf(error), cause);
});

Deno.test("a Redis limiter's rate.degraded says why, once per fall, with retryAt in whole ms: error and its code, timeout, an answer no script gives, a window lost under its sends", async () => {
  const take = [1, 0, 2, "e", 0];
  const stores: [string, (call: number) => unknown, object][] = [
    [
      "NOAUTH",
      () => Promise.reject(refused("NOAUTH Authentication required.")),
      { reason: "error", code: "NOAUTH" },
    ],
    [
      "a password in the words",
      () => Promise.reject(refused("redis://:hunter2@db")),
      { reason: "error" },
    ],
    ["no answer", () => new Promise(() => {}), { reason: "timeout" }],
    ["more granted than asked", () => [50, 0, 1, "e", 0], { reason: "answer" }],
    // Granted, then the window gone under that send: a write back asked (the script's own reply after it ignored).
    ["lost", (call) => call === 1 ? [0, 0, 2, "e2", 1] : take, {
      reason: "lost",
    }],
  ];
  for (const [name, reply, cause] of stores) {
    await withFakeTimers(async (timers) => {
      using io = trackedIo(); // the script's digest: real crypto.subtle
      let calls = 0;
      const events: RateDegradedEvent[] = [];
      await using limiter = createRedisRateLimiter({
        command: () => Promise.resolve().then(() => reply(calls++)),
        commandTimeout: 100,
        requests: 10,
        interval: 1_000,
        now: () => timers.now + 0.25, // a steady clock's fractions
        onEvent: (event) =>
          event.type === "rate.degraded" && events.push(event),
      });
      for (let i = 0; i < 2; i++) {
        limiter.answered(await drive(timers, limiter.take(), io.idle));
      }
      await drive(timers, onFakeClock(timers, 100), io.idle);
      equal(events.length, 1, name);
      const { reason, code, retryAt } = events[0]!;
      deepStrictEqual(
        { reason, ...code === undefined ? {} : { code } },
        cause,
        name,
      );
      ok(Number.isInteger(retryAt), `${name}: ${retryAt}`);
      ok(!JSON.stringify(events).includes("hunter2"), name);
    });
  }
});
