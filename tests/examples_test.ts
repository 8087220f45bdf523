// The examples' logic, run against the fake service.

import { deepStrictEqual, equal } from "node:assert/strict";
import { createTokenProvider } from "../mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { quotaAlert } from "../examples/quota_alert.ts";

Deno.test("the quota alert example warns when a bucket runs low", async () => {
  await using api = await startFakePartnerApi({ quota: { perHour: 4 } });
  const warnings: string[] = [];
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    onQuota: quotaAlert(3, (message) => warnings.push(message)),
  });
  await provider.getToken();
  equal(warnings.length, 0, "3 of 4 left is not low");
  await provider.invalidate();
  await provider.getToken();
  deepStrictEqual(warnings, [
    "token quota low: per_hour has 2/4 left, resets in " +
    `${provider.quota?.buckets[0]?.resetAfter} s`,
  ]);
});

Deno.test("the observe example describes every kind of event in one line", async () => {
  const { describeEvent } = await import("../examples/observe.ts");
  const lines = [
    describeEvent({ type: "token.request", outcome: "ok", durationMs: 3 }),
    describeEvent({ type: "token.refresh", expiresInMs: 1000 }),
    describeEvent({ type: "quota.blocked", retryAt: 0 }),
    describeEvent({
      type: "api.request",
      method: "GET",
      base: "api",
      path: "/api/x",
      host: "api.partner.example",
      port: 443,
      status: 0,
      reason: "timeout",
      attempt: 1,
      durationMs: 2,
    }),
    describeEvent({
      type: "api.retry",
      reason: "timeout",
      status: 0,
      delayMs: 5,
    }),
    describeEvent({ type: "api.renewal", path: "/api/x" }),
    describeEvent({ type: "rate.wait", delayMs: 7, priority: "auto" }),
    describeEvent({
      type: "api.list",
      path: "/api/x",
      outcome: "ok",
      pages: 1,
      items: 0,
      durationMs: 1,
    }),
  ];
  for (const line of lines) {
    equal(line.includes("undefined") || line.includes("\n"), false, line);
  }
});
