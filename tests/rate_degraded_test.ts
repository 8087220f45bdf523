// `rate.degraded` says why a fleet limiter paces alone (newcomer r197 N1: a Redis refusing every command for want of
// its password read as an outage, each process paced alone for good, and nothing told the two apart), in whole epoch
// ms (N4: `retryAt` read fractions of the steady clock), and never in the store's own words.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { createRedisRateLimiter } from "../src/store/redis.ts";
import {
  type Cause,
  countLoss,
  failureOf,
  type Losses,
  toSay,
  UnexpectedAnswer,
} from "../src/store/_store_failure.ts";
import type { RateDegradedEvent } from "../src/core/events.ts";
import { withFakeTimers } from "./_helpers.ts";
import { drive, onFakeClock, trackedIo } from "./_fast_setup.ts";

const refused = (message: string, code?: string) =>
  Object.assign(new Error(message), code === undefined ? {} : { code });

Deno.test("failureOf: a timeout, an unexpected answer, a known code (a system's, or a Redis error reply's first word), else none: never the error's words", () => {
  const cases: [unknown, string, string?][] = [
    [new DOMException("late", "TimeoutError"), "timeout"],
    [new UnexpectedAnswer("another type"), "answer"],
    [refused("NOAUTH Authentication required."), "error", "NOAUTH"],
    [refused("WRONGPASS invalid username-password pair"), "error", "WRONGPASS"],
    [
      refused("connect ECONNREFUSED ::1", "ECONNREFUSED"),
      "error",
      "ECONNREFUSED",
    ],
    // Redis's refusal of a long command before AUTH: a password not sent (attack r198a F2: node-redis said ERR).
    [
      refused("ERR Protocol error: unauthenticated multibulk length"),
      "error",
      "NOAUTH",
    ],
    [refused("ERR unknown command"), "error", "ERR"],
    // Only known codes: a password or a key in capitals is none (attack r198a F3).
    [refused("HUNTER2HUNTER2 failed"), "error"],
    [refused("failed", "AKIAIOSFODNN7EXAMPLE"), "error"],
    [refused("redis://:HUNTER2@db failed"), "error"],
    [refused("SECRET-WITH-DASHES", 42 as unknown as string), "error"],
    ["a thrown text", "error"],
    [undefined, "error"],
  ];
  for (const [error, reason, code] of cases) {
    deepStrictEqual(failureOf(error), code ? { reason, code } : { reason });
  }
});

Deno.test("toSay: every fall's start; within a fall, only a setting to mend not said yet (NOAUTH, WRONGPASS and NOPERM are one: credentials)", () => {
  const said = new Set(["credentials"]);
  const cases: [boolean, ReadonlySet<string>, Cause, boolean][] = [
    [false, said, { reason: "timeout" }, true],
    [true, new Set(), { reason: "timeout" }, false],
    [true, new Set(), { reason: "lost" }, false],
    [true, new Set(), { reason: "error", code: "ECONNREFUSED" }, false],
    [true, new Set(), { reason: "error", code: "WRONGPASS" }, true],
    [true, said, { reason: "error", code: "NOAUTH" }, false],
    [true, said, { reason: "error", code: "OOM" }, true],
  ];
  for (const [degraded, before, cause, say] of cases) {
    equal(toSay(degraded, before, cause).say, say, JSON.stringify(cause));
  }
  equal(
    toSay(true, said, { reason: "error", code: "NOPERM" }).setting,
    "credentials",
  );
});

Deno.test("countLoss: more than 5 losses within an interval of the first fail the store; a loss an interval on starts a new run (r193a F1; r194a: one each 700 ms never fails)", () => {
  const run = (gaps: number[]) => {
    let losses: Losses = { losses: 0, since: -Infinity }, at = 0, failed = 0;
    for (const gap of gaps) {
      const next = countLoss(losses, at += gap, 2_000);
      losses = next.run;
      failed += next.failing ? 1 : 0;
    }
    return failed;
  };
  equal(run([0, 1, 1, 1, 1, 1]), 1); // the sixth
  equal(run([0, 1, 1, 1, 1]), 0);
  equal(run(Array(20).fill(700)), 0);
  equal(run(Array(20).fill(399)), 3); // 6 within 2 s: the sixth of each run of 6
  equal(run([0, 1, 1, 1, 1, 2_000]), 0); // an interval on: a new run
});

Deno.test("a Redis limiter's rate.degraded says why, once per fall, with retryAt in whole ms: error and its code, timeout, an answer no script gives, a window lost under its sends", async () => {
  const take = [1, 0, 2, "e", 0, 0];
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
    ["more granted than asked", () => [50, 0, 1, "e", 0, 0], {
      reason: "answer",
    }],
    // Granted, then the window gone under that send: a write back asked (the script's own reply after it ignored).
    ["lost", (call) => call === 1 ? [0, 0, 2, "e2", 1, 0] : take, {
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

Deno.test("a fall that turns out a setting to mend says so again, and a fall back from alone ends with rate.restored alone: timeouts, then WRONGPASS and NOAUTH in turn (a rotated password: one setting, said once), then a store that answers (attack r198a F1: the first cause stood for good; r199a F2, F3: each turn was said)", async () => {
  await withFakeTimers(async (timers) => {
    using io = trackedIo(); // the script's digest: real crypto.subtle
    let takeScript: unknown, wrong = 0;
    const command = (args: readonly string[]) => {
      takeScript ??= args[1]; // the first command is a take
      if (timers.now < 1_000) return new Promise(() => {});
      // A wrong password answers WRONGPASS, then NOAUTH (to long commands): one setting, said once (r199a F2, F3).
      if (timers.now < 12_000) {
        const word = ++wrong % 2 ? "WRONGPASS" : "NOAUTH";
        return Promise.reject(refused(`${word} invalid password`));
      }
      // A take back from alone is asked for its write back; then grants.
      const returning = args[1] === takeScript && args[17] === "1";
      return Promise.resolve(
        returning ? [0, 0, 1, "e2", 1, 0] : [1, 0, 1, "e2", 0, 0],
      );
    };
    const events: string[] = [];
    await using limiter = createRedisRateLimiter({
      command,
      commandTimeout: 100,
      requests: 10,
      interval: 1_000,
      now: () => timers.now,
      onEvent: (event) =>
        event.type === "rate.degraded"
          ? events.push(`${event.reason} ${event.code ?? ""}`.trim())
          : events.push(event.type),
    });
    while (timers.now < 20_000) {
      limiter.answered(await drive(timers, limiter.take(), io.idle));
      await drive(timers, onFakeClock(timers, 100), io.idle);
    }
    deepStrictEqual(events, ["timeout", "error WRONGPASS", "rate.restored"]);
  });
});
