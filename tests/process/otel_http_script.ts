// Run by otel_http_test.ts under OTEL_DENO=true: a client with
// openTelemetry() fetches (200), fetches what is not there (404) and crawls
// three pages; another, with the same listener, sends to a closed port (no
// answer). Then it exits (Deno flushes its exporters on exit). Prints the
// ports, not through console (Deno exports console lines as logs).

import { createClient } from "../../src/client/mod.ts";
import { collect } from "../../src/client/paginate.ts";
import { openTelemetry } from "../../src/telemetry/otel.ts";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { defineEnvironment } from "../../src/core/environment.ts";

await using api = await startFakePartnerApi({ items: { organizations: 25 } });
const onEvent = openTelemetry();
const client = createClient({
  environment: api.environment,
  ...api.credentials,
  retry: false,
  onEvent,
});
await (await client.fetch("organizations")).body?.cancel();
await (await client.fetch("invoices")).body?.cancel();
await collect(client.list("organizations", { limit: 10 }), { maxItems: 100 });

const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
const closed = listener.addr.port;
listener.close();
const nowhere = createClient({
  environment: defineEnvironment({
    ...api.environment,
    baseUrl: `http://127.0.0.1:${closed}/api/`,
  }),
  ...api.credentials,
  retry: false,
  onEvent,
});
await nowhere.fetch("organizations").catch(() => {});
await Deno.stdout.write(
  new TextEncoder().encode(JSON.stringify({
    port: Number(api.environment.baseUrl.port),
    closed,
  })),
);
