// The core needs the network and nothing else.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { Command, processTest } from "../_processes.ts";

async function runCore(
  permissions: string[],
  environment: unknown,
  credentials: unknown,
) {
  const output = await new Command("deno", {
    args: [
      "run",
      "--no-prompt",
      ...permissions,
      "tests/process/core_worker.ts",
      JSON.stringify(environment),
      JSON.stringify(credentials),
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
    const started = Date.now();
    const result = await runCore(
      ["--allow-net=127.0.0.1"],
      api.environment,
      api.credentials,
    );
    equal(result.stdout, "12 organizations");
    equal(result.code, 0);
    // The time limit is 30 s per attempt: a timer left armed would hold the
    // script that long.
    const took = Date.now() - started;
    ok(took < 10_000, `the script took ${took} ms`);
  },
);

processTest(
  "without network permission the core fails at once with a typed error, no retries",
  async () => {
    await using api = await startFakePartnerApi();
    const started = Date.now();
    const result = await runCore([], api.environment, api.credentials);
    equal(result.stdout, "TokenRequestError");
    equal(result.code, 1);
    equal(api.tokenRequests, 0);
    ok(Date.now() - started < 5000, "no backoff on a permission error");
  },
);
