// Issue 37: the semantic conventions' `http.client.request.duration`, as
// Deno's built-in OpenTelemetry exports it (OTLP http/json, decoded here as
// otel_test.ts does): seconds, method, server address and port, the status
// as an integer, `error.type` on failures; and a crawl's page and item
// counts as integers.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { processTest } from "../_processes.ts";
import { metricsOf, runExporting, spansOf } from "./_otel.ts";

type Attribute = { key: string; value: Record<string, unknown> };
type Point = {
  attributes: Attribute[];
  count?: string;
  explicitBounds?: number[];
};

processTest(
  "under OTEL_DENO=true, http.client.request.duration follows the semantic conventions, and counts are integers",
  async () => {
    // The ports of the fake and of a closed one.
    const { payloads, printed: { port, closed } } = await runExporting<
      { port: number; closed: number }
    >("tests/process/otel_http_script.ts", "otel-http-test");
    const metrics = metricsOf(payloads);
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

    const spans = spansOf(payloads);
    const list = spans.find((span) => span.name === "partner_api.list");
    const counts = attributesOf(list);
    deepStrictEqual(counts["partner_api.pages"], { intValue: "3" });
    deepStrictEqual(counts["partner_api.items"], { intValue: "25" });
  },
);

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
