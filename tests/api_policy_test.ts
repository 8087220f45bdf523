// The client's decisions after each attempt, as pure functions.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import fc from "fast-check";
import {
  type Attempted,
  isReplayable,
  MAX_REDIRECTS,
  nextStep,
  type Progress,
  type RetryPolicy,
  retryWait,
} from "../src/client/_policy.ts";

const POLICY: RetryPolicy = {
  backoff: {
    retries: 2,
    initialDelay: 500,
    maxDelay: 10_000,
    maxRetryAfter: 30_000,
  },
  random: () => 1, // the top of the jitter range
};
const GET = { retries: 0, method: "GET", replayable: true };

Deno.test("retryWait() retries idempotent requests after no answer and 408, 429, 500, 502, 503, 504", () => {
  equal(retryWait({ kind: "no answer" }, GET, POLICY), 500);
  for (const status of [408, 429, 500, 502, 503, 504]) {
    equal(retryWait({ kind: "answer", status }, GET, POLICY), 500, `${status}`);
  }
  for (const status of [200, 301, 400, 401, 403, 404, 409, 501, 505]) {
    equal(
      retryWait({ kind: "answer", status }, GET, POLICY),
      undefined,
      `${status}`,
    );
  }
});

Deno.test("retryWait() backs off exponentially and stops after the last retry", () => {
  equal(retryWait({ kind: "no answer" }, { ...GET, retries: 1 }, POLICY), 1000);
  equal(
    retryWait({ kind: "no answer" }, { ...GET, retries: 2 }, POLICY),
    undefined,
  );
});

Deno.test("retryWait() honours Retry-After up to maxRetryAfter", () => {
  const busy = (retryAfter: number) =>
    ({ kind: "answer", status: 429, retryAfter }) as const;
  equal(retryWait(busy(0), GET, POLICY), 0);
  equal(retryWait(busy(30_000), GET, POLICY), 30_000);
  equal(
    retryWait(busy(30_001), GET, POLICY),
    undefined,
    "the answer is returned",
  );
});

Deno.test("retryWait() never retries POST, PATCH or a body that cannot be sent again", () => {
  for (const method of ["POST", "PATCH", "CONNECT"]) {
    equal(
      retryWait({ kind: "no answer" }, { ...GET, method }, POLICY),
      undefined,
    );
  }
  for (const method of ["HEAD", "OPTIONS", "PUT", "DELETE"]) {
    ok(
      retryWait({ kind: "no answer" }, { ...GET, method }, POLICY) !==
        undefined,
    );
  }
  equal(
    retryWait({ kind: "no answer" }, {
      ...GET,
      method: "PUT",
      replayable: false,
    }, POLICY),
    undefined,
  );
});

Deno.test("isReplayable() accepts bodies that can be sent twice only", () => {
  const replayable = [
    undefined,
    null,
    "text",
    new Blob(["x"]),
    new ArrayBuffer(2),
    new Uint8Array(2),
    new DataView(new ArrayBuffer(2)),
    new URLSearchParams("a=1"),
    new FormData(),
  ];
  for (const body of replayable) ok(isReplayable(body), String(body));
  ok(!isReplayable(new ReadableStream()));
  ok(!isReplayable((async function* () {})()));
  ok(!isReplayable({ [Symbol.iterator]: () => [][Symbol.iterator]() }));
});

const FRESH: Progress = { ...GET, redirects: 0, renewed: false };
const answer = (status: number, extra: Partial<Attempted> = {}): Attempted => ({
  kind: "answer",
  status,
  ...extra,
} as Attempted);

Deno.test("nextStep() delivers, retries, fails, renews and follows as the send loop needs", () => {
  const there = new URL("https://api.example/api/other");
  deepStrictEqual(nextStep(answer(200), FRESH, POLICY), { do: "deliver" });
  deepStrictEqual(nextStep(answer(503), FRESH, POLICY), {
    do: "retry",
    wait: 500,
  });
  deepStrictEqual(nextStep({ kind: "no answer" }, FRESH, POLICY), {
    do: "retry",
    wait: 500,
  });
  deepStrictEqual(
    nextStep({ kind: "no answer" }, { ...FRESH, retries: 2 }, POLICY),
    { do: "fail" },
  );
  deepStrictEqual(nextStep(answer(503), { ...FRESH, retries: 2 }, POLICY), {
    do: "deliver",
  });
  deepStrictEqual(nextStep(answer(401), FRESH, POLICY), { do: "renew" });
  deepStrictEqual(nextStep(answer(401), { ...FRESH, renewed: true }, POLICY), {
    do: "deliver",
  });
  deepStrictEqual(
    nextStep(answer(401), { ...FRESH, replayable: false }, POLICY),
    { do: "deliver" },
  );
  deepStrictEqual(nextStep(answer(302, { redirect: there }), FRESH, POLICY), {
    do: "follow",
    to: there,
  });
  deepStrictEqual(
    nextStep(answer(302, { redirect: there }), {
      ...FRESH,
      redirects: MAX_REDIRECTS,
    }, POLICY),
    { do: "deliver" },
  );
  deepStrictEqual(
    nextStep(answer(302), FRESH, POLICY),
    { do: "deliver" },
    "a Location outside the base",
  );
});

Deno.test("nextStep(), for any attempt and progress: a request that may not be sent twice is never sent twice", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.constant<Attempted>({ kind: "no answer" }),
        fc.record({
          kind: fc.constant("answer" as const),
          status: fc.integer({ min: 100, max: 599 }),
          retryAfter: fc.option(fc.integer({ min: 0, max: 60_000 }), {
            nil: undefined,
          }),
        }),
      ),
      fc.record({
        retries: fc.integer({ min: 0, max: 3 }),
        method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"),
        replayable: fc.boolean(),
        redirects: fc.integer({ min: 0, max: 6 }),
        renewed: fc.boolean(),
      }),
      (attempted, progress) => {
        const step = nextStep(attempted, progress, POLICY);
        const resend = step.do === "retry" || step.do === "renew";
        if (!progress.replayable) ok(!resend, JSON.stringify(step));
        if (step.do === "retry") {
          ok(progress.retries < POLICY.backoff.retries);
          ok(["GET", "PUT", "DELETE"].includes(progress.method));
        }
        if (step.do === "renew") ok(!progress.renewed);
        if (attempted.kind === "no answer") {
          ok(step.do === "retry" || step.do === "fail");
        }
      },
    ),
    { numRuns: 2000, seed: 17 },
  );
});
