// The client's decisions after each attempt, as pure functions.

import { equal, ok } from "node:assert/strict";
import {
  isReplayable,
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
