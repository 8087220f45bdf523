// Shared by the CLI tests: the fake's configuration as PARTNER_API_*
// variables, and the CLI run in-process with its output captured.

import { type CliIo, main } from "../src/cli/mod.ts";
import { CONFIG_VARIABLES } from "../src/core/config.ts";
import type { FakePartnerApi } from "../src/testing/mod.ts";

/** The environment variables that point the tool at `api`. */
export function configFor(
  api: Pick<FakePartnerApi, "environment" | "credentials">,
): Record<string, string> {
  const { environment, credentials } = api;
  return {
    [CONFIG_VARIABLES.baseUrl]: environment.baseUrl.href,
    [CONFIG_VARIABLES.pciBaseUrl]: environment.pciBaseUrl.href,
    [CONFIG_VARIABLES.tokenUrl]: environment.tokenUrl.href,
    [CONFIG_VARIABLES.audience]: environment.audience,
    [CONFIG_VARIABLES.clientId]: credentials.clientId,
    [CONFIG_VARIABLES.clientSecret]: credentials.clientSecret,
  };
}

/** What a run of the CLI wrote, and its exit code. */
export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in this process with `env`, capturing its output. */
export async function run(
  args: string[],
  env: Record<string, string> | ((name: string) => string | undefined) = {},
  terminal = { stdout: false, stderr: false },
  extra: Record<string, unknown> = {},
): Promise<Run> {
  const result = { code: 0, stdout: "", stderr: "" };
  const io: CliIo = {
    env: typeof env === "function" ? env : (name) => env[name],
    stdout: {
      isTerminal: terminal.stdout,
      write: (text) => void (result.stdout += text),
    },
    stderr: {
      isTerminal: terminal.stderr,
      write: (text) => void (result.stderr += text),
    },
    // What the process would give beyond CliIo, or a writer of the test's.
    ...extra,
  };
  result.code = await main(args, io);
  return result;
}

/**
 * Runs `list transactions --since creationDate=<since>` against `api`
 * (in this process, with no cache), with `flags` besides.
 */
export function listSince(
  api: Pick<FakePartnerApi, "environment" | "credentials">,
  since: string,
  flags: string[],
): Promise<Run> {
  return run([
    "list",
    "transactions",
    "--since",
    `creationDate=${since}`,
    ...flags,
    "--no-cache",
  ], configFor(api));
}
