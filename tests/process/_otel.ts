// Shared by the OpenTelemetry process tests: a script run under Deno's
// built-in OpenTelemetry (OTEL_DENO=true, OTLP over http/json), exporting to
// a receiver on loopback that keeps every payload, and what those payloads
// hold, decoded.

import { equal } from "node:assert/strict";
import { Command } from "../_processes.ts";

/** One OTLP request the receiver kept. */
export interface Payload {
  path: string;
  body: string;
}

/**
 * Runs `script` under OTEL_DENO=true as `service`, exporting to a receiver
 * here; once it has exited 0: what it exported, and the JSON it printed.
 */
export async function runExporting<Printed>(
  script: string,
  service: string,
): Promise<{ payloads: Payload[]; printed: Printed }> {
  const payloads: Payload[] = [];
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
    args: ["run", "--no-prompt", "--allow-net=127.0.0.1", script],
    env: {
      OTEL_DENO: "true",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.addr.port}`,
      OTEL_SERVICE_NAME: service,
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  equal(code, 0, new TextDecoder().decode(stderr));
  const printed = JSON.parse(new TextDecoder().decode(stdout)) as Printed;
  return { payloads, printed };
}

/** Every span the payloads carry. */
export function spansOf(payloads: Payload[]) {
  return payloads.filter((p) => p.path === "/v1/traces")
    .flatMap((p) => JSON.parse(p.body).resourceSpans)
    .flatMap((r) => r.scopeSpans).flatMap((s) => s.spans);
}

/** Every metric the payloads carry. */
export function metricsOf(payloads: Payload[]) {
  return payloads.filter((p) => p.path === "/v1/metrics")
    .flatMap((p) => JSON.parse(p.body).resourceMetrics)
    .flatMap((r) => r.scopeMetrics).flatMap((s) => s.metrics);
}
