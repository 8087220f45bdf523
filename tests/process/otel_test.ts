// Issue 20: with Deno's built-in OpenTelemetry (OTEL_DENO=true, OTLP over
// http/json), what openTelemetry() records reaches a collector: here a
// receiver on loopback that keeps every payload.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { Command, processTest } from "../_processes.ts";

processTest(
  "under OTEL_DENO=true, spans and metrics reach an OTLP receiver, with no secret or token",
  async () => {
    const payloads: { path: string; body: string }[] = [];
    await using receiver = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (request) => {
        payloads.push({
          path: new URL(request.url).pathname,
          body: await request.text(),
        });
        return Response.json({});
      },
    );
    const { code, stdout, stderr } = await new Command("deno", {
      args: [
        "run",
        "--no-prompt",
        "--allow-net=127.0.0.1",
        "tests/process/otel_script.ts",
      ],
      env: {
        OTEL_DENO: "true",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.addr.port}`,
        OTEL_SERVICE_NAME: "otel-test",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    equal(code, 0, new TextDecoder().decode(stderr));
    const { secret, token } = JSON.parse(new TextDecoder().decode(stdout));
    for (const { body } of payloads) {
      ok(!body.includes(secret), "no payload holds the secret");
      ok(!body.includes(token), "no payload holds a token");
    }
    const spans = payloads.filter((p) => p.path === "/v1/traces")
      .flatMap((p) => JSON.parse(p.body).resourceSpans)
      .flatMap((r) => r.scopeSpans).flatMap((s) => s.spans);
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
  payloads: { path: string; body: string }[],
  name: string,
): {
  unit: string;
  histogram: {
    dataPoints: { attributes: { key: string; value: unknown }[] }[];
  };
}[] {
  return payloads.filter((p) => p.path === "/v1/metrics")
    .flatMap((p) => JSON.parse(p.body).resourceMetrics)
    .flatMap((r) => r.scopeMetrics).flatMap((s) => s.metrics)
    .filter((m) => m.name === name);
}

/** The last value of each data point of metric `name`, keyed by one attribute. */
function metricPoints(payloads: { path: string; body: string }[]) {
  const metrics = payloads.filter((p) => p.path === "/v1/metrics")
    .flatMap((p) => JSON.parse(p.body).resourceMetrics)
    .flatMap((r) => r.scopeMetrics).flatMap((s) => s.metrics);
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
