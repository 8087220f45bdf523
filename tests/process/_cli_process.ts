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

/** A 64-character access token, as a service's: the token echo tests' endpoints hand it out. */
export const TOKEN =
  "T0QwErTyUiOpAsDfGhJkLzXcVbNm0123456789QwErTyUiOpAsDfGhJkLzXcx0yz";

/** The variables and permissions of a CLI run against `server`, its token cache in `folder`. */
export function cliSetup(
  server: Deno.HttpServer<Deno.NetAddr>,
  folder: string,
) {
  const origin = `http://127.0.0.1:${server.addr.port}`;
  const env = {
    PARTNER_API_BASE_URL: `${origin}/api/`,
    PARTNER_API_PCI_BASE_URL: `${origin}/pci/`,
    PARTNER_API_TOKEN_URL: `${origin}/token`,
    PARTNER_API_AUDIENCE: "audience-1",
    PARTNER_API_CLIENT_ID: "client-id-1",
    PARTNER_API_CLIENT_SECRET: "client-secret-of-the-test",
    PARTNER_API_CACHE_DIR: folder,
  };
  const flags = [
    "--allow-net=127.0.0.1",
    "--allow-env=PARTNER_API_*",
    `--allow-read=${folder}`,
    `--allow-write=${folder}`,
  ];
  return { env, flags };
}
