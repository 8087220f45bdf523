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
    const { payloads, port, closed } = await runExporting();
    const metrics = payloads.filter((p) => p.path === "/v1/metrics")
      .flatMap((p) => JSON.parse(p.body).resourceMetrics)
      .flatMap((r) => r.scopeMetrics).flatMap((s) => s.metrics);
    const http = metrics.filter((m) =>
      m.name === "http.client.request.duration"
    );
    ok(http.length > 0, metrics.map((m) => m.name).join(", "));
    equal(http[0].unit, "s");
    const points: Point[] = http.flatMap((m) => m.histogram.dataPoints);
    // A fetch and three pages answered 200, one 404, one sent nowhere.
    deepStrictEqual(countsByStatus(points, port, closed), {
      "200 -": 4,
      "404 404": 1,
      "none network": 1,
    });

    const spans = payloads.filter((p) => p.path === "/v1/traces")
      .flatMap((p) => JSON.parse(p.body).resourceSpans)
      .flatMap((r) => r.scopeSpans).flatMap((s) => s.spans);
    const list = spans.find((span) => span.name === "partner_api.list");
    const counts = attributesOf(list);
    deepStrictEqual(counts["partner_api.pages"], { intValue: "3" });
    deepStrictEqual(counts["partner_api.items"], { intValue: "25" });
  },
);

/**
 * Runs otel_http_script.ts under OTEL_DENO=true, exporting to a receiver
 * here: what it exported, and the ports of the fake and of a closed one.
 */
async function runExporting() {
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
  return { payloads, port, closed };
}

function attributesOf(point: { attributes: Attribute[] }) {
  return Object.fromEntries(
    point.attributes.map(({ key, value }) => [key, value]),
  );
}

/**
 * The attempts per status (or error) the points count, each point checked
 * against the conventions: method, address, port (the closed one when no
 * status), an integer status, and the default buckets.
 */
function countsByStatus(
  points: Point[],
  port: number,
  closed: number,
): Record<string, number> {
  const seen: Record<string, number> = {};
  for (const point of points) {
    const a = attributesOf(point);
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
  return seen;
}
