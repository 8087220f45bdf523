// Shared by the benchmarks: the fake service in another process (so that its
// work does not share this process's CPU time and heap), started through
// `deno task fake`'s script, and its PARTNER_API_* lines read back.

import process from "node:process";
import type { PartnerClient } from "../src/client/mod.ts";
import {
  defineEnvironment,
  type Environment,
} from "../src/core/environment.ts";

/** The call the fetch benches make on each side: one organization. */
export const ONE_CALL = "organizations?limit=1";

/**
 * The floor of the fetch benches: fetch() of {@linkcode ONE_CALL} under
 * `baseUrl` with `accessToken` and a 30 s AbortSignal.timeout, as a user
 * writes it, the body read.
 */
export function rawFetch(
  baseUrl: URL,
  accessToken: string,
): () => Promise<void> {
  const url = new URL(ONE_CALL, baseUrl);
  return async () => {
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${accessToken}` },
      signal: AbortSignal.timeout(30_000),
    });
    await response.arrayBuffer();
  };
}

/** The same call through `client.fetch`, the body read the same way. */
export function clientFetch(
  client: Pick<PartnerClient, "fetch">,
): () => Promise<void> {
  return async () => {
    const response = await client.fetch(ONE_CALL);
    await response.arrayBuffer();
  };
}

/** A fake in a child process, with what a client needs to reach it. */
export interface RemoteFake extends AsyncDisposable {
  readonly environment: Environment;
  readonly clientId: string;
  readonly clientSecret: string;
}

/** Starts examples/fake_server.ts with `args` and waits for its lines. */
export async function startRemoteFake(args: string[]): Promise<RemoteFake> {
  const child = new Deno.Command("deno", {
    args: [
      "run",
      "--allow-net=127.0.0.1",
      "examples/fake_server.ts",
      "--port=0",
      "--quiet",
      ...args,
    ],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("PARTNER_API_CLIENT_SECRET=")) {
    const { value, done } = await lines.read();
    if (done) throw new Error("the fake server stopped before it started");
    text += value;
  }
  lines.releaseLock();
  const vars = Object.fromEntries(
    text.trim().split("\n").map((line) => line.split(/=(.*)/s).slice(0, 2)),
  );
  return {
    environment: defineEnvironment({
      baseUrl: vars.PARTNER_API_BASE_URL,
      pciBaseUrl: vars.PARTNER_API_PCI_BASE_URL,
      tokenUrl: vars.PARTNER_API_TOKEN_URL,
      audience: vars.PARTNER_API_AUDIENCE,
    }),
    clientId: vars.PARTNER_API_CLIENT_ID,
    clientSecret: vars.PARTNER_API_CLIENT_SECRET,
    async [Symbol.asyncDispose]() {
      child.kill();
      await child.status;
      await child.stdout.cancel().catch(() => {});
    },
  };
}

/** A clock in ms: the wall clock, or {@linkcode cpuTime}. */
export type BenchClock = () => number;

const wallTime: BenchClock = () => performance.now();

/**
 * This process's CPU time (user and system), in ms: time other processes
 * take from this one counts for none of the sides.
 */
export const cpuTime: BenchClock = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/**
 * Runs `rounds` rounds, each running every function `batch` times, in
 * rotating order, so that drift (other load, CPU frequency) falls on every
 * side alike. Each round gives every function one sample, `sample(times,
 * name)` of that round's total times; the samples by function.
 */
async function inRounds(
  fns: Record<string, () => Promise<unknown>>,
  rounds: number,
  batch: number,
  clock: BenchClock,
  sample: (times: Record<string, number>, name: string) => number,
): Promise<Record<string, number[]>> {
  const names = Object.keys(fns);
  const samples: Record<string, number[]> = {};
  for (let round = 0; round < rounds; round++) {
    const times: Record<string, number> = {};
    for (let i = 0; i < names.length; i++) {
      const name = names[(round + i) % names.length]!;
      const started = clock();
      for (let n = 0; n < batch; n++) await fns[name]!();
      times[name] = clock() - started;
    }
    for (const name of names) (samples[name] ??= []).push(sample(times, name));
  }
  return samples;
}

/** The median of `values`. */
function median(values: number[]): number {
  return values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

/** Median time per call of each function in ms of `clock`, measured in rounds ({@linkcode inRounds}). */
export async function interleaved(
  fns: Record<string, () => Promise<unknown>>,
  rounds = 21,
  batch = 200,
  clock: BenchClock = wallTime,
): Promise<Record<string, number>> {
  const samples = await inRounds(
    fns,
    rounds,
    batch,
    clock,
    (times, name) => times[name]! / batch,
  );
  return Object.fromEntries(
    Object.entries(samples).map(([name, values]) => [name, median(values)]),
  );
}

/** A ratio to the floor: the median of the rounds, and their spread. */
export interface Ratio {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/**
 * Each function's time divided by the floor's (`fns[floor]`), round by
 * round; the median ratio and the spread of the rounds. A ratio taken
 * within one round cancels drift that a ratio of two medians keeps.
 */
export async function ratiosToFloor(
  fns: Record<string, () => Promise<unknown>>,
  floor: string,
  rounds = 21,
  batch = 200,
  clock: BenchClock = wallTime,
): Promise<Record<string, Ratio>> {
  const ratios = await inRounds(
    fns,
    rounds,
    batch,
    clock,
    (times, name) => times[name]! / times[floor]!,
  );
  return Object.fromEntries(
    Object.entries(ratios).map(([name, values]) => [name, {
      median: median(values),
      min: Math.min(...values),
      max: Math.max(...values),
    }]),
  );
}

/** `1.03× (0.98–1.07)`. */
export function showRatio({ median, min, max }: Ratio): string {
  return `${median.toFixed(3)}× (${min.toFixed(2)}–${max.toFixed(2)})`;
}

/** What {@linkcode handOrderedPool} pages through. */
export interface HandPool {
  readonly environment: Environment;
  readonly accessToken: string;
  /** The list, e.g. "transactions"; also the body's array property. */
  readonly list: string;
  readonly limit: number;
  readonly concurrency: number;
}

/**
 * The floor for a list as a user writes it by hand: an ordered pool,
 * `concurrency` pages in flight, every item handed out in page order, one
 * by one in a loop (`yield*` costs twice as much per item in an async
 * generator and would flatter the library), ending at the first short page,
 * where the pages asked beyond it are cancelled.
 */
export async function* handOrderedPool(
  { environment, accessToken, list, limit, concurrency }: HandPool,
): AsyncGenerator<unknown> {
  const beyond = new AbortController();
  const page = async (n: number): Promise<unknown[]> => {
    const url = new URL(list, environment.baseUrl);
    url.search = `limit=${limit}&page=${n}`;
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${accessToken}` },
      signal: beyond.signal,
    });
    return (await response.json())[list];
  };
  const inFlight: Promise<unknown[]>[] = [];
  let next = 1;
  while (next <= concurrency) inFlight.push(page(next++));
  for (;;) {
    const items = await inFlight.shift()!;
    if (items.length < limit) {
      beyond.abort();
      for (const pending of inFlight) pending.catch(() => {});
      for (const item of items) yield item;
      return;
    }
    inFlight.push(page(next++));
    for (const item of items) yield item;
  }
}

