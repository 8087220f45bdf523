// --env-file as the tool reads it in a real process: only a regular file of
// at most 64 KiB; anything else is a usage error, found without reading it.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor, run } from "../_cli_helpers.ts";
import { cliCommand } from "./_cli_process.ts";
import { scratchDir } from "./_fleet.ts";
import { Command, processTest } from "../_processes.ts";

/**
 * Runs the tool. Only a broken build does not end by itself (a FIFO read that
 * never ends): the test's deadline names it and kills it.
 */
async function bounded(
  flags: string[],
  args: string[],
): Promise<{ code: number; stderr: string }> {
  const output = await cliCommand(flags, args).output();
  return { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
}

/** `deno task cli`'s permissions, less the file to read. */
const FLAGS = ["--allow-net=127.0.0.1", "--allow-env=PARTNER_API_*"];

async function make(command: string, ...args: string[]): Promise<void> {
  ok((await new Command(command, { args }).output()).success);
}

processTest(
  "--env-file reads only a regular file of at most 64 KiB: /dev/zero, a FIFO, a folder or a huge file are usage errors, never read whole",
  async (t) => {
    await using api = await startFakePartnerApi();
    const config = Object.entries(configFor(api))
      .map(([name, value]) => `${name}="${value}"\n`).join("");
    const folder = await scratchDir();
    const makers: [string, (path: string) => Promise<string>][] = [
      ["/dev/zero", () => Promise.resolve("/dev/zero")],
      ["a link to /dev/zero", async (path) => {
        await make("ln", "-s", "/dev/zero", path);
        return path;
      }],
      ["a FIFO", async (path) => {
        await make("mkfifo", path);
        return path;
      }],
      ["a folder", async (path) => {
        await Deno.mkdir(path);
        return path;
      }],
      // Good configuration first: read whole, it would work.
      ["a file over 64 KiB", async (path) => {
        await Deno.writeTextFile(path, config + "#".repeat(64 * 1024) + "\n");
        return path;
      }],
    ];
    for (const [name, maker] of makers) {
      await t.step(name, async () => {
        const path = await maker(`${folder}/${name.replaceAll(/\W/g, "_")}`);
        const run = await bounded(
          [...FLAGS, `--allow-read=${path},${folder}`],
          ["token", "--no-cache", "--env-file", path],
        );
        equal(run.code, 2, run.stderr);
      });
    }
    await t.step("a file of 64 KiB is read", async () => {
      const path = `${folder}/just.env`;
      await Deno.writeTextFile(
        path,
        config + "#".repeat(64 * 1024 - config.length - 1) + "\n",
      );
      equal((await Deno.stat(path)).size, 64 * 1024);
      const run = await bounded(
        [...FLAGS, `--allow-read=${path}`],
        ["token", "--no-cache", "--env-file", path],
      );
      equal(run.code, 0, run.stderr);
    });
    equal(
      api.tokenRequests,
      1,
      "only the good file reached the token endpoint",
    );
  },
);

processTest(
  "a path holding a comma, which Deno's permission lists cannot name: `deno task cli` says it cannot grant it (exit 2), and the tool's own hint names an unscoped flag, not a list that splits it (outside review r103 F5)",
  async () => {
    await using api = await startFakePartnerApi();
    const folder = `${Deno.cwd()}/${await scratchDir()}/a,b`;
    await Deno.mkdir(folder);
    const file = `${folder}/.env`;
    const config = Object.entries(configFor(api))
      .map(([name, value]) => `${name}="${value}"\n`).join("");
    await Deno.writeTextFile(file, config);
    const task = await new Command("deno", {
      args: ["task", "--quiet", "cli", "token", "--env-file", file],
      stdout: "null",
      stderr: "piped",
    }).output();
    const said = new TextDecoder().decode(task.stderr);
    equal(task.code, 2, said);
    ok(said.includes(`cannot grant ${file} alone`), said);
    equal(api.tokenRequests, 0);
    const run = await bounded(FLAGS, ["token", "--env-file", file]);
    equal(run.code, 2, run.stderr);
    ok(run.stderr.includes("run with --allow-read: a path holding a comma"));
    ok(!run.stderr.includes(`--allow-read=${file}`), run.stderr);
  },
);

processTest(
  "an empty --env-file is a usage error naming the flag, through `deno task cli` as through the tool (the task's permission list crashed with Deno's stack trace, exit 1: r182 F1)",
  async () => {
    for (const args of [["quota"], ["cache", "clear"]]) {
      const task = await new Command("deno", {
        args: ["task", "--quiet", "cli", ...args, "--env-file", ""],
        stdout: "null",
        stderr: "piped",
      }).output();
      const said = new TextDecoder().decode(task.stderr);
      equal(task.code, 2, said);
      ok(said.startsWith("partner-api: --env-file needs a file path"), said);
    }
  },
);

processTest(
  "a FIFO at --to is a usage error naming --to, before any request (the sink refused it as a failure to retry, exit 1: r182 F2)",
  async () => {
    await using api = await startFakePartnerApi();
    const folder = await scratchDir();
    for (const name of ["copy.jsonl", "copy.db"]) {
      const fifo = `${folder}/${name}`;
      await make("mkfifo", fifo);
      const args = ["sync", "transactions", "--to", fifo, "--no-cache"];
      const result = await run(args, configFor(api));
      equal(result.code, 2, result.stderr);
      ok(result.stderr.startsWith(`partner-api: --to ${fifo}: `));
    }
    equal(api.tokenRequests, 0);
  },
);
