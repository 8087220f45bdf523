// Issue 38, time options: every time option above 2,147,483,647 ms (what a
// timer can wait) is refused when the limiter, store, provider or client is
// made, naming the option, and the largest one accepted works: a timer set
// past the bound fires at once, so a flight budget of three such limits
// abandoned every token request, and a window of 2^40 ms made callers spin.

import { equal, ok } from "node:assert/strict";
import {
  createClient,
  createRateLimiter,
  type RateLimiter,
} from "../src/client/mod.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { createKvRateLimiter } from "../src/store/kv.ts";
import { createRedisRateLimiter } from "../src/store/redis.ts";
import { inProcessFake } from "./_fast_setup.ts";

const LARGEST = 2 ** 31 - 1;

/** What `make` throws, or `undefined`; what it makes is disposed of. */
async function refusal(make: () => unknown): Promise<unknown> {
  try {
    const made = make() as Partial<AsyncDisposable> | undefined;
    await made?.[Symbol.asyncDispose]?.();
    return undefined;
  } catch (error) {
    return error;
  }
}

Deno.test("time options: a rate interval or command time limit above 2,147,483,647 ms is refused with RangeError naming it, in every limiter and the client's rateLimit", async () => {
  using kv = await Deno.openKv(":memory:");
  const command = () => Promise.resolve(null);
  const makers: Record<string, (extra: object) => unknown> = {
    createRateLimiter: (extra) =>
      createRateLimiter({ requests: 5, interval: 1000, ...extra }),
    "createClient rateLimit": (extra) =>
      createClient({
        environment: inProcessFake().environment,
        clientId: "id",
        clientSecret: "secret",
        rateLimit: { requests: 5, interval: 1000, ...extra },
      }),
    createKvRateLimiter: (extra) => createKvRateLimiter(kv, extra),
    createRedisRateLimiter: (extra) =>
      createRedisRateLimiter({ command, ...extra }),
  };
  for (const [name, make] of Object.entries(makers)) {
    const options = name === "createRedisRateLimiter"
      ? ["interval", "commandTimeout"]
      : ["interval"];
    for (const option of options) {
      for (const ms of [2 ** 31, 2 ** 40, 2 ** 53]) {
        const error = await refusal(() => make({ [option]: ms }));
        ok(error instanceof RangeError, `${name} ${option} ${ms}`);
        equal((error as RangeError & { option: string }).option, option);
      }
      equal(await refusal(() => make({ [option]: LARGEST })), undefined);
    }
  }
});

Deno.test("time options: a provider with 'timeout' at 2,147,483,647 ms gets its token (its flight budget is several such limits, waited in steps a timer can take)", async () => {
  using api = inProcessFake();
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    fetch: api.fetch,
    timeout: LARGEST,
  });
  const token = await provider.getToken();
  ok(api.service.isValidToken(token.accessToken));
  equal(api.service.tokenRequests, 1);
});

Deno.test("time options: a client's 'timeout' above its rate limiter's hold is refused (RangeError, option 'timeout'): a fleet limiter lets a send unanswered for 60 s go, and a slower answer came after another process had its slot", async () => {
  using kv = await Deno.openKv(":memory:");
  using api = inProcessFake();
  const command = () => Promise.resolve(null);
  const client = (rateLimit: RateLimiter, timeout: number) => () =>
    createClient({
      environment: api.environment,
      ...api.credentials,
      rateLimit,
      timeout,
    });
  for (
    const fleet of [
      createKvRateLimiter(kv),
      createRedisRateLimiter({ command }),
    ]
  ) {
    equal(await refusal(client(fleet, 60_000)), undefined);
    const error = await refusal(client(fleet, 60_001));
    ok(error instanceof RangeError);
    equal((error as RangeError & { option: string }).option, "timeout");
    await fleet[Symbol.asyncDispose]();
  }
  // The in-process limiter holds a send until its answer: any timeout.
  const own = createRateLimiter({ requests: 5, interval: 1000 });
  equal(await refusal(client(own, LARGEST)), undefined);
});
