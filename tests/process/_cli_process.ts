// Shared by the CLI's process tests: the tool as a deno subprocess.

/** The command that runs src/cli/mod.ts with `flags` and `args`, never prompting. */
export function cliCommand(
  flags: string[],
  args: string[],
  env: Record<string, string> = {},
): Deno.Command {
  return new Deno.Command("deno", {
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
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await cliCommand(flags, args, env).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}
