/**
 * OpenTelemetry for the partner API client: `openTelemetry()` returns an
 * `onEvent` listener that records spans and metrics through
 * `@opentelemetry/api`. With Deno's built-in OpenTelemetry
 * (`OTEL_DENO=true`) they are exported with no other setup, next to Deno's
 * own `fetch` spans; on Deno Deploy they show in its dashboard. Elsewhere,
 * register an SDK as usual.
 *
 * What it records (no attribute ever holds the secret or a token):
 *
 * | name                          | kind      | attributes                                     |
 * | ----------------------------- | --------- | ---------------------------------------------- |
 * | `partner_api.token.request`   | span      | `partner_api.outcome`, `error.type`            |
 * | `partner_api.list`            | span      | `url.path`, `partner_api.pages`, `partner_api.items`, `partner_api.outcome` |
 * | `partner_api.token.requests`  | counter   | `partner_api.outcome`                          |
 * | `partner_api.quota.remaining` | gauge     | `partner_api.quota.bucket` (`per_hour`, `per_day` only) |
 * | `partner_api.request.duration`| histogram | `http.request.method`, `http.response.status_code` (an integer), `server.address`, `server.port`, `error.type` on failure, `partner_api.base`; in seconds (`s`) |
 * | `http.client.request.duration`| histogram | the semantic conventions' HTTP client metric, for every API request attempt: `http.request.method`, `server.address`, `server.port`, `http.response.status_code` (when an answer came), `error.type` on failure (the status for 4xx and 5xx, `timeout` or `network` when no answer came); in seconds (`s`) |
 * | `partner_api.rate.wait.duration` | histogram | `partner_api.priority` (`high`, `low`, `auto`): each wait of a request for a slot in the rate window; in seconds (`s`), buckets up to 5 minutes |
 *
 * Integers are sent as integers: status codes, ports, and a crawl's page and
 * item counts (Deno's exporter sends other numbers as doubles). Counters
 * count in integers where the meter takes `valueType: INT` (Deno's built-in
 * meter takes only doubles). Durations use the semantic conventions'
 * bucket boundaries, from 5 ms to 10 s.
 *
 * @example A client whose token requests and crawls show in traces
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { openTelemetry } from "@partner-api/client/otel";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ items: { organizations: 3 } });
 * const client = createClient({
 *   environment: api.environment,
 *   ...api.credentials,
 *   onEvent: openTelemetry(), // through @opentelemetry/api: exported with OTEL_DENO=true
 * });
 * equal((await Array.fromAsync(client.list("organizations"))).length, 3);
 * ```
 *
 * @module
 */

import { metrics, SpanStatusCode, trace } from "@opentelemetry/api";
import { instruments, integerAttributes } from "./_instruments.ts";
import type {
  ApiRequestEvent,
  EventListener,
  TokenRequestEvent,
} from "../core/events.ts";
import { VERSION } from "../core/_version.ts";
import type {
  OpenTelemetryOptions,
  TelemetryAttributes,
  TelemetryTracer,
} from "./types.ts";

export type {
  OpenTelemetryOptions,
  TelemetryAttributes,
  TelemetryMeter,
  TelemetryTracer,
} from "./types.ts";

const NAME = "@partner-api/client";
/** The quota buckets the service documents; the gauge records no other. */
const DOCUMENTED_BUCKETS: ReadonlySet<string> = new Set([
  "per_hour",
  "per_day",
]);

/**
 * Returns an `onEvent` listener that records the module's events as
 * OpenTelemetry spans and metrics. Give it to `createTokenProvider` or
 * `createClient` (a client passes it on to the provider it creates).
 *
 * @param options The tracer and meter to record through.
 * @returns The listener.
 *
 * @example A provider whose token requests are counted
 * ```ts
 * import { createTokenProvider } from "@partner-api/client";
 * import { openTelemetry, type TelemetryMeter } from "@partner-api/client/otel";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const counted: string[] = [];
 * const ignored = { add: () => {}, record: () => {} };
 * const meter: TelemetryMeter = {
 *   createCounter: () => ({ add: (_, attributes) => void counted.push(`${attributes["partner_api.outcome"]}`) }),
 *   createGauge: () => ignored,
 *   createHistogram: () => ignored,
 * };
 * await using api = await startFakePartnerApi();
 * const onEvent = openTelemetry({ meter });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials, onEvent });
 * await provider.getToken();
 * await provider.getToken(); // cached: nothing counted
 * deepStrictEqual(counted, ["ok"]);
 * ```
 */
