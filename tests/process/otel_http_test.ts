// Issue 37: the semantic conventions' `http.client.request.duration`, as
// Deno's built-in OpenTelemetry exports it (OTLP http/json, decoded here as
// otel_test.ts does): seconds, method, server address and port, the status
// as an integer, `error.type` on failures; and a crawl's page and item
// counts as integers.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { Command, processTest } from "../_processes.ts";

type Attribute = { key: string; value: Record<string, unknown> };
type Point = {
  attributes: Attribute[];
  count?: string;
  explicitBounds?: number[];
};

processTest(
  "under OTEL_DENO=true, http.client.request.duration follows the semantic conventions, and counts are integers",
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
        "tests/process/otel_http_script.ts",
      ],
      env: {
        OTEL_DENO: "true",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.addr.port}`,
        OTEL_SERVICE_NAME: "otel-http-test",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    equal(code, 0, new TextDecoder().decode(stderr));
    const { port, closed } = JSON.parse(new TextDecoder().decode(stdout));

    const metrics = payloads.filter((p) => p.path === "/v1/metrics")
      .flatMap((p) => JSON.parse(p.body).resourceMetrics)
      .flatMap((r) => r.scopeMetrics).flatMap((s) => s.metrics);
    const http = metrics.filter((m) =>
      m.name === "http.client.request.duration"
    );
    ok(http.length > 0, metrics.map((m) => m.name).join(", "));
    equal(http[0].unit, "s");
    const points: Point[] = http.flatMap((m) => m.histogram.dataPoints);
    const attributes = (point: Point) =>
      Object.fromEntries(
        point.attributes.map(({ key, value }) => [key, value]),
      );
    // Keyed by status (or error), the count of attempts each.
    const seen: Record<string, number> = {};
    for (const point of points) {
      const a = attributes(point);
      deepStrictEqual(a["http.request.method"], { stringValue: "GET" });
      deepStrictEqual(a["server.address"], { stringValue: "127.0.0.1" });
      const status = a["http.response.status_code"] as
        | { intValue?: string }
        | undefined;
      const error = (a["error.type"] as { stringValue?: string } | undefined)
        ?.stringValue;
      deepStrictEqual(a["server.port"], {
        intValue: String(status === undefined ? closed : port),
      });
      if (status !== undefined) {
        ok("intValue" in status, JSON.stringify(status));
      }
      const key = `${status?.intValue ?? "none"} ${error ?? "-"}`;
      seen[key] = (seen[key] ?? 0) + Number(point.count);
      deepStrictEqual(point.explicitBounds?.slice(0, 3), [0.005, 0.01, 0.025]);
    }
    // A fetch and three pages answered 200, one 404, one sent nowhere.
    deepStrictEqual(seen, { "200 -": 4, "404 404": 1, "none network": 1 });

    const spans = payloads.filter((p) => p.path === "/v1/traces")
      .flatMap((p) => JSON.parse(p.body).resourceSpans)
      .flatMap((r) => r.scopeSpans).flatMap((s) => s.spans);
    const list = spans.find((span) => span.name === "partner_api.list");
    const counts = Object.fromEntries(
      (list.attributes as Attribute[]).map(({ key, value }) => [key, value]),
    );
    deepStrictEqual(counts["partner_api.pages"], { intValue: "3" });
    deepStrictEqual(counts["partner_api.items"], { intValue: "25" });
  },
);
