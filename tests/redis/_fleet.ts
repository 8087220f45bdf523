// The fleets of the Redis tests: workers on Deno, Node and Bun
// (_runtimes.ts) that start together at a barrier on the test's
// redis-server, and the rate-limited fleet's limit, fake and workers.

import {
  type FakePartnerApi,
  startFakePartnerApi,
} from "../../src/testing/mod.ts";
import {
  barrier,
  fakeEnv,
  runOnEveryRuntime,
  RUNTIME_NAMES,
  RUNTIMES,
  startTogether,
} from "./_runtimes.ts";

/** What a fleet does once every worker is in: the barrier's key is given. */
export type DuringRun = (key: string) => Promise<void>;

/**
 * Runs `perRuntime` workers on each runtime, `worker(start, key)` the script
 * and its arguments for the barrier `start` (whose Redis key is `key`), and
 * lets them go together once every one is in; then runs `duringRun`.
 * Returns the line each printed.
 */
export async function runTogether<Line extends { runtime: string }>(
  port: number,
  worker: (start: string, key: string) => string[],
  env: Record<string, string>,
  perRuntime: number,
  duringRun?: DuringRun,
): Promise<Line[]> {
  const { key, start } = barrier();
  const fleet = runOnEveryRuntime<Line>(worker(start, key), env, perRuntime);
  await startTogether(port, key, perRuntime * RUNTIME_NAMES.length);
  await duringRun?.(key);
  return await fleet;
}

/** Workers per runtime in a rate-limited fleet. */
export const PER_RUNTIME = 2;
/** Processes in a rate-limited fleet. */
export const FLEET: number = PER_RUNTIME * RUNTIME_NAMES.length;
/** The service's 900 per 5 minutes, scaled down. */
export const LIMIT = { requests: 40, interval: 2000 };
/** Requests each worker of a rate-limited fleet sends. */
export const EACH = 20;

/** What a rate_worker.mjs printed. */
export interface RateLine {
  runtime: string;
  statuses: Record<string, number>;
  degraded: number;
  restored: number;
  /** Requests begun after the signal file appeared. */
  afterSignal: number;
}

/** An arrival at the fake's API. */
export interface Arrival {
  at: number;
  status: number;
}

/** The fake under {@linkcode LIMIT}, counting what arrives at its API. */
export async function limitedFake(): Promise<
  { api: FakePartnerApi; arrivals: Arrival[] }
> {
  const arrivals: Arrival[] = [];
  const api = await startFakePartnerApi({
    apiRateLimit: LIMIT,
    onRequest: ({ path, status }) => {
      if (path.startsWith("/api/")) arrivals.push({ at: Date.now(), status });
    },
  });
  return { api, arrivals };
}

/**
 * Runs a fleet sharing {@linkcode LIMIT} under `prefix` on the Redis at
 * `port` (rate_worker.mjs): `perRuntime` workers on each runtime, each
 * sending `each` requests, a Redis command taking `commandTimeout` ms at
 * most (by default 2000: a busy machine is no outage). They start together
 * at a barrier, then `duringRun` runs; with `together: false` each starts
 * at once, and `duringRun` is not run. Returns what each printed.
 */
export function runRateFleet(
  port: number,
  api: FakePartnerApi,
  {
    prefix = `fleet:${crypto.randomUUID()}`,
    perRuntime = PER_RUNTIME,
    each = EACH,
    commandTimeout = 2000,
    signal,
    together = true,
    duringRun,
  }: {
    prefix?: string;
    perRuntime?: number;
    each?: number;
    commandTimeout?: number;
    /** A file whose appearance the workers count requests after. */
    signal?: string;
    together?: boolean;
    duringRun?: DuringRun;
  } = {},
): Promise<RateLine[]> {
  const env = {
    ...fakeEnv(api),
    PARTNER_API_RATE_REQUESTS: String(LIMIT.requests),
    PARTNER_API_RATE_INTERVAL: String(LIMIT.interval),
    PARTNER_API_RATE_PREFIX: prefix,
    PARTNER_API_RATE_COMMAND_TIMEOUT: String(commandTimeout),
  };
  const worker = (start: string) => [
    "tests/redis/rate_worker.mjs",
    RUNTIMES,
    String(port),
    start,
    String(each),
    ...(signal === undefined ? [] : [signal]),
  ];
  return together
    ? runTogether(port, worker, env, perRuntime, duringRun)
    : runOnEveryRuntime(worker("now"), env, perRuntime);
}
