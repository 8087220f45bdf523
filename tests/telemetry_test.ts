// openTelemetry() against a loopback token endpoint, through a meter that
// keeps what it is given: the series a server can make.

import { deepStrictEqual, ok, rejects } from "node:assert/strict";
import { openTelemetry } from "../src/telemetry/otel.ts";
import type {
  TelemetryAttributes,
  TelemetryMeter,
  TelemetryTracer,
} from "../src/telemetry/otel.ts";
import { createTokenProvider } from "../src/token/mod.ts";

/** A meter that keeps every gauge point, and a tracer that drops spans. */
function recorder() {
  const gauges: { name: string; attributes: TelemetryAttributes }[] = [];
  const nothing = { add() {}, record() {} };
  const meter: TelemetryMeter = {
    createCounter: () => nothing,
    createHistogram: () => nothing,
    createGauge: (name) => ({
      record: (_value, attributes) => gauges.push({ name, attributes }),
    }),
  };
  const tracer: TelemetryTracer = {
    startSpan: () => ({ setStatus: () => ({ end() {} }) }),
  };
  return { gauges, meter, tracer };
}

/** A token endpoint answering each request with a token and `quota` as its quota header; its provider's options. */
function tokenEndpoint(quota: string) {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      Response.json(
        { access_token: "tok", expires_in: 3600, token_type: "Bearer" },
        { headers: { "Idp-Client-Quota-Limit": quota } },
      ),
  );
  return Object.assign(server, {
    options: tokenEndpoint.optionsAt(server.addr.port),
  });
}
/** A provider's options for a token endpoint on loopback `port`. */
tokenEndpoint.optionsAt = (port: number) => ({
  tokenUrl: `http://127.0.0.1:${port}/token`,
  audience: "https://partner.example/api",
  clientId: "id",
  clientSecret: "secret",
});

Deno.test("the quota gauge records only the buckets the service documents: a server sending 100 new bucket names creates no new series", async () => {
  const invented = Array.from(
    { length: 100 },
    (_, i) => `b=bucket_${i};q=10;r=5;t=60`,
  );
  await using server = tokenEndpoint(
    [
      "b=per_hour;q=10;r=9;t=3540",
      ...invented,
      "b=per_day;q=50;r=49;t=43200",
    ].join(","),
  );
  const { gauges, meter, tracer } = recorder();
  const provider = createTokenProvider({
    ...server.options,
    onEvent: openTelemetry({ meter, tracer }),
  });
  await provider.getToken();
  deepStrictEqual(
    gauges.map(({ attributes }) => attributes["partner_api.quota.bucket"]),
    ["per_hour", "per_day"],
  );
});

Deno.test("a tracer that throws costs a token request its span alone: the counter and the quota gauge are recorded (they were lost with it)", async () => {
  await using server = tokenEndpoint("b=per_hour;q=10;r=9;t=3540");
  const { gauges, meter } = recorder();
  const counted: string[] = [];
  meter.createCounter = () => ({
    add: (_value, attributes) =>
      void counted.push(String(attributes["partner_api.outcome"])),
  });
  const tracer: TelemetryTracer = {
    startSpan: () => {
      throw new Error("the tracer broke");
    },
  };
  const provider = createTokenProvider({
    ...server.options,
    onEvent: openTelemetry({ meter, tracer }),
  });
  await provider.getToken();
  deepStrictEqual(counted, ["ok"]);
  deepStrictEqual(gauges.length, 1);
});

Deno.test("a meter whose counter, or one bucket's gauge, throws costs that record alone: the other bucket's gauge is recorded (r74 F2: both were lost)", async () => {
  await using server = tokenEndpoint(
    "b=per_hour;q=10;r=9;t=3540,b=per_day;q=50;r=49;t=43200",
  );
  const recorded: unknown[] = [];
  const meter: TelemetryMeter = {
    createCounter: () => ({
      add: () => {
        throw new Error("the counter broke");
      },
    }),
    createHistogram: () => ({ add() {}, record() {} }),
    createGauge: () => ({
      record: (_value, attributes) => {
        const bucket = attributes["partner_api.quota.bucket"];
        if (bucket === "per_hour") throw new Error("the gauge broke");
        recorded.push(bucket);
      },
    }),
  };
  const provider = createTokenProvider({
    ...server.options,
    onEvent: openTelemetry({ meter, tracer: recorder().tracer }),
  });
  await provider.getToken();
  deepStrictEqual(recorded, ["per_day"]);
});