/** Counts every item, as a consumer would, and checks the total. */
export async function consume(
  items: AsyncIterable<unknown>,
  total: number,
): Promise<void> {
  let count = 0;
  for await (const _ of items) count++;
  if (count !== total) throw new Error(`listed ${count} of ${total}`);
}

/** The items of a sync benchmark: SYNC_BENCH_ITEMS (with --allow-env=SYNC_BENCH_ITEMS), else 1,000,000. */
export const SYNC_BENCH_ITEMS = Number(
  (Deno.permissions.querySync({ name: "env", variable: "SYNC_BENCH_ITEMS" })
      .state === "granted"
    ? Deno.env.get("SYNC_BENCH_ITEMS")
    : undefined) ?? 1_000_000,
);

/** The heap in use after a collection (with --v8-flags=--expose-gc). */
export function heapUsed(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return Deno.memoryUsage().heapUsed;
}

/** `.test-tmp/<name>`, with the copy there and what a sink keeps beside it removed. */
export async function freshCopy(name: string): Promise<string> {
  await Deno.mkdir(".test-tmp", { recursive: true });
  const path = `.test-tmp/${name}`;
  for (const suffix of ["", "-wal", "-shm", ".checkpoint.json"]) {
    await Deno.remove(`${path}${suffix}`).catch(() => {});
  }
  return path;
}
