/**
 * OpenTelemetry for the partner API client: `openTelemetry()` returns an `onEvent` listener that records spans and
 * metrics through `@opentelemetry/api`; no attribute ever holds the secret or a token. With Deno's built-in
 * OpenTelemetry (`OTEL_DENO=true`) they are exported with no other setup; elsewhere, register an SDK as usual.
 *
 * It records spans of token requests and crawls, and metrics of token requests, the quota left and request durations
 * (in seconds, with the HTTP semantic conventions' metric): their names and attributes are in docs/events.md.
 *
 * @example A client whose token requests and crawls show in traces
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { openTelemetry } from "@partner-api/client/otel";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ items: { organizations: 3 } });
 * const client = createClient({ environment: api.environment, ...api.credentials, onEvent: openTelemetry() });
 * equal((await Array.fromAsync(client.list("organizations"))).length, 3);
 * ```
 *
 * @module
 */

import { metrics, SpanStatusCode, trace } from "@opentelemetry/api";
import { instruments, integerAttributes } from "./_instruments.ts";
import type { EventListener, TokenRequestEvent } from "../core/events.ts";
import { VERSION } from "../core/_version.ts";
import { optionNames, requireKnownOptions, tried } from "../core/_check.ts";
import type {
  OpenTelemetryOptions,
  TelemetryAttributes,
  TelemetryTracer,
} from "./types.ts";

export type * from "./types.ts";

const NAME = "@partner-api/client";

/**
 * Returns an `onEvent` listener that records the module's events as spans and
 * metrics, for `createTokenProvider` or `createClient`.
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
 * const meter: TelemetryMeter = { createGauge: () => ignored, createHistogram: () => ignored,
 *   createCounter: () => ({ add: (_, a) => void counted.push(`${a["partner_api.outcome"]}`) }) };
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
  const names = optionNames<OpenTelemetryOptions>()("tracer meter");
  requireKnownOptions(options, names, "Cannot record with OpenTelemetry");
  const tracer = options.tracer ?? trace.getTracer(NAME, VERSION);
  const meter = instruments(options.meter ?? metrics.getMeter(NAME, VERSION));
  const integer = integerAttributes(options);
  return (event) => {
    switch (event.type) {
      case "token.request":
        return tokenRequest(event, tracer, meter);
      case "api.list":
        return endedSpan(tracer, "partner_api.list", event, {
          "url.path": event.path,
          "partner_api.pages": integer.span(event.pages),
          "partner_api.items": integer.span(event.items),
          "partner_api.outcome": event.outcome,
        });
      case "api.request": {
        // An attempt: the HTTP client duration and the module's own, in s.
        const { status } = event, code = "http.response.status_code";
        const http: TelemetryAttributes = {
          "http.request.method": event.method,
          "server.address": event.host,
          "server.port": integer.metric(event.port),
        };
        if (status > 0) http[code] = integer.metric(status);
        const failure = status >= 400 ? String(status) : event.reason;
        if (failure !== undefined) http["error.type"] = failure;
        const seconds = event.durationMs / 1000;
        // Each on its own: an instrument that throws costs its record alone.
        tried(() => meter.httpDuration.record(seconds, http));
        tried(() =>
          meter.requestDuration.record(seconds, {
            ...http,
            [code]: integer.metric(status),
            "partner_api.base": event.base,
          })
        );
        return;
      }
      case "rate.wait":
        return meter.rateWait.record(event.delayMs / 1000, {
          "partner_api.priority": event.priority,
        });
    }
  };
}

/** A span that ended now, lasted the event's `durationMs`, and failed if its outcome did. */
function endedSpan(
  tracer: TelemetryTracer,
  name: string,
  { durationMs, outcome }: { durationMs: number; outcome: "ok" | "error" },
  attributes: TelemetryAttributes,
): void {
  const end = Date.now();
  const code = outcome === "error" ? SpanStatusCode.ERROR : SpanStatusCode.OK;
  tracer.startSpan(name, { startTime: end - durationMs, attributes })
    .setStatus({ code }).end(end);
}

/** A token request: its span, the counter, and the quota it reported; each record that throws costs itself alone. */
function tokenRequest(
  event: TokenRequestEvent,
  tracer: TelemetryTracer,
  meter: ReturnType<typeof instruments>,
): void {
  const { outcome, reason } = event;
  const attributes: TelemetryAttributes = { "partner_api.outcome": outcome };
  if (reason !== undefined) attributes["error.type"] = reason;
  tried(() =>
    endedSpan(tracer, "partner_api.token.request", event, attributes)
  );
  tried(() => meter.tokenRequests.add(1, { "partner_api.outcome": outcome }));
  for (const { bucket, remaining } of event.quota ?? []) {
    // The documented buckets alone: server-chosen names would each be a new series in the user's metrics store.
    if (bucket !== "per_hour" && bucket !== "per_day") continue;
    const ofBucket = { "partner_api.quota.bucket": bucket };
    tried(() => meter.quotaRemaining.record(remaining, ofBucket));
  }
}

// Types its signatures name, homed elsewhere: so this entry passes `deno doc --lint` alone.
export type * from "../core/events.ts";
export type { QuotaBucket } from "../core/quota_types.ts";
