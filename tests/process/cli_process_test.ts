// The CLI as users run it: a deno subprocess with narrow permissions.
// Needs --allow-run=deno besides --allow-net=127.0.0.1, so it lives apart
// from the tests that need only the network (see deno.json test:process).

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { cli, cliCommand } from "./_cli_process.ts";
import { processTest } from "../_processes.ts";

const NET = "--allow-net=127.0.0.1";
const ENV = "--allow-env=PARTNER_API_*";

processTest(
  "the CLI lists with only net and PARTNER_API_* env permissions",
  async () => {
    await using api = await startFakePartnerApi();
    const result = await cli([NET, ENV], [
      "list",
      "transactions",
      "--max-items",
      "3",
    ], configFor(api));
    equal(result.code, 0, result.stderr);
    equal(result.stdout.trim().split("\n").length, 3);
    ok(!result.stdout.includes(api.credentials.clientSecret));
  },
);

processTest(
  "the CLI asks for the env permission in one line, exit 2",
  async () => {
    await using api = await startFakePartnerApi();
    const result = await cli([NET], ["token"], configFor(api));
    equal(result.code, 2);
    equal(result.stderr.trim().split("\n").length, 1, result.stderr);
    ok(result.stderr.includes("--allow-env='PARTNER_API_*'"));
    equal(api.tokenRequests, 0);
  },
);

processTest(
  "an API host --allow-net does not name, or --deny-net names: one line naming the flag to add, or the --deny-net entry to remove, and the variable",
  async () => {
    await using api = await startFakePartnerApi();
    // The API under the name localhost; the token host (127.0.0.1) allowed.
    const env = configFor(api);
    env.PARTNER_API_BASE_URL = env.PARTNER_API_BASE_URL!.replace(
      "127.0.0.1",
      "localhost",
    );
    const { host } = new URL(env.PARTNER_API_BASE_URL);
    const get = ["get", "organizations", "--no-cache"];
    const notNamed = await cli([NET, ENV], get, env);
    const denied = await cli(
      ["--allow-net=127.0.0.1,localhost", "--deny-net=localhost", ENV],
      get,
      env,
    );
    for (const { code, stderr } of [notNamed, denied]) {
      equal(code, 2, stderr); // the command's to fix, as a missing read permission

      equal(stderr.trim().split("\n").length, 1, stderr);
      ok(stderr.includes("PARTNER_API_BASE_URL's host"), stderr);
      ok(!stderr.includes("run again with"), stderr); // Deno's words
    }
    ok(notNamed.stderr.includes(`add --allow-net=${host} `), notNamed.stderr);
    // --allow-net cannot pass what --deny-net names: the entry to remove.
    ok(!denied.stderr.includes("add --allow-net"), denied.stderr);
    ok(
      denied.stderr.includes("remove localhost from --deny-net"),
      denied.stderr,
    );
    equal(api.tokenRequests, 2); // the token host was allowed
  },
);

processTest(
  "a --deny-net entry with the port of an address that names none (as https ones do) is the entry to remove, not a flag to add",
  async () => {
    await using api = await startFakePartnerApi();
    // The token URL on the default port; --deny-net names it with that port.
    const env = configFor(api);
    env.PARTNER_API_TOKEN_URL = "http://127.0.0.1/oauth/token";
    const result = await cli(
      ["--allow-net", "--deny-net=127.0.0.1:80", ENV],
      ["token", "--no-cache"],
      env,
    );
    equal(result.code, 2, result.stderr);
    ok(!result.stderr.includes("add --allow-net"), result.stderr);
    ok(
      result.stderr.includes("remove 127.0.0.1:80 from --deny-net"),
      result.stderr,
    );
    equal(api.tokenRequests, 0);
  },
);

