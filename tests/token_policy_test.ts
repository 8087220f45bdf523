// The provider's decisions, tested directly as pure functions of (state, now).

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import {
  cooldownAfter,
  decide,
  flightBudget,
  isRetryable,
  MAX_QUOTA_BLOCK,
  newerFromRecord,
  quotaRetryAt,
  seenHere,
  settles,
  timesAfterStep,
  tokenTimes,
} from "../src/token/_policy.ts";
import {
  onUnauthorized,
  renewedRecord,
  tokenFingerprint,
  unauthorizedVerdict,
} from "../src/token/ledger.ts";
import { QuotaExceededError, TokenRequestError } from "../src/core/errors.ts";
import { isRetryStatus } from "../src/core/_attempt_loop.ts";
import { issuedToken } from "../src/core/token_values.ts";
import type { QuotaBucket } from "../src/core/quota.ts";

const NOW = Date.UTC(2031, 0, 1, 12);
const DAY = 86_400_000;

function token(accessToken: string, expiresAt: number, expiresIn = 86_400) {
  return issuedToken({
    accessToken,
    tokenType: "Bearer",
    expiresIn,
    expiresAt,
    quota: [],
  });
}

function bucket(name: string, remaining: number, resetAfter: number) {
  return { bucket: name, limit: 10, remaining, resetAfter } as QuotaBucket;
}

Deno.test("tokenTimes() refreshes a day-long token 5 minutes ahead and stops 2 s before expiry", () => {
  const times = tokenTimes(token("a", NOW + DAY), undefined);
  equal(times.refreshAt, NOW + DAY - 5 * 60_000);
  equal(times.usableUntil, NOW + DAY - 2_000);
});

Deno.test("tokenTimes() never refreshes more than half the lifetime ahead", () => {
  const times = tokenTimes(token("a", NOW + 60_000, 60), 10 * 60_000);
  equal(times.refreshAt, NOW + 30_000);
  equal(times.usableUntil, NOW + 60_000 - 2_000);
});

Deno.test("decide() covers fresh, refresh, join, blocked and request", async (t) => {
  const times = tokenTimes(token("a", NOW + DAY), undefined);
  const cases: [string, Parameters<typeof decide>[0], number, string][] = [
    ["a token before its refresh time is fresh", { times }, NOW, "fresh"],
    ["inside the margin, refresh", { times }, times.refreshAt, "refresh"],
    [
      "inside the margin with a flight running, fresh",
      { times, flightDeadline: times.refreshAt + 1 },
      times.refreshAt,
      "fresh",
    ],
    [
      "inside the margin while blocked, fresh",
      { times, blockedUntil: times.refreshAt + 1 },
      times.refreshAt,
      "fresh",
    ],
    [
      "inside the margin while cooling down, fresh",
      { times, failedUntil: times.refreshAt + 1 },
      times.refreshAt,
      "fresh",
    ],
    ["no token, no flight: request", {}, NOW, "request"],
    ["an unusable token: request", { times }, times.usableUntil, "request"],
    ["no token, a flight: join", { flightDeadline: NOW + 1 }, NOW, "join"],
    [
      "a flight past its deadline is not joined",
      { flightDeadline: NOW },
      NOW,
      "request",
    ],
    ["no token, blocked: blocked", { blockedUntil: NOW + 1 }, NOW, "blocked"],
    ["no token, cooling down: failed", { failedUntil: NOW + 1 }, NOW, "failed"],
    ["a cooldown that ended: request", { failedUntil: NOW }, NOW, "request"],
    [
      "blocked and cooling down: blocked",
      { blockedUntil: NOW + 1, failedUntil: NOW + 1 },
      NOW,
      "blocked",
    ],
    ["a block that ended: request", { blockedUntil: NOW }, NOW, "request"],
    [
      "a flight is joined even while blocked",
      { blockedUntil: NOW + 1, flightDeadline: NOW + 1 },
      NOW,
      "join",
    ],
  ];
  for (const [name, state, now, expected] of cases) {
    await t.step(name, () => equal(decide(state, now), expected));
  }
});