Deno.test("a failed token request's span names its reason as error.type, the event's own (only a doc example reached it)", async () => {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => Response.json({ error: "invalid_client" }, { status: 401 }),
  );
  const spans: TelemetryAttributes[] = [];
  const tracer: TelemetryTracer = {
    startSpan: (_name, { attributes }) => {
      spans.push(attributes);
      return { setStatus: () => ({ end() {} }) };
    },
  };
  const record = openTelemetry({ meter: recorder().meter, tracer });
  const reasons: unknown[] = [];
  const provider = createTokenProvider({
    ...tokenEndpoint.optionsAt(server.addr.port),
    onEvent: (event) => {
      if (event.type === "token.request") reasons.push(event.reason);
      record(event);
    },
  });
  await rejects(provider.getToken());
  ok(reasons.length > 0 && reasons.every((reason) => reason !== undefined));
  deepStrictEqual(spans.map((attributes) => attributes["error.type"]), reasons);
});

/** A meter keeping each point of the histogram `name`: its unit, value and `attribute`. */
function histogram(name: string, attribute: string) {
  const points: { unit: string; value: number; attribute: unknown }[] = [];
  const nothing = { add() {}, record() {} };
  const meter: TelemetryMeter = {
    createCounter: () => nothing,
    createGauge: () => nothing,
    createHistogram: (created, { unit }) => ({
      record: (value, attributes) =>
        created === name &&
        points.push({ unit, value, attribute: attributes[attribute] }),
    }),
  };
  return { meter, points };
}

/** An API request of 1.25 s answered 200. */
const REQUEST = {
  type: "api.request",
  method: "GET",
  base: "api",
  path: "/api/organizations",
  host: "api.partner.example",
  port: 443,
  status: 200,
  attempt: 1,
  durationMs: 1250,
} as const;

Deno.test("request durations follow the semantic conventions: seconds (unit s), status codes integers", () => {
  const { meter, points } = histogram(
    "partner_api.request.duration",
    "http.response.status_code",
  );
  const listener = openTelemetry({ meter, tracer: recorder().tracer });
  listener(REQUEST);
  deepStrictEqual(points, [{ unit: "s", value: 1.25, attribute: 200 }]);
  ok(Number.isInteger(points[0]!.attribute));
});

Deno.test("an HTTP client duration histogram that throws costs its own record alone: the module's request duration is recorded (r76 F3: both were lost)", () => {
  const { meter, points } = histogram(
    "partner_api.request.duration",
    "http.response.status_code",
  );
  const histograms = meter.createHistogram;
  meter.createHistogram = (name, options) =>
    name === "partner_api.request.duration" ? histograms(name, options) : {
      record: () => {
        throw new Error("the histogram broke");
      },
    };
  const listener = openTelemetry({ meter, tracer: recorder().tracer });
  listener(REQUEST);
  deepStrictEqual(points, [{ unit: "s", value: 1.25, attribute: 200 }]);
});

Deno.test("rate waits are a histogram by priority: partner_api.rate.wait.duration in seconds, attribute partner_api.priority", () => {
  const { meter, points } = histogram(
    "partner_api.rate.wait.duration",
    "partner_api.priority",
  );
  const listener = openTelemetry({ meter, tracer: recorder().tracer });
  listener({ type: "rate.wait", delayMs: 2500, priority: "low" });
  listener({ type: "rate.wait", delayMs: 40, priority: "auto" });
  deepStrictEqual(points, [
    { unit: "s", value: 2.5, attribute: "low" },
    { unit: "s", value: 0.04, attribute: "auto" },
  ]);
});
