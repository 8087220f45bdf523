// Real processes sharing one rate limit on one KV file, against the fake's
// own limit (no Retry-After): no 429, near the limit's floor. With the store
// failing mid-run (each process closes its database): no crash, no
// unhandled rejection, no burst past the limit beyond one window.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { scratchDir, workerCommand } from "./_fleet.ts";
import { checkPacedFleet } from "../_windows.ts";
import { processTest } from "../_processes.ts";

const FLEET = 4;
const LIMIT = { requests: 40, interval: 2000 };
const EACH = 30;

/** Runs the fleet on one KV file; returns each process's line. */
async function runFleet(
  env: Record<string, string>,
  dir: string,
  startAt: number,
  outageAt?: number,
) {
  const args = [
    `${dir}/rate.sqlite`,
    String(startAt),
    String(EACH),
    String(LIMIT.requests),
    String(LIMIT.interval),
    ...(outageAt === undefined ? [] : [String(outageAt)]),
  ];
  const worker = "tests/process/kv_rate_worker.ts";
  const runs = Array.from(
    { length: FLEET },
    () => workerCommand(worker, dir, args, env).output(),
  );
  return (await Promise.all(runs)).map(({ code, stdout, stderr }) => {
    // Exit 0: no rejection went unhandled.
    equal(code, 0, new TextDecoder().decode(stderr));
    return JSON.parse(new TextDecoder().decode(stdout)) as {
      degraded: number;
      endAt: number;
    };
  });
}

async function fleetRun(outage: boolean) {
  const arrivals: { at: number; status: number }[] = [];
  await using api = await startFakePartnerApi({
    apiRateLimit: LIMIT,
    onRequest: ({ path, status }) => {
      if (path.startsWith("/api/")) arrivals.push({ at: Date.now(), status });
    },
  });
  const dir = await scratchDir();
  try {
    const startAt = Date.now() + 2500;
    const outageAt = outage ? startAt + 1.5 * LIMIT.interval : undefined;
    const lines = await runFleet(configFor(api), dir, startAt, outageAt);
    return { arrivals, lines, startAt, outageAt };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

processTest(
  "4 processes share one KV limit: no 429, within 1.10x the floor",
  async () => {
    const { arrivals, lines, startAt } = await fleetRun(false);
    checkPacedFleet({
      what: `${FLEET} processes on KV`,
      arrivals,
      sent: FLEET * EACH,
      elapsed: Math.max(...lines.map((line) => line.endAt)) - startAt,
      limit: LIMIT,
    });
  },
);

processTest(
  "the KV store failing mid-run: every process finishes alone, no crash, no burst beyond one window",
  async () => {
    const { arrivals, lines, outageAt } = await fleetRun(true);
    const refused = arrivals.filter(({ status }) => status === 429);
    console.log(
      `KV failing mid-run: ${refused.length} x 429, degraded ${
        lines.map((line) => line.degraded)
      }`,
    );
    equal(arrivals.length - refused.length, FLEET * EACH);
    ok(
      lines.filter((line) => line.endAt > outageAt! + 1000)
        .every((line) => line.degraded >= 1),
    );
    ok(refused.length <= LIMIT.requests);
    ok(refused.every(({ at }) => at < outageAt! + LIMIT.interval));
  },
);
