// Issue 32: the API's time limits on real timers leave nothing pending after
// the last answer. That a limit ends a request with no answer, and never a
// body read after the headers, is driven with fake timers (client_robust_test,
// review_round4_test); the process test "the core … ends with its last
// answer" shows that no timer keeps a script alive.

import { createClient } from "../src/client/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";

Deno.test("on real timers, a run of requests one after another leaves no timer pending once answered", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    timeout: 30_000,
  });
  for (let call = 0; call < 50; call++) {
    const response = await client.fetch("organizations");
    await response.body?.cancel();
  }
  // The sanitizers (--sanitize-ops) check that no setTimeout is left.
});