processTest(
  "the CLI refuses a bad flag in one line, exit 2, without permissions, naming the command's help as the tool was run: the file, or the task, from a folder outside the checkout with its --cwd (it named the task for a run of the file from a folder of one's own, where no task is; the tool's help, which lists no command's flags; `deno task cli`, which finds no deno.json there: newcomer r258c)",
  async () => {
    const args = ["list", "transactions", "--limit", "zero"];
    const line =
      "partner-api: --limit must be an integer from 1 to 1000: received zero";
    const result = await cli([], args);
    equal(result.code, 2);
    const file = new URL("../../src/cli/mod.ts", import.meta.url).pathname;
    equal(result.stderr, `${line} (see deno run -A ${file} list --help)\n`);
    const task = await new Deno.Command("deno", {
      args: ["task", "--quiet", "cli", ...args],
      stdout: "null",
      stderr: "piped",
    }).output();
    equal(task.code, 2);
    const stderr = new TextDecoder().decode(task.stderr);
    equal(stderr, `${line} (see deno task cli list --help)\n`);
    // Typed in a folder outside the checkout, as docs/cli.md shows: the task with its --cwd, which runs there as
    // printed (`deno task cli` found no deno.json: newcomer r258c).
    const checkout = new URL("../..", import.meta.url).pathname.slice(0, -1);
    const outside = await new Deno.Command("deno", {
      args: ["task", "--quiet", "--cwd", checkout, "cli", ...args],
      cwd: "/",
      // As typed in that folder: a task this test runs under (`deno task test`) passed its own on, which deno task keeps.
      env: { INIT_CWD: "/" },
      stdout: "null",
      stderr: "piped",
    }).output();
    equal(outside.code, 2);
    equal(
      new TextDecoder().decode(outside.stderr),
      `${line} (see deno task --cwd ${checkout} cli list --help)\n`,
    );
  },
);

processTest(
  "`deno task cli` runs from a checkout whose path holds a space, and names it so in the commands it prints (its paths were URL-encoded: module not found)",
  async () => {
    // The task's files in a folder named with a space (deno eval copies them: this test may read none of src/).
    const folder = `${Deno.cwd()}/.test-tmp/cli-process/checkout ${Date.now()}`;
    const copy = `await Deno.mkdir(${
      JSON.stringify(folder)
    }, { recursive: true });
      for (const path of ["deno.json", "tools", "src"]) {
        const { code } = await new Deno.Command("cp", { args: ["-r", path, ${
      JSON.stringify(folder)
    }] }).output();
        if (code !== 0) Deno.exit(code);
      }`;
    const copied = await new Deno.Command("deno", { args: ["eval", copy] })
      .output();
    equal(copied.code, 0, new TextDecoder().decode(copied.stderr));
    const task = (args: string[]) =>
      new Deno.Command("deno", {
        args: ["task", "--quiet", "--cwd", folder, "cli", ...args],
        cwd: "/",
        env: { INIT_CWD: "/" }, // as typed there (see above)
        stdout: "piped",
        stderr: "piped",
      }).output();
    const version = await task(["--version"]);
    const said = new TextDecoder().decode(version.stderr);
    equal(version.code, 0, said);
    ok(new TextDecoder().decode(version.stdout).startsWith("partner-api "));
    const refused = await task(["list", "x", "--limit", "0"]);
    equal(refused.code, 2);
    ok(
      new TextDecoder().decode(refused.stderr).endsWith(
        ` (see deno task --cwd '${folder}' cli list --help)\n`,
      ),
    );
  },
);

processTest("the demo runs with --allow-net=127.0.0.1 alone", async () => {
  const result = await cli([NET], ["demo"]);
  equal(result.code, 0, result.stderr);
  ok(result.stdout.includes(", 1 token request ("), result.stdout);
});

processTest(
  "Ctrl-C (SIGINT) during `list --format json > file` leaves valid JSON and exits 130; SIGTERM too, with 143 (it killed the list mid-array)",
  async () => {
    await using api = await startFakePartnerApi({
      items: { transactions: 5000 },
      latency: 20,
    });
    for (
      const [signal, exitCode] of [["SIGINT", 130], ["SIGTERM", 143]] as const
    ) {
      const child = cliCommand(
        ["--allow-net=127.0.0.1", "--allow-env=PARTNER_API_*"],
        [
          "list",
          "transactions",
          "--format",
          "json",
          "--limit",
          "10",
          "--no-cache",
        ],
        configFor(api),
      ).spawn();
      const reader = child.stdout.pipeThrough(new TextDecoderStream())
        .getReader();
      let text = "";
      // Interrupt once some items are out.
      while ((text.match(/\n/g) ?? []).length < 15) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
      }
      child.kill(signal);
      for (
        let read = await reader.read();
        !read.done;
        read = await reader.read()
      ) {
        text += read.value;
      }
      const status = await child.status;
      const stderr = await new Response(child.stderr).text();
      equal(status.code, exitCode, `${signal} ${stderr} ${text.slice(-200)}`);
      const items = JSON.parse(text);
      ok(Array.isArray(items) && items.length > 10 && items.length < 5000);
    }
  },
);
