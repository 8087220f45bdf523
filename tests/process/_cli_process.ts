// Shared by the process tests: the CLI as a deno subprocess, and what any
// subprocess wrote, as text.

import type { Run } from "../_cli_helpers.ts";
import { Command } from "../_processes.ts";

/** The command that runs src/cli/mod.ts with `flags` and `args`, never prompting. */
export function cliCommand(
  flags: string[],
  args: string[],
  env: Record<string, string> = {},
): Command {
  return new Command("deno", {
    args: ["run", "--no-prompt", ...flags, "src/cli/mod.ts", ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  });
}

/** Runs the tool ({@linkcode cliCommand}) to its end; the output as text. */
export async function cli(
  flags: string[],
  args: string[],
  env: Record<string, string> = {},
): Promise<Run> {
  return textOf(await cliCommand(flags, args, env).output());
}

/** `output` (of a command with piped stdout and stderr) as text. */
export function textOf(output: Deno.CommandOutput): Run {
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}
