// The shapes openTelemetry() records through. Public through ./otel.

/**
 * Attribute values, as OpenTelemetry takes them.
 *
 * @example What a failed token request's span says
 * ```ts
 * import { createTokenProvider } from "@partner-api/client";
 * import { openTelemetry, type TelemetryAttributes } from "@partner-api/client/otel";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual, rejects } from "node:assert/strict";
 *
 * const recorded: TelemetryAttributes[] = [];
 * const span = { setStatus: () => ({ end: () => {} }) };
 * const tracer = { startSpan: (_: string, { attributes }: { attributes: TelemetryAttributes }) =>
 *   (recorded.push(attributes), span) };
 * const onEvent = openTelemetry({ tracer });
 * await using api = await startFakePartnerApi();
 * const { clientId } = api.credentials;
 * const provider = createTokenProvider({ ...api.environment, clientId, clientSecret: "wrong", onEvent });
 * await rejects(provider.getToken());
 * deepStrictEqual(recorded, [{ "partner_api.outcome": "error", "error.type": "status" }]);
 * ```
 */
export type TelemetryAttributes = Record<string, string | number | boolean>;

/**
 * What {@linkcode openTelemetry} needs of a tracer: any `Tracer` of `@opentelemetry/api` is one.
 *
 * @example The spans of a crawl
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { openTelemetry, type TelemetryTracer } from "@partner-api/client/otel";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const spans: string[] = [];
 * const span = { setStatus: () => ({ end: () => {} }) };
 * const tracer: TelemetryTracer = { startSpan: (name) => (spans.push(name), span) };
 * await using api = await startFakePartnerApi();
 * const onEvent = openTelemetry({ tracer });
 * const client = createClient({ environment: api.environment, ...api.credentials, onEvent });
 * await Array.fromAsync(client.list("organizations"));
 * deepStrictEqual(spans, ["partner_api.token.request", "partner_api.list"]);
 * ```
 */
export interface TelemetryTracer {
  /** Starts a span; the module ends it at once with its measured times. */
  startSpan(
    name: string,
    options: { startTime: number; attributes: TelemetryAttributes },
  ): {
    setStatus(status: { code: 1 | 2 }): { end(endTime: number): void };
  };
}

/**
 * What {@linkcode openTelemetry} needs of a meter: any `Meter` of `@opentelemetry/api` is one.
 *
 * @example The quota left, as a gauge
 * ```ts
 * import { createTokenProvider } from "@partner-api/client";
 * import { openTelemetry, type TelemetryMeter } from "@partner-api/client/otel";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const gauge: string[] = [];
 * const ignored = { add: () => {}, record: () => {} };
 * const meter: TelemetryMeter = { createCounter: () => ignored, createHistogram: () => ignored,
 *   createGauge: () => ({ record: (n, a) => gauge.push(`${a["partner_api.quota.bucket"]}=${n}`) }) };
 * await using api = await startFakePartnerApi({ quota: { perHour: 10, perDay: 50 } });
 * const onEvent = openTelemetry({ meter });
 * await createTokenProvider({ ...api.environment, ...api.credentials, onEvent }).getToken();
 * deepStrictEqual(gauge, ["per_hour=9", "per_day=49"]);
 * ```
 */
export interface TelemetryMeter {
  /** A counter, for token requests: asked for integers (`ValueType.INT`) first, else without. */
  createCounter(
    name: string,
    options: { description: string; unit: string; valueType?: number },
  ): {
    add(value: number, attributes: TelemetryAttributes): void;
  };
  /** A gauge, for the quota left. */
  createGauge(name: string, options: { description: string; unit: string }): {
    record(value: number, attributes: TelemetryAttributes): void;
  };
  /** A histogram, for request durations, with the bucket boundaries advised. */
  createHistogram(
    name: string,
    options: {
      description: string;
      unit: string;
      advice?: { explicitBucketBoundaries?: number[] };
    },
  ): {
    record(value: number, attributes: TelemetryAttributes): void;
  };
}

/**
 * Options of {@linkcode openTelemetry}.
 *
 * @example Failed token requests as error spans
 * ```ts
 * import { SpanStatusCode } from "@opentelemetry/api";
 * import { createTokenProvider } from "@partner-api/client";
 * import { openTelemetry, type OpenTelemetryOptions } from "@partner-api/client/otel";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual, rejects } from "node:assert/strict";
 *
 * const statuses: number[] = [];
 * const options: OpenTelemetryOptions = {
 *   tracer: { startSpan: () => ({ setStatus: ({ code }) => (statuses.push(code), { end: () => {} }) }) },
 *   // meter: metrics.getMeter("billing-sync"), or any Meter of @opentelemetry/api
 * };
 * await using api = await startFakePartnerApi({ faults: [{ kind: "status", status: 503 }] });
 * const onEvent = openTelemetry(options);
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials, retry: false, onEvent });
 * await rejects(provider.getToken());
 * deepStrictEqual(statuses, [SpanStatusCode.ERROR]);
 * ```
 */
export interface OpenTelemetryOptions {
  /**
   * The tracer for spans.
   * @default {trace.getTracer("@partner-api/client", VERSION)}
   */
  tracer?: TelemetryTracer;
  /**
   * The meter for metrics.
   * @default {metrics.getMeter("@partner-api/client", VERSION)}
   */
  meter?: TelemetryMeter;
}
