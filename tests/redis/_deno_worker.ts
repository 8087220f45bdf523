// A Deno worker of the Redis tests that imports the sources directly (no
// bundle): loopback only, the fake's PARTNER_API_* variables, its standard
// error shown with the test's.

import type { FakePartnerApi } from "../../src/testing/mod.ts";
import { fakeEnv } from "./_runtimes.ts";
import { Command } from "../_processes.ts";

/** Starts `script` (under tests/redis/) with `args`, against `api`. */
export function spawnDenoWorker(
  script: string,
  args: string[],
  api: FakePartnerApi,
): Deno.ChildProcess {
  return new Command("deno", {
    args: [
      "run",
      "--no-lock",
      "--allow-net=127.0.0.1",
      "--allow-env=PARTNER_API_*",
      `tests/redis/${script}`,
      ...args,
    ],
    env: fakeEnv(api),
    stdout: "null",
    stderr: "inherit",
  }).spawn();
}