Deno.test("quotaRetryAt() blocks until the later of Retry-After and the exhausted bucket's reset, at least the first cooldown (10 s)", () => {
  const hour = bucket("per_hour", 0, 600);
  const day = bucket("per_day", 5, 40_000);
  equal(quotaRetryAt(30_000, [hour, day], NOW), NOW + 600_000, "the reset");
  equal(quotaRetryAt(900_000, [hour, day], NOW), NOW + 900_000, "Retry-After");
  equal(quotaRetryAt(0, [hour], NOW), NOW + 600_000, "0 lifts nothing");
  equal(quotaRetryAt(30_000, [day], NOW), NOW + 30_000, "nothing exhausted");
  equal(quotaRetryAt(undefined, [hour, day], NOW), NOW + 600_000);
  equal(
    quotaRetryAt(undefined, [hour, bucket("per_day", 0, 40_000)], NOW),
    NOW + 40_000_000,
  );
  equal(quotaRetryAt(undefined, [day], NOW), NOW + 40_000_000);
  equal(quotaRetryAt(undefined, [], NOW), NOW + 60_000);
  // r216a F2: a 429 asking no wait (`Retry-After: 0`, a reset now) was asked again at the callers' rate.
  equal(
    quotaRetryAt(0, [], NOW),
    NOW + 10_000,
    "Retry-After: 0: the first cooldown",
  );
  equal(quotaRetryAt(-5_000, [], NOW), NOW + 10_000, "a date gone");
  equal(
    quotaRetryAt(undefined, [bucket("per_hour", 0, 0)], NOW),
    NOW + 10_000,
    "t=0",
  );
  equal(quotaRetryAt(9_000, [], NOW), NOW + 10_000);
});

Deno.test("onUnauthorized() renews the first 401 in an hour and keeps the token for the others", () => {
  equal(onUnauthorized(undefined, NOW), "renew");
  equal(onUnauthorized(NOW, NOW), "keep");
  equal(onUnauthorized(NOW, NOW + 3_599_999), "keep");
  equal(onUnauthorized(NOW, NOW + 3_600_000), "renew");
  equal(onUnauthorized(NOW, NOW - 1), "keep", "a clock that steps back");
});

Deno.test("quotaRetryAt() never blocks for more than 25 hours", () => {
  equal(quotaRetryAt(1e300, [], NOW), NOW + MAX_QUOTA_BLOCK);
  const absurd = bucket("per_hour", 0, Number.MAX_SAFE_INTEGER);
  equal(quotaRetryAt(undefined, [absurd], NOW), NOW + MAX_QUOTA_BLOCK);
  ok(Number.isFinite(new Date(quotaRetryAt(Infinity, [], NOW)).getTime()));
});

Deno.test("isRetryable() retries network, timeout and the statuses of the one rule the client keeps too", () => {
  const error = (init: ConstructorParameters<typeof TokenRequestError>[1]) =>
    new TokenRequestError("x", init);
  ok(isRetryable(error({ reason: "network" })));
  ok(isRetryable(error({ reason: "timeout" })));
  ok(isRetryable(error({ status: 408 })));
  ok(isRetryable(error({ status: 503 })));
  ok(!isRetryable(error({ status: 400 })));
  ok(!isRetryable(error({ status: 200, reason: "malformed" })));
  ok(!isRetryable(new QuotaExceededError("x", { buckets: [], retryAt: 0 })));
  const denied = Object.assign(new Error("denied"), { name: "NotCapable" });
  ok(!isRetryable(error({ reason: "network", cause: denied })));
  ok(!isRetryable(new TypeError("not a token error")));
  // The same statuses as the client's, but 429 (the quota, never a retry).
  const statuses = [400, 408, 429, 500, 501, 502, 503, 504, 505, 599];
  deepStrictEqual(
    statuses.filter((status) => isRetryable(error({ status }))),
    statuses.filter((status) => status !== 429 && isRetryStatus(status)),
  );
});

Deno.test("settles() accepts a block in force or a token before its refresh time", () => {
  const fresh = token("a", NOW + DAY);
  ok(settles({ token: fresh }, NOW, undefined, undefined));
  ok(!settles({ token: fresh }, NOW + DAY - 60_000, undefined, undefined));
  ok(!settles({ token: fresh }, NOW, undefined, "a"), "an invalidated token");
  ok(settles({ blockedUntil: NOW + 1 }, NOW, undefined, undefined));
  ok(!settles({ blockedUntil: NOW }, NOW, undefined, undefined));
  ok(!settles({}, NOW, undefined, undefined));
});

