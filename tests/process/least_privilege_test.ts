// The core needs the network and nothing else.

import { equal } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { Command, processTest } from "../_processes.ts";

async function runCore(
  permissions: string[],
  environment: unknown,
  credentials: unknown,
  timeout?: number,
) {
  const output = await new Command("deno", {
    args: [
      "run",
      "--no-prompt",
      ...permissions,
      "tests/process/core_worker.ts",
      JSON.stringify(environment),
      JSON.stringify(credentials),
      ...(timeout === undefined ? [] : [String(timeout)]),
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout).trim(),
  };
}

processTest(
  "the core works with --allow-net alone, and its script ends with its last answer: no time limit keeps it alive",
  async () => {
    await using api = await startFakePartnerApi({
      items: { organizations: 12 },
    });
    // A time limit of 10 minutes per attempt: a timer left armed would hold
    // the script that long, and the test's deadline (60 s) would name it.
    const result = await runCore(
      ["--allow-net=127.0.0.1"],
      api.environment,
      api.credentials,
      600_000,
    );
    equal(result.stdout, "12 organizations");
    equal(result.code, 0);
  },
);

processTest(
  "without network permission the core fails at once with a typed error, no retries",
  async () => {
    await using api = await startFakePartnerApi();
    const result = await runCore([], api.environment, api.credentials);
    equal(result.stdout, "TokenRequestError, 0 retries");
    equal(result.code, 1);
    equal(api.tokenRequests, 0);
  },
);
