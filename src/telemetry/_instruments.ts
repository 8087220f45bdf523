// Internal: the instruments openTelemetry() records through.

import { metrics, trace, ValueType } from "@opentelemetry/api";
import type { OpenTelemetryOptions, TelemetryMeter } from "./types.ts";
import { tried } from "../core/_check.ts";

/**
 * Integers as the exporter sends them as such: `BigInt` for Deno's own providers
 * (which send numbers as doubles), a number for the JS SDK (which drops `BigInt`).
 */
export function integerAttributes({ meter, tracer }: OpenTelemetryOptions) {
  const deno =
    (globalThis as { Deno?: { telemetry?: Record<string, unknown> } })
      .Deno?.telemetry;
  // The attribute types of @opentelemetry/api know no BigInt; Deno's do.
  const big = (value: number) => BigInt(value) as unknown as number;
  const same = (value: number) => value;
  // `big` when none is given and the global provider in use is Deno's own.
  const kind = (given: unknown, own: unknown, global: () => unknown) =>
    given === undefined && own !== undefined && global() === own ? big : same;
  return {
    metric: kind(meter, deno?.meterProvider, () => metrics.getMeterProvider()),
    span: kind(tracer, deno?.tracerProvider, () => trace.getTracerProvider()),
  };
}

/** The semantic conventions' bucket boundaries for HTTP durations, in s. */
// deno-fmt-ignore
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/** A wait for the rate window lasts up to an interval (5 min) and the hold. */
const WAIT_BUCKETS = [...DURATION_BUCKETS, 30, 60, 120, 300];

/** The metrics the module records, made once per listener. */
export function instruments(meter: TelemetryMeter) {
  const counter = {
    description: "Requests to the token endpoint, as the quota counts them",
    unit: "{request}",
  };
  const name = "partner_api.token.requests";
  const integers = { ...counter, valueType: ValueType.INT };
  // Deno's built-in meter takes doubles only.
  const tokenRequests = tried(() => meter.createCounter(name, integers)) ??
    meter.createCounter(name, counter);
  const advice = { explicitBucketBoundaries: DURATION_BUCKETS };
  return {
    tokenRequests,
    quotaRemaining: meter.createGauge("partner_api.quota.remaining", {
      description:
        "Tokens left in each quota bucket, as the token endpoint reported",
      unit: "{token}",
    }),
    requestDuration: meter.createHistogram("partner_api.request.duration", {
      description: "API requests, each attempt, send to answer",
      unit: "s",
      advice,
    }),
    httpDuration: meter.createHistogram("http.client.request.duration", {
      description: "Duration of HTTP client requests.",
      unit: "s",
      advice,
    }),
    rateWait: meter.createHistogram("partner_api.rate.wait.duration", {
      description: "Waits of API requests for a slot in the rate window",
      unit: "s",
      advice: { explicitBucketBoundaries: WAIT_BUCKETS },
    }),
  };
}