Deno.test("newerFromRecord() takes a later token, a block in force and a later quota", async (t) => {
  const older = token("old", NOW + DAY);
  const newer = token("new", NOW + 2 * DAY);
  await t.step("a later token lifts a block that ended", () => {
    const news = newerFromRecord({ token: newer }, {
      expiresAt: older.expiresAt,
      blockedUntil: NOW + 1000,
    }, NOW);
    equal(news.token, newer);
    equal(news.blockedUntil, undefined);
  });
  await t.step("an older or rejected token is not news", () => {
    equal(
      newerFromRecord({ token: older }, { expiresAt: newer.expiresAt }, NOW)
        .token,
      undefined,
    );
    equal(
      newerFromRecord({ token: newer }, { rejected: "new" }, NOW).token,
      undefined,
    );
  });
  await t.step("a block in force is kept, the later one wins", () => {
    equal(
      newerFromRecord({ blockedUntil: NOW + 5 }, { blockedUntil: NOW + 9 }, NOW)
        .blockedUntil,
      NOW + 9,
    );
    equal(
      newerFromRecord({ blockedUntil: NOW + 9 }, {}, NOW).blockedUntil,
      NOW + 9,
    );
    equal(
      newerFromRecord({ blockedUntil: NOW }, { blockedUntil: NOW + 3 }, NOW)
        .blockedUntil,
      NOW + 3,
    );
  });
  await t.step("a block read from a store is clamped to 25 h", () => {
    equal(
      newerFromRecord({ blockedUntil: NOW + 400 * DAY }, {}, NOW).blockedUntil,
      NOW + MAX_QUOTA_BLOCK,
    );
  });
  await t.step("a quota keeps the time it was reported", () => {
    const reported = {
      buckets: [bucket("per_hour", 3, 60)],
      observedAt: NOW - 3_600_000,
    };
    deepStrictEqual(
      newerFromRecord({ quota: reported }, {}, NOW).quota,
      reported,
    );
    equal(
      newerFromRecord({ quota: reported }, { quota: reported }, NOW).quota,
      undefined,
    );
    const same = { ...reported, buckets: [bucket("per_hour", 2, 60)] };
    equal(
      newerFromRecord({ quota: same }, { quota: reported }, NOW).quota,
      same,
    );
  });
});

Deno.test("flightBudget() covers every attempt timing out and every wait at its longest", () => {
  const backoff = {
    retries: 2,
    initialDelay: 500,
    maxDelay: 10_000,
    maxRetryAfter: 30_000,
  };
  equal(flightBudget(backoff, 30_000, false), 3 * 30_000 + 2 * 30_000);
  ok(
    flightBudget(backoff, 30_000, true) > flightBudget(backoff, 30_000, false),
  );
});

Deno.test("cooldownAfter() doubles from 10 s to 15 min, starts again after a quiet spell, and takes a longer Retry-After", () => {
  let cooldown = cooldownAfter(undefined, undefined, 60_000, NOW);
  const lengths = [cooldown.until - NOW];
  for (let i = 0; i < 8; i++) {
    const at = cooldown.until;
    cooldown = cooldownAfter(cooldown, undefined, 60_000, at);
    lengths.push(cooldown.until - at);
  }
  deepStrictEqual(lengths.map((ms) => ms / 1000), [
    10,
    20,
    40,
    80,
    160,
    320,
    640,
    900,
    900,
  ]);
  const quiet = cooldownAfter(
    cooldown,
    undefined,
    60_000,
    cooldown.until + 900_000,
  );
  equal(
    quiet.failures,
    1,
    "a failure long after the last cooldown starts anew",
  );
  const asked = cooldownAfter(undefined, 3_600_000, 60_000, NOW);
  equal(asked.until, NOW + 3_600_000, "Retry-After: 3600 sets it");
  equal(
    cooldownAfter(undefined, 30_000, 60_000, NOW).until,
    NOW + 10_000,
    "a Retry-After the retries could wait for does not",
  );
  equal(
    cooldownAfter(undefined, 90 * DAY, 60_000, NOW).until,
    NOW + MAX_QUOTA_BLOCK,
    "at most 25 h",
  );
});

