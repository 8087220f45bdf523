// What a dashboard gets: the module's events as OpenTelemetry spans and
// metrics (exported by Deno itself), and the same events as log lines.
// Runs against the fake, with a token quota of 5 per hour, a 503 and a
// revoked token on the way.
//
//   OTEL_DENO=true deno run --allow-net=127.0.0.1 examples/observe.ts
//
// Without a collector on localhost:4318 the spans and metrics are dropped
// without a word (docs/events.md); the log lines print either way.

import {
  createClient,
  type EventListener,
  type PartnerApiEvent,
} from "@partner-api/client";
import { openTelemetry } from "@partner-api/client/otel";
import { startFakePartnerApi } from "@partner-api/client/testing";

/** One line per event, as a log would show it. */
export function describeEvent(event: PartnerApiEvent): string {
  switch (event.type) {
    case "token.request":
      return `token request ${event.outcome}${
        event.reason ? ` (${event.reason})` : ""
      } in ${event.durationMs} ms; quota ${
        (event.quota ?? []).map((b) => `${b.bucket} ${b.remaining}/${b.limit}`)
          .join(", ") || "not reported"
      }`;
    case "token.refresh":
      return `background refresh, ${event.expiresInMs} ms before expiry`;
    case "quota.blocked":
      return `quota exhausted: no token request before ${
        new Date(event.retryAt).toISOString()
      }`;
    case "api.request":
      return `${event.method} ${event.path} (${event.base}) → ${
        event.status || "no answer"
      }, attempt ${event.attempt}, ${event.durationMs} ms`;
    case "token.retry":
      return `token request retried after ${event.reason} ${
        event.status || ""
      } in ${Math.round(event.delayMs)} ms`;
    case "api.retry":
      return `retry after ${event.reason} ${event.status || ""} in ${
        Math.round(event.delayMs)
      } ms`;
    case "api.renewal":
      return `401 on ${event.path}: token renewed, request sent again`;
    case "rate.wait":
      return `waited ${event.delayMs} ms for the rate window`;
    case "api.list":
      return `list ${event.path} ${event.outcome}: ${event.items} items in ${event.pages} pages, ${event.durationMs} ms`;
    case "rate.degraded":
      return `rate limit store (${event.store}) failing (${
        event.code ?? event.reason
      }): pacing alone at ${event.requests} per ${event.interval} ms`;
    case "rate.restored":
      return `rate limit store (${event.store}) answers again: pacing with the fleet`;
  }
}

if (import.meta.main) {
  await using api = await startFakePartnerApi({
    quota: { perHour: 5 },
    items: { transactions: 120 },
  });
  const otel = openTelemetry();
  const onEvent: EventListener = (event) => {
    otel(event);
    console.log(describeEvent(event));
  };
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    onEvent,
  });
  api.injectApiFaults({ kind: "status", status: 503 });
  await (await client.fetch("organizations")).body?.cancel();
  api.revokeTokens();
  await (await client.fetch("organizations")).body?.cancel();
  let items = 0;
  for await (const _ of client.list("transactions", { limit: 50 })) items++;
  console.log(`${items} items, ${api.tokenRequests} token requests`);
}