export function openTelemetry(
  options: OpenTelemetryOptions = {},
): EventListener {
  const tracer: TelemetryTracer = options.tracer ??
    trace.getTracer(NAME, VERSION);
  const meter = instruments(options.meter ?? metrics.getMeter(NAME, VERSION));
  const integer = integerAttributes(
    options.meter === undefined,
    options.tracer === undefined,
  );
  return (event) => {
    switch (event.type) {
      case "token.request":
        return tokenRequest(event, tracer, meter);
      case "api.list":
        return endedSpan(tracer, "partner_api.list", event.durationMs, {
          "url.path": event.path,
          "partner_api.pages": integer.span(event.pages),
          "partner_api.items": integer.span(event.items),
          "partner_api.outcome": event.outcome,
        }, event.outcome === "error");
      case "api.request":
        return apiRequest(event, meter, integer.metric);
      case "rate.wait":
        return meter.rateWait.record(event.delayMs / 1000, {
          "partner_api.priority": event.priority,
        });
    }
  };
}

type Instruments = ReturnType<typeof instruments>;

/** An API request attempt: the HTTP client duration and the module's own, in s. */
function apiRequest(
  event: ApiRequestEvent,
  meter: Instruments,
  integer: (value: number) => number,
): void {
  const { status } = event;
  const http: TelemetryAttributes = {
    "http.request.method": event.method,
    "server.address": event.host,
    "server.port": integer(event.port),
  };
  if (status > 0) http["http.response.status_code"] = integer(status);
  const failure = status >= 400 ? String(status) : event.reason;
  if (failure !== undefined) http["error.type"] = failure;
  const seconds = event.durationMs / 1000;
  meter.httpDuration.record(seconds, http);
  meter.requestDuration.record(seconds, {
    ...http,
    "http.response.status_code": integer(status),
    "partner_api.base": event.base,
  });
}

/** A span that ended now and lasted `durationMs`. */
function endedSpan(
  tracer: TelemetryTracer,
  name: string,
  durationMs: number,
  attributes: TelemetryAttributes,
  failed: boolean,
): void {
  const end = Date.now();
  tracer.startSpan(name, { startTime: end - durationMs, attributes })
    .setStatus({ code: failed ? SpanStatusCode.ERROR : SpanStatusCode.OK })
    .end(end);
}

/** A token request: its span, the counter, and the quota it reported. */
function tokenRequest(
  event: TokenRequestEvent,
  tracer: TelemetryTracer,
  meter: Instruments,
): void {
  const { outcome, reason, durationMs } = event;
  const attributes: TelemetryAttributes = { "partner_api.outcome": outcome };
  if (reason !== undefined) attributes["error.type"] = reason;
  const failed = outcome === "error";
  endedSpan(
    tracer,
    "partner_api.token.request",
    durationMs,
    attributes,
    failed,
  );
  meter.tokenRequests.add(1, { "partner_api.outcome": outcome });
  for (const { bucket, remaining } of event.quota ?? []) {
    // Bucket names come from the server: each new one would be a new series
    // in the user's metrics store. Only the documented ones are recorded.
    if (!DOCUMENTED_BUCKETS.has(bucket)) continue;
    meter.quotaRemaining.record(remaining, {
      "partner_api.quota.bucket": bucket,
    });
  }
}

// Types this entry's signatures name, homed in other entries: re-exported
// so that this entry passes `deno doc --lint` alone, as JSR users meet it.
export type * from "../core/events.ts";
export type { QuotaBucket } from "../core/quota_types.ts";
