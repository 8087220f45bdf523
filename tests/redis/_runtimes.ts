// The processes of a mixed fleet: one worker script run on Deno, Node and
// Bun through the bundles the runtimes task builds, with the fake's
// addresses and credentials in PARTNER_API_* variables.

import { deepStrictEqual, equal } from "node:assert/strict";
import type { FakePartnerApi } from "../../src/testing/mod.ts";
import { connectRedis } from "./_resp.ts";
import { Command } from "../_processes.ts";

export const RUNTIMES = ".test-tmp/runtimes";
const BUN = `${RUNTIMES}/node_modules/bun/bin/bun.exe`;

/** The runtimes of the fleet, in the order {@linkcode runtimeCommand} takes them. */
export const RUNTIME_NAMES = ["deno", "node", "bun"] as const;

/** The fake's addresses and credentials, as the workers read them. */
export function fakeEnv(api: FakePartnerApi): Record<string, string> {
  return {
    PARTNER_API_BASE_URL: api.environment.baseUrl.href,
    PARTNER_API_PCI_BASE_URL: api.environment.pciBaseUrl.href,
    PARTNER_API_TOKEN_URL: api.environment.tokenUrl.href,
    PARTNER_API_AUDIENCE: api.environment.audience,
    PARTNER_API_CLIENT_ID: api.credentials.clientId,
    PARTNER_API_CLIENT_SECRET: api.credentials.clientSecret,
  };
}

/** `worker` (a script and its arguments) as a command on `runtime`. */
export function runtimeCommand(
  runtime: typeof RUNTIME_NAMES[number],
  worker: string[],
  env: Record<string, string>,
): Command {
  const [program, args] = runtime === "deno"
    ? ["deno", [
      "run",
      "--no-lock",
      "--allow-net=127.0.0.1",
      "--allow-env=PARTNER_API_*",
      `--allow-read=${RUNTIMES}`,
      ...worker,
    ]]
    : [runtime === "node" ? "node" : BUN, worker];
  return new Command(program, {
    args,
    env,
    stdout: "piped",
    stderr: "piped",
  });
}

/**
 * Runs `perRuntime` workers on each runtime at once; returns the JSON line
 * each printed. Every one must exit 0: no runtime ended on a rejection
 * nobody handled.
 */
export async function runOnEveryRuntime<Line extends { runtime: string }>(
  worker: string[],
  env: Record<string, string>,
  perRuntime: number,
): Promise<Line[]> {
  const runs = RUNTIME_NAMES.flatMap((runtime) =>
    Array.from(
      { length: perRuntime },
      () => runtimeCommand(runtime, worker, env).output(),
    )
  );
  const lines = (await Promise.all(runs)).map((output) => lineOf<Line>(output));
  deepStrictEqual(
    lines.map((line) => line.runtime).sort(),
    RUNTIME_NAMES.flatMap((runtime) => Array(perRuntime).fill(runtime)).sort(),
  );
  return lines;
}

/** What one worker printed, once it exited 0. */
export function lineOf<Line>(
  { code, stdout, stderr }: Deno.CommandOutput,
): Line {
  equal(code, 0, new TextDecoder().decode(stderr));
  return JSON.parse(new TextDecoder().decode(stdout).trim()) as Line;
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * Resolves once `check` holds, looking every 10 ms: the test's deadline
 * (tests/_processes.ts), not a guess of how long it may take, bounds it.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
): Promise<void> {
  while (!await check()) await sleep(10);
}

/** A start barrier for workers started with `barrier:<key>` (_worker.mjs). */
export function barrier(): { key: string; start: string } {
  const key = `start:${crypto.randomUUID()}`;
  return { key, start: `barrier:${key}` };
}

/**
 * Lets the `count` workers waiting at the barrier `key` on Redis go
 * together, once every one of them is in.
 */
export async function startTogether(
  port: number,
  key: string,
  count: number,
): Promise<void> {
  const admin = await connectRedis(port);
  try {
    await until(async () =>
      Number(await admin.command(["GET", `${key}:ready`])) >= count
    );
    await admin.command(["SET", `${key}:go`, "1"]);
  } finally {
    admin.close();
  }
}

/** A path the test creates to signal the workers (they look for it). */
export function signalFile(): string {
  return `${RUNTIMES}/signal-${crypto.randomUUID()}`;
}
