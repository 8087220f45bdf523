// Issue 32: the API's time limits on the platform's own timers. Requests one
// after another set no timer of their own; a limit still ends a request
// that gets no answer, never a body read after the headers, and leaves
// nothing pending. These run on real time, for at most ~100 ms each: the
// fake-timer path is covered wherever tests drive time.

import { equal, ok, rejects } from "node:assert/strict";
import { ApiError } from "../src/core/errors.ts";
import { createClient } from "../src/client/mod.ts";
import { defineEnvironment } from "../src/core/environment.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";

/** A loopback origin whose answers `handler` makes; the fake issues tokens. */
async function originBesideFake(
  handler: (request: Request) => Response | Promise<Response>,
) {
  const api = await startFakePartnerApi();
  const stop = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen() {},
    signal: stop.signal,
  }, handler);
  const environment = defineEnvironment({
    ...api.environment,
    baseUrl: `http://127.0.0.1:${server.addr.port}/api/`,
  });
  return {
    environment,
    credentials: api.credentials,
    async [Symbol.asyncDispose]() {
      stop.abort();
      await server.finished;
      await api[Symbol.asyncDispose]();
    },
  };
}

Deno.test("on the platform's timers, a request with no answer ends at its time limit with reason 'timeout'", async () => {
  const never = Promise.withResolvers<Response>();
  await using origin = await originBesideFake(() => never.promise);
  const client = createClient({
    environment: origin.environment,
    ...origin.credentials,
    timeout: 30,
    retry: false,
  });
  await client.tokenProvider.getToken();
  const started = Date.now();
  await rejects(client.fetch("organizations"), (error: unknown) => {
    ok(error instanceof ApiError);
    equal(error.reason, "timeout");
    equal((error.cause as DOMException).name, "TimeoutError");
    return true;
  });
  const took = Date.now() - started;
  ok(took >= 30 && took < 1000, `${took} ms for a 30 ms limit`);
  never.resolve(new Response(null, { status: 204 }));
});

Deno.test("on the platform's timers, the limit of client.fetch ends at the headers: a body read later is not cut off", async () => {
  const late = Promise.withResolvers<void>();
  await using origin = await originBesideFake(() =>
    new Response(
      new ReadableStream({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode("first "));
          await late.promise;
          controller.enqueue(new TextEncoder().encode("last"));
          controller.close();
        },
      }),
    )
  );
  const client = createClient({
    environment: origin.environment,
    ...origin.credentials,
    timeout: 30,
    retry: false,
  });
  const response = await client.fetch("organizations");
  // Past the 30 ms limit and its window (3 ms), the body still arrives.
  await new Promise((resolve) => setTimeout(resolve, 60));
  late.resolve();
  equal(await response.text(), "first last");
});

Deno.test("on the platform's timers, a run of requests one after another leaves nothing pending once answered", async () => {
  await using origin = await originBesideFake(() =>
    new Response("{}", { headers: { "content-type": "application/json" } })
  );
  const client = createClient({
    environment: origin.environment,
    ...origin.credentials,
    timeout: 30_000,
  });
  for (let call = 0; call < 50; call++) {
    const response = await client.fetch("organizations");
    await response.body?.cancel();
  }
  // The sanitizers (--sanitize-ops) check that no setTimeout is left. They
  // do not see a timeout signal still listened to: the process test "the
  // core … ends with its last answer" (least_privilege_test) does.
});