Deno.test("unauthorizedVerdict() renews once an hour per fleet, and retries free when a newer token is there", () => {
  const t1 = { accessToken: "t1", expiresAt: NOW + DAY };
  const t2 = { accessToken: "t2", expiresAt: NOW + DAY + 1 };
  equal(unauthorizedVerdict({ current: t1 }, t1, NOW), "renew", "first 401");
  const renewed = renewedRecord({ token: token("t1", NOW + DAY) }, t1, NOW);
  equal(renewed.token, undefined, "the refused token is dropped");
  const renewal = renewed.renewal!;
  equal(renewal.token, tokenFingerprint("t1"));
  equal(
    unauthorizedVerdict({ renewal, current: t2 }, t2, NOW + 1000),
    "keep",
    "the same hour: the 401 is returned",
  );
  equal(
    unauthorizedVerdict({ renewal, current: t2 }, t2, NOW + 3_600_000),
    "renew",
    "an hour later",
  );
  equal(
    unauthorizedVerdict({ renewal }, t1, NOW + 1000),
    "retry",
    "the fleet renewed this very token: its new one is on the way",
  );
  // The renewal brought the same token back (an endpoint that caches its tokens): the hour decides (each 401 cost one).
  const again = { accessToken: "t1", expiresAt: NOW + DAY + 1000 };
  const held = { renewal, current: again, stored: again };
  equal(unauthorizedVerdict(held, again, NOW + 1000), "keep", "same hour");
  equal(unauthorizedVerdict(held, again, NOW + 3_600_000), "renew");
  equal(
    unauthorizedVerdict({ renewal, current: t2 }, t1, NOW + 1000),
    "retry",
    "another process's newer token",
  );
  // An expiry renewed a few seconds or minutes later is no newer token at hand: expiry comes from each member's clock,
  // within the fleet's slack (5 min). The hour decides.
  const later = { ...renewal, expiresAt: NOW + DAY + 4 * 60_000 };
  equal(unauthorizedVerdict({ renewal: later }, t2, NOW + 1000), "keep");
  equal(
    unauthorizedVerdict({ renewal: later, current: t2 }, t2, NOW + 3_600_000),
    "renew",
  );
  // One a refresh cycle later: the refused token was replaced, and its replacement renewed; the next is on its way.
  const cycleLater = { ...renewal, expiresAt: NOW + DAY + 55 * 60_000 };
  equal(unauthorizedVerdict({ renewal: cycleLater }, t2, NOW + 1000), "retry");
});

Deno.test("tokenFingerprint() is FNV-1a 64", () => {
  equal(tokenFingerprint(""), "cbf29ce484222325");
  equal(tokenFingerprint("a"), "af63dc4c8601ec8c");
  equal(tokenFingerprint("foobar"), "85944171f73967e8");
});

Deno.test("timesAfterStep() puts a cached token's times at the earlier of its wall and steady expiries, read at the clocks now: a step back moves them back, a step forward after it restores them, a suspend leaves them at the wall's", () => {
  const token = tenMinuteToken();
  const times = tokenTimes(token, undefined);
  // Its steady expiry ten minutes after 5,000, where the wall clock read NOW.
  const cached = {
    token,
    times,
    ready: Promise.resolve(token),
    expiresAt: token.expiresAt,
    steadyExpiresAt: 5_000 + 600_000,
  };
  // Both clocks a minute on, or the wall clock ahead (a suspend, a step forward): as it was.
  equal(timesAfterStep(cached, NOW + 60_000, 65_000), cached);
  equal(timesAfterStep(cached, NOW + 3_600_000, 65_000), cached);
  // Within the slack (the clocks' drift): as it was.
  equal(timesAfterStep(cached, NOW + 59_500, 65_000), cached);
  // The wall clock 3 h behind the steady one, a minute on.
  const moved = timesAfterStep(cached, NOW + 60_000 - 3 * 3_600_000, 65_000);
  deepStrictEqual(moved.times, {
    usableUntil: times.usableUntil - 3 * 3_600_000,
    refreshAt: times.refreshAt - 3 * 3_600_000,
  });
  equal(moved.expiresAt, token.expiresAt - 3 * 3_600_000);
  // The same clocks move it no further; the wall clock stepped forward again puts it back.
  equal(timesAfterStep(moved, NOW + 60_000 - 3 * 3_600_000, 65_000), moved);
  deepStrictEqual(timesAfterStep(moved, NOW + 120_000, 125_000).times, times);
});

Deno.test("seenHere() gives a stored copy of the provider's own token its expiry as moved here by a step back, and leaves another token as stored", () => {
  const token = tenMinuteToken();
  const cached = {
    token,
    times: tokenTimes(token, undefined),
    ready: Promise.resolve(token),
    expiresAt: token.expiresAt - 300_000,
    steadyExpiresAt: 300_000,
  };
  const stored = { token: { ...token, accessToken: "t" } };
  const seen = seenHere(stored, cached);
  equal(seen.token?.accessToken, "t");
  equal(seen.token?.expiresAt, token.expiresAt - 300_000);
  const other = { token: { ...stored.token, accessToken: "u" } };
  equal(seenHere(other, cached), other);
  equal(seenHere(stored, undefined), stored);
});

/** A token of ten minutes, issued at NOW. */
function tenMinuteToken() {
  return issuedToken({
    accessToken: "t",
    tokenType: "Bearer",
    expiresIn: 600,
    expiresAt: NOW + 600_000,
    quota: [],
  });
}
