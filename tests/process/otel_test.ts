// Issue 20: with Deno's built-in OpenTelemetry (OTEL_DENO=true, OTLP over
// http/json), what openTelemetry() records reaches a collector: here a
// receiver on loopback that keeps every payload.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { processTest } from "../_processes.ts";
import { metricsOf, type Payload, runExporting, spansOf } from "./_otel.ts";

processTest(
  "under OTEL_DENO=true, spans and metrics reach an OTLP receiver, with no secret or token",
  async () => {
    const { payloads, printed: { secret, token } } = await runExporting<
      { secret: string; token: string }
    >("tests/process/otel_script.ts", "otel-test");
    for (const { body } of payloads) {
      ok(!body.includes(secret), "no payload holds the secret");
      ok(!body.includes(token), "no payload holds a token");
    }
    const spans = spansOf(payloads);
    const names = new Set(spans.map((span) => span.name));
    ok(names.has("partner_api.token.request"), [...names].join(", "));
    ok(names.has("partner_api.list"));
    const points = metricPoints(payloads);
    equal(points("partner_api.token.requests", "partner_api.outcome").ok, 1);
    const remaining = points(
      "partner_api.quota.remaining",
      "partner_api.quota.bucket",
    );
    deepStrictEqual(remaining, { per_hour: 9, per_day: 99 });
    // One fetch and three pages: four requests timed.
    deepStrictEqual(
      points("partner_api.request.duration", "partner_api.base"),
      { api: 4 },
    );
    // The semantic conventions: durations in seconds, status codes integers.
    const duration = metricsNamed(payloads, "partner_api.request.duration")[0];
    equal(duration!.unit, "s");
    const status = duration!.histogram.dataPoints[0]!.attributes.find((
      a: { key: string },
    ) => a.key === "http.response.status_code");
    deepStrictEqual(status?.value, { intValue: "200" });
  },
);

function metricsNamed(
  payloads: Payload[],
  name: string,
): {
  unit: string;
  histogram: {
    dataPoints: { attributes: { key: string; value: unknown }[] }[];
  };
}[] {
  return metricsOf(payloads).filter((m) => m.name === name);
}

/** The last value of each data point of metric `name`, keyed by one attribute. */
function metricPoints(payloads: Payload[]) {
  const metrics = metricsOf(payloads);
  return (name: string, key: string): Record<string, number> => {
    const values: Record<string, number> = {};
    for (const metric of metrics.filter((m) => m.name === name)) {
      const data = metric.sum ?? metric.gauge ?? metric.histogram;
      for (const point of data.dataPoints) {
        const attribute = point.attributes.find((a: { key: string }) =>
          a.key === key
        );
        values[attribute?.value.stringValue] = Number(
          point.asInt ?? point.asDouble ?? point.count,
        );
      }
    }
    return values;
  };
}
