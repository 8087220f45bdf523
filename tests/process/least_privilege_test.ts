// The core needs the network and nothing else.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { Command, processTest } from "../_processes.ts";
import { configFor } from "../_cli_helpers.ts";

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
  const stdout = new TextDecoder().decode(output.stdout).trim();
  return { code: output.code, stdout, failure: failureOf(stdout) };
}

/** The worker's failure line, as JSON; `undefined` for a success. */
function failureOf(stdout: string): Record<string, unknown> | undefined {
  return stdout.startsWith("{") ? JSON.parse(stdout) : undefined;
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
    const { name, retries } = result.failure ?? {};
    deepStrictEqual({ name, retries }, {
      name: "TokenRequestError",
      retries: 0,
    });
    equal(result.code, 1);
    equal(api.tokenRequests, 0);
  },
);

processTest(
  "without net permission for the API host (the token host allowed) a call fails after one attempt, naming the flag to add",
  async () => {
    await using api = await startFakePartnerApi();
    // The same server under another name, which --allow-net=127.0.0.1 does not cover.
    const baseUrl = api.environment.baseUrl.href.replace(
      "127.0.0.1",
      "localhost",
    );
    const host = new URL(baseUrl).host;
    const result = await runCore(
      ["--allow-net=127.0.0.1"],
      { ...api.environment, baseUrl },
      api.credentials,
    );
    const { message, ...fields } = result.failure ?? {};
    // One attempt, no retry (three attempts over about 1.5 s before), still a network failure.
    deepStrictEqual(fields, {
      name: "ApiError",
      reason: "network",
      attempts: 1,
      retries: 0,
      apiRequests: 1,
    });
    const text = String(message);
    ok(text.includes(`add --allow-net=${host} `), text);
    ok(text.includes("baseUrl"), text);
    ok(!text.includes("run again with the --allow-net flag"), text);
    equal(result.code, 1);
    equal(api.tokenRequests, 1); // the token host was allowed
  },
);

/** `partner-api sync organizations --to <folder>/<name>` with these read and write permissions: its exit and stderr. */
async function syncScoped(
  name: string,
  permissions: (
    copy: string,
    folder: string,
  ) => { read: string; write: string },
) {
  await using api = await startFakePartnerApi({ items: { organizations: 12 } });
  const folder = `.test-tmp/least-privilege-${name}`;
  await Deno.remove(folder, { recursive: true }).catch(() => {});
  await Deno.mkdir(folder, { recursive: true });
  const copy = `${folder}/${name}`;
  const { read, write } = permissions(copy, folder);
  const output = await new Command("deno", {
    args: [
      ...["run", "--no-prompt", "--allow-net=127.0.0.1"],
      ...["--allow-env=PARTNER_API_*", `--allow-read=${read}`],
      ...[`--allow-write=${write}`, "src/cli/mod.ts"],
      ...["sync", "organizations", "--to", copy, "--no-cache"],
    ],
    env: configFor(api),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  return { code: output.code, stderr, copy, folder };
}

processTest(
  "the CLI syncs into a SQLite copy with read and write permission on the copy's files alone, as docs/cli.md gives them",
  async () => {
    const files = (copy: string) =>
      ["", "-wal", "-shm", "-journal"].map((end) => copy + end).join(",");
    const run = await syncScoped("copy.db", (copy) => ({
      read: files(copy),
      write: files(copy),
    }));
    equal(run.code, 0, run.stderr);
    ok((await Deno.stat(run.copy)).size > 0, "the copy is there");
  },
);

processTest(
  "the CLI syncing into a JSONL copy with write permission on its folder but read permission on its files alone fails at its first commit and leaves no temporary file behind",
  async () => {
    const ends = [
      "",
      ".checkpoint.json",
      ".lock",
      ".lock.takeover",
      ".rewrite",
    ];
    const { code, stderr, folder } = await syncScoped(
      "copy.jsonl",
      (copy, folder) => ({
        read: ends.map((end) => copy + end).join(","),
        write: folder,
      }),
    );
    equal(code, 2, stderr);
    const left = [];
    for await (const entry of Deno.readDir(folder)) {
      if (entry.name.endsWith(".tmp")) left.push(entry.name);
    }
    deepStrictEqual(left, []);
  },
);
