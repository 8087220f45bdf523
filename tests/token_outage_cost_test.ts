// Issue 38, costs as stated: the README says an hour of a failing token
// endpoint costs at most 12 requests. With the default retries a 5xx
// outage cost 3 attempts per cooldown (30 in its first hour): a flight that
// follows a failed one now sends one attempt, and the escalating cooldown
// does the retrying. Fake timers drive the retries' waits; the fake runs in
// process on the same clock (no socket).

import { equal, ok } from "node:assert/strict";
import { TokenRequestError } from "../src/core/errors.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import {
  createFakePartnerService,
  type FakeFault,
} from "../src/testing/mod.ts";
import { withFakeTimers } from "./_helpers.ts";

const HOUR = 3_600_000;

/** The fake on the fake timers' clock, every token answer `fault`. */
function failingEndpoint(now: () => number, fault: FakeFault) {
  const service = createFakePartnerService({ now });
  service.injectTokenFaults(...Array.from({ length: 1000 }, () => fault));
  const environment = service.environmentAt(
    "http://127.0.0.1:9",
    "http://127.0.0.1:10",
  );
  return {
    service,
    options: {
      ...environment,
      ...service.credentials,
      now,
      fetch: (input: RequestInfo | URL, init?: RequestInit) =>
        service.handle(new Request(input, init)),
    },
  };
}

/** One getToken a second for an hour; every one must fail as the endpoint does. */
async function anHourOfCalls(
  timers: { tickAsync(ms: number): Promise<number>; now: number },
  provider: ReturnType<typeof createTokenProvider>,
): Promise<void> {
  const calls: Promise<unknown>[] = [];
  for (let second = 0; second < 3600; second++) {
    calls.push(
      provider.getToken().then(
        () => "token",
        (error: unknown) =>
          error instanceof TokenRequestError ? "failed" : error,
      ),
    );
    await timers.tickAsync(1000);
  }
  await timers.tickAsync(HOUR); // the last flight's retries end
  for (const outcome of await Promise.all(calls)) equal(outcome, "failed");
}

Deno.test("costs as stated: an hour of one call a second against a token endpoint answering 503, with the default retries, costs at most 12 token requests", async () => {
  await withFakeTimers(async (timers) => {
    const { service, options } = failingEndpoint(() => timers.now, {
      kind: "status",
      status: 503,
    });
    const provider = createTokenProvider(options);
    await anHourOfCalls(timers, provider);
    ok(service.tokenRequests <= 12, `${service.tokenRequests} requests`);
    ok(service.tokenRequests >= 8, "it still tries now and then");
    service.close();
  });
});

Deno.test("costs as stated: a single 503 is still retried within its flight (the first failure of a streak keeps the default retries)", async () => {
  await withFakeTimers(async (timers) => {
    const service = createFakePartnerService({ now: () => timers.now });
    service.injectTokenFaults({ kind: "status", status: 503 });
    const environment = service.environmentAt(
      "http://127.0.0.1:9",
      "http://127.0.0.1:10",
    );
    const provider = createTokenProvider({
      ...environment,
      ...service.credentials,
      now: () => timers.now,
      fetch: (input, init) => service.handle(new Request(input, init)),
    });
    const pending = provider.getToken();
    await timers.tickAsync(5000);
    ok(service.isValidToken((await pending).accessToken));
    equal(service.tokenRequests, 2);
    service.close();
  });
});
