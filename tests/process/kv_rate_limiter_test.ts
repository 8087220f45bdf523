// Real processes sharing one rate limit on one KV file, against the fake's
// own limit (no Retry-After): no 429, and never more than the limit in a
// window by the fake's count (how near the floor the fleet ends is
// fleet_rate_bench.ts's measure). With the store failing mid-run (each
// process closes its database once half the requests have arrived): no
// crash, no unhandled rejection, no more than a window's worth past the
// limit.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { runKvRateWorkers, scratchDir } from "./_fleet.ts";
import { checkPacedFleet } from "../_windows.ts";
import { processTest } from "../_processes.ts";

const FLEET = 4;
const LIMIT = { requests: 40, interval: 2000 };
const EACH = 30;

/** What a kv_rate_worker.ts printed. */
interface WorkerLine {
  degraded: number;
  /** Requests sent after it closed its database. */
  afterOutage: number;
}

/**
 * The fleet's crawl; with `outage`, the store fails mid-run by count: once
 * half the fleet's requests have arrived, the test creates the outage file,
 * and each process closes its database before its next request.
 */
async function fleetRun(outage: boolean) {
  const dir = await scratchDir();
  const outageFile = outage ? `${dir}/outage` : undefined;
  const arrivals: { at: number; status: number }[] = [];
  try {
    await using api = await startFakePartnerApi({
      apiRateLimit: LIMIT,
      onRequest: ({ path, status }) => {
        if (!path.startsWith("/api/")) return;
        arrivals.push({ at: Date.now(), status });
        if (outageFile !== undefined && arrivals.length === FLEET * EACH / 2) {
          Deno.writeTextFileSync(outageFile, "the store fails");
        }
      },
    });
    const startAt = Date.now() + 2500;
    const lines: WorkerLine[] = await runKvRateWorkers(dir, {
      startAt,
      each: EACH,
      limit: LIMIT,
      outageFile,
    }, Array(FLEET).fill(configFor(api)));
    return { arrivals, lines };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

processTest(
  "4 processes share one KV limit: no 429, never more than the limit in a window",
  async () => {
    const { arrivals } = await fleetRun(false);
    checkPacedFleet({
      what: `${FLEET} processes on KV`,
      arrivals,
      sent: FLEET * EACH,
      limit: LIMIT,
    });
  },
);

processTest(
  "the KV store failing mid-run: every process finishes alone, no crash, no more than a window's worth past the limit",
  async () => {
    const { arrivals, lines } = await fleetRun(true);
    const refused = arrivals.filter(({ status }) => status === 429);
    console.log(
      `KV failing mid-run: ${refused.length} x 429; (requests after the outage, rate.degraded) by process: ${
        lines.map((line) => `${line.afterOutage}, ${line.degraded}`).join("; ")
      }`,
    );
    equal(arrivals.length - refused.length, FLEET * EACH);
    // A take after its database closed: the process paces alone, said once.
    for (const line of lines) {
      if (line.afterOutage > 0) equal(line.degraded, 1);
    }
    ok(lines.some((line) => line.afterOutage > 0), "failed mid-run");
    ok(refused.length <= LIMIT.requests, `${refused.length} x 429`);
  },
);
