// Shared by the process tests: the CLI as a deno subprocess, and what any
// subprocess wrote, as text.

import type { Run } from "../_cli_helpers.ts";
import { Command } from "../_processes.ts";

/**
 * The command that runs src/cli/mod.ts with `flags` and `args`, never prompting; with `prompt`, as a script run from
 * cron or a pipe is: Deno may ask, finds no terminal, and refuses (which leaves the permission "denied", not "prompt").
 */
export function cliCommand(
  flags: string[],
  args: string[],
  env: Record<string, string> = {},
  prompt = false,
): Command {
  const ask = prompt ? [] : ["--no-prompt"];
  return new Command("deno", {
    args: ["run", ...ask, ...flags, "src/cli/mod.ts", ...args],
    ...(prompt ? { stdin: "null" as const } : {}),
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
  prompt = false,
): Promise<Run> {
  return textOf(await cliCommand(flags, args, env, prompt).output());
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
