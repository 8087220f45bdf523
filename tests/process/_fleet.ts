// Starts a fleet of deno processes that get a token at the same moment,
// with or without a shared KV file. Used by the fleet test and kv_bench.ts;
// the KV rate limiter's tests run their workers the same way
// (runKvRateWorkers).

import { equal } from "node:assert/strict";
import type { FakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { Command } from "../_processes.ts";

/** What one process of the fleet printed. */
export interface FleetResult {
  pid: number;
  token: string;
  ms: number;
  /** With `call`: the API's answer to one call. */
  status?: number;
}

/** A running fleet. */
export interface Fleet {
  readonly children: Deno.ChildProcess[];
  /** Waits for every process: its result, or `undefined` if it failed or was killed. */
  results(): Promise<(FleetResult | undefined)[]>;
}

/** The scratch folder the fleet may read and write (granted by deno.json). */
export const SCRATCH = ".test-tmp";

/** Makes a fresh folder under {@linkcode SCRATCH}. */
export async function scratchDir(): Promise<string> {
  await Deno.mkdir(SCRATCH, { recursive: true });
  return await Deno.makeTempDir({ dir: SCRATCH });
}

/**
 * `deno run` of a fleet's worker `script` with `args`: loopback only, the
 * PARTNER_API_* variables of `env`, and reading and writing `dir` alone.
 */
export function workerCommand(
  script: string,
  dir: string,
  args: string[],
  env: Record<string, string>,
): Command {
  return new Command("deno", {
    args: [
      "run",
      "--no-prompt",
      "--allow-net=127.0.0.1",
      "--allow-env=PARTNER_API_*",
      `--allow-read=${dir}`,
      `--allow-write=${dir}`,
      script,
      ...args,
    ],
    env,
    stdout: "piped",
    stderr: "piped",
  });
}

/**
 * Runs kv_rate_worker.ts once per entry of `envs` (its PARTNER_API_*
 * variables) on the KV file `dir`/rate.sqlite: each starts at `startAt`
 * and sends `each` requests under `limit`; with `outageFile`, it closes its
 * database once that file exists. Returns the line each printed, once it
 * exited 0: no rejection went unhandled.
 */
export async function runKvRateWorkers<Line>(
  dir: string,
  { startAt, each, limit, outageFile }: {
    startAt: number;
    each: number;
    limit: { requests: number; interval: number };
    outageFile?: string | undefined;
  },
  envs: Record<string, string>[],
): Promise<Line[]> {
  const args = [
    `${dir}/rate.sqlite`,
    String(startAt),
    String(each),
    String(limit.requests),
    String(limit.interval),
    ...(outageFile === undefined ? [] : [outageFile]),
  ];
  const worker = "tests/process/kv_rate_worker.ts";
  const runs = envs.map((env) =>
    workerCommand(worker, dir, args, env).output()
  );
  return (await Promise.all(runs)).map(({ code, stdout, stderr }) => {
    equal(code, 0, new TextDecoder().decode(stderr));
    return JSON.parse(new TextDecoder().decode(stdout)) as Line;
  });
}

/**
 * Starts `size` processes; they ask for a token together `startDelay` ms from
 * now. `kvPath` undefined means each keeps its own in-memory cache.
 */
export function startFleet(
  api: FakePartnerApi,
  size: number,
  options: {
    kvPath?: string;
    leaseMs?: number;
    startDelay?: number;
    /** Each process then calls the API once. */
    call?: boolean;
  } = {},
): Fleet {
  const startAt = Date.now() + (options.startDelay ?? 1500);
  const kvPath = options.kvPath ?? "-";
  const dir = options.kvPath === undefined
    ? SCRATCH
    : kvPath.replace(/\/[^/]*$/, "");
  const args = [
    kvPath,
    String(startAt),
    String(options.leaseMs ?? 30_000),
    ...(options.call ? ["call"] : []),
  ];
  const worker = "tests/process/fleet_worker.ts";
  const children = Array.from(
    { length: size },
    () => workerCommand(worker, dir, args, configFor(api)).spawn(),
  );
  return {
    children,
    results: () =>
      Promise.all(children.map(async (child) => {
        const output = await child.output();
        if (!output.success) {
          const why = new TextDecoder().decode(output.stderr).trim();
          if (output.signal === null) {
            console.error(`fleet process failed: ${why}`);
          }
          return undefined;
        }
        return JSON.parse(
          new TextDecoder().decode(output.stdout),
        ) as FleetResult;
      })),
  };
}
