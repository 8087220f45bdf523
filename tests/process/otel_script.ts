// Run by otel_test.ts under OTEL_DENO=true: a client with openTelemetry()
// gets a token, fetches and crawls against the fake, then exits (Deno
// flushes its exporters on exit). Prints the secret and token it used, so
// that the test can look for them in every payload (not through console:
// Deno exports console lines as logs).

import { createClient } from "../../src/client/mod.ts";
import { collect } from "../../src/client/paginate.ts";
import { openTelemetry } from "../../src/telemetry/otel.ts";
import { startFakePartnerApi } from "../../src/testing/mod.ts";

await using api = await startFakePartnerApi({
  quota: { perHour: 10, perDay: 100 },
  items: { organizations: 25 },
});
const client = createClient({
  environment: api.environment,
  ...api.credentials,
  onEvent: openTelemetry(),
});
const token = await client.tokenProvider.getToken();
await (await client.fetch("organizations")).body?.cancel();
await collect(client.list("organizations", { limit: 10 }), { maxItems: 100 });
// Not through console: Deno exports console lines as OpenTelemetry logs.
await Deno.stdout.write(
  new TextEncoder().encode(JSON.stringify({
    secret: api.credentials.clientSecret,
    token: token.accessToken,
  })),
);
