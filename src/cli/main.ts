// The command-line tool (public through ./cli): `main` plans, carries out, reports a failure in one line; and the process.

import { escapeControls } from "../core/_controls.ts";
import { redact } from "../core/_redact.ts";
import { requireDeno, tried } from "../core/_check.ts";
import { VERSION } from "../core/_version.ts";
import { COMMAND_FLAGS, type Plan, plan, type SessionFlags } from "./_plan.ts";
import { NAME } from "./_help.ts";
import { CONFIG_OPTIONAL_VARIABLES, CONFIG_VARIABLES } from "../core/config.ts";
import { execute, failureMessage } from "./_commands.ts";
import { ApiError } from "../core/errors.ts";
import {
  knownTokens,
  openSession,
  programOf,
  readConfig,
  type RunIo,
  type Session,
} from "./_session.ts";
import { keptSecret, shownLine, shownText } from "./_shown.ts";
import { clearCache, openCache } from "./_cache.ts";
import { completionScript } from "./_completion.ts";
import { readEnvFile, withEnvFile } from "./_env_file.ts";
import type { CliIo, CliWriter } from "./io.ts";
import { parseArgs } from "node:util";
import { FLAGS } from "./_flag_values.ts";
import { shellWord } from "./_sync.ts";

/**
 * Runs the tool with `args` (the words after the program name). Every flag is checked before any configuration is
 * read or request sent; errors are one line on standard error, never a stack trace.
 * @param args The command line, e.g. `["list", "transactions", "--limit", "10"]`.
 * @param io Environment and output; the process's own by default.
 * @returns The exit code: 0 done, 1 the service or network failed, 2 bad flags or configuration, 130 stopped with Ctrl-C
 * (143 with SIGTERM, 129 with SIGHUP).
 *
 * @example Showing the help of a command
 * ```ts
 * import { main } from "@partner-api/client/cli";
 * import { equal, match } from "node:assert/strict";
 *
 * let out = "";
 * const writer = { isTerminal: false, write: (text: string) => void (out += text) };
 * equal(await main(["list", "--help"], { env: () => undefined, stdout: writer, stderr: writer }), 0);
 * match(out, /--sort-direction/);
 * ```
 */
export async function main(
  args: string[],
  io: CliIo = processIo(),
): Promise<number> {
  let planned: Plan | undefined;
  // The process gives more than CliIo (a cache, Ctrl-C, files); tests may. Its env grows by --env-file's.
  const run = { ...io } as RunIo;
  const opened: { session?: Session } = {};
  try {
    planned = plan(args);
    return await carryOut(planned, run, opened);
  } catch (error) {
    let failure = error;
    const options = { options: FLAGS, strict: false, allowNegative: true };
    const { values, positionals } = parseArgs({ args, ...options });
    // Refused before --env-file was read: the file's secret is kept out all the same. An unreadable file is the failure
    // told instead: the line may quote a secret it holds.
    if (planned === undefined) {
      await addEnvFile(run, values["env-file"]).catch((unread) => {
        failure = unread;
      });
    }
    // With --no-cache too: the line may quote a token an earlier run cached.
    const tokens = await knownTokens(run, opened.session);
    return reportFailure(failure, run, planned, tokens, positionals[0]);
  }
}

/** `run` with the variables of the file `--env-file` names under its environment's. */
async function addEnvFile(run: RunIo, path: string | boolean | undefined) {
  if (typeof path !== "string") return;
  run.env = await withEnvFile(run.env, path, run.readTextFile ?? readEnvFile);
}

/** Runs one planned command; returns its exit code. */
async function carryOut(
  planned: Plan,
  run: RunIo,
  opened: { session?: Session },
): Promise<number> {
  switch (planned.command) {
    case "version":
      run.stdout.write(`${NAME} ${VERSION}\n`);
      return 0;
    case "help":
      run.stdout.write(planned.text);
      return planned.code;
    case "demo":
      await (await import("./_demo.ts")).runDemo(run);
      return 0;
    case "completion":
      run.stdout.write(completionScript(planned.shell, NAME));
      return 0;
  }
  await addEnvFile(run, planned.envFile);
  const { bodyFormat, clientAuthentication } = CONFIG_OPTIONAL_VARIABLES;
  if (planned.command === "cache clear") {
    // `--env-file`: that configuration's tokens alone (the environment wins).
    const config = planned.envFile === undefined
      ? undefined
      : readConfig(run, [bodyFormat, clientAuthentication], planned.envFile);
    // The line names the cache folder, which may hold the secret or the cached token: read as a failure's line reads them.
    const known = keptSecret(configuredSecret(run));
    const tokens = await knownTokens(run, undefined);
    const cleared = await run.clearCache?.(config);
    const line = cleared ?? "no token cache: nothing to clear";
    run.stdout.write(`${escapeControls(shownLine(line, known, tokens))}\n`);
    return 0;
  }
  // A flag wins over its variable, which is then not read (nor refused).
  const flagged = [
    planned.tokenBody && bodyFormat,
    planned.clientAuthentication && clientAuthentication,
  ];
  const config = readConfig(run, flagged, planned.envFile);
  opened.session = await openSession(run, config, planned);
  await execute(opened.session, planned);
  return 0;
}

/** Tells what failed, in one line (and its causes, verbose), without `tokens` or the secret; returns the exit code. */
function reportFailure(
  error: unknown,
  run: RunIo,
  planned: Plan | undefined,
  tokens: readonly string[],
  command: string | undefined,
): number {
  // A closed output (e.g. `| head`) leaves nothing to tell and nobody to tell it.
  if ((error as Error)?.name === "BrokenPipe") return 0;
  const { message, code } = failureMessage(error);
  const { verbose, envFile } = (planned ?? {}) as Partial<SessionFlags>;
  // Each credential kept out by value: a secret pasted into the client id or audience is never shown when quoted back.
  const credentials = {
    secret: configuredSecret(run),
    clientId: variable(run, CONFIG_VARIABLES.clientId),
    audience: variable(run, CONFIG_VARIABLES.audience),
  };
  const secrets = Object.values(credentials).some(Boolean) ? [credentials] : [];
  // Word by word, as every line the tool prints: the flag and rule stay.
  const hidden = [...(credentials.secret ? [credentials] : []), ...tokens];
  const clean = (text: string) =>
    escapeControls(shownText(redact(text, [...secrets, ...tokens]), hidden));
  // The command's own help, where the line names one: the tool's lists no command's flags.
  const topic = command !== undefined && Object.hasOwn(COMMAND_FLAGS, command)
    ? ` ${command}`
    : "";
  const help = code === 2
    ? ` (see ${programOf(run.helpHint)}${topic} --help)`
    : "";
  const clear = error instanceof ApiError && error.status === 401
    ? clearHint(run, envFile)
    : "";
  run.stderr.write(`${NAME}: ${clean(message + clear)}${help}\n`);
  for (const line of verbose ? causeLines(error) : []) {
    run.stderr.write(`${clean(line)}\n`);
  }
  return code;
}

/** A refused token may be one a restarted fake no longer knows: the command that clears it. */
function clearHint(run: RunIo, envFile: string | undefined): string {
  const file = envFile === undefined ? "" : ` --env-file ${shellWord(envFile)}`;
  return `; ${
    programOf(run.helpHint)
  } cache clear${file} removes the cached token`;
}

/** A configuration variable (the environment, then `--env-file`), trimmed; "" when unset or not readable. */
const variable = (run: RunIo, name: string) =>
  tried(() => run.env(name)?.trim()) ?? "";

/** The client secret, "" when too short to keep out ({@linkcode keptSecret}). */
function configuredSecret(run: RunIo): string {
  const secret = variable(run, CONFIG_VARIABLES.clientSecret);
  return keptSecret(secret)?.secret ?? "";
}

function processWriter(stream: typeof Deno.stdout): CliWriter {
  const encoder = new TextEncoder();
  return {
    isTerminal: stream.isTerminal(),
    write(text: string) {
      const bytes = encoder.encode(text);
      for (let done = 0; done < bytes.length;) {
        done += stream.writeSync(bytes.subarray(done));
      }
    },
  };
}

/** A variable of the process; one this run may not read throws instead of prompting (typos of names are looked up). */
function readAllowed(name: string): string | undefined {
  const { state } = Deno.permissions.querySync({ name: "env", variable: name });
  if (state !== "granted") {
    throw new Deno.errors.NotCapable(`no permission to read ${name}`);
  }
  return Deno.env.get(name);
}

/** The process's own I/O. @throws {TypeError} (`option: "io"`) Outside Deno, which the tool runs on. */
function processIo(): RunIo {
  const rule = "is the process's own on Deno only: pass main an io of yours";
  requireDeno(`Cannot run ${NAME}`, "io", rule);
  return {
    env: readAllowed,
    stdout: processWriter(Deno.stdout),
    stderr: processWriter(Deno.stderr),
    openCache,
    clearCache,
    readTextFile: readEnvFile,
    onInterrupt(stop) {
      interruptions.add(stop);
      return () => interruptions.delete(stop);
    },
    helpHint: `${invokedAs()} --help`,
  };
}

/** Set by `deno task cli` (tools/cli_task.ts) for the tool it runs: "1", or the checkout when typed outside it. */
const TASK_VARIABLE = "PARTNER_API_CLI_TASK";

/**
 * The tool as its user ran it, for commands it prints to type again: the task (from elsewhere, `deno task --cwd
 * <checkout> cli`), the installed name, else the file run (`deno run -A <checkout>/src/cli/mod.ts`).
 */
function invokedAs(): string {
  const program = Deno.mainModule;
  if (!program.startsWith("file:")) return NAME;
  const task = tried(() => readAllowed(TASK_VARIABLE));
  if (task === "1") return "deno task cli";
  if (task) return `deno task --cwd ${shellWord(task)} cli`;
  return `deno run -A ${
    shellWord(decodeURIComponent(new URL(program).pathname))
  }`;
}

/** What Ctrl-C stops before the process ends (a list closing its output). */
const interruptions = new Set<(exitCode: number) => void>();

/** Runs the tool as the program: the process's own I/O and arguments, Ctrl-C, and its exit code. */
export async function runAsProgram(): Promise<never> {
  // A command that can end cleanly does (main returns the signal's code); else end progress's line and exit (`unload`
  // removes a token lock, which a kill by the signal would leave).
  const interrupt = (exitCode: number) => {
    if (interruptions.size > 0) {
      for (const stop of interruptions) stop(exitCode);
      return;
    }
    if (Deno.stderr.isTerminal()) {
      Deno.stderr.writeSync(new TextEncoder().encode("\n"));
    }
    Deno.exit(exitCode);
  };
  // These stop a run as Ctrl-C does (`timeout`, `docker stop` and systemd send SIGTERM); Windows has SIGINT alone.
  const stops = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 };
  for (const [signal, exitCode] of Object.entries(stops)) {
    tried(() =>
      Deno.addSignalListener(signal as Deno.Signal, () => interrupt(exitCode))
    );
  }
  Deno.exit(await main(Deno.args));
}

/** The causes under a failure, one line each, outermost first (at most 8). */
function causeLines(error: unknown): string[] {
  const lines: string[] = [];
  let cause = error instanceof Error ? error.cause : undefined;
  for (; cause !== undefined && lines.length < 8; cause = cause.cause) {
    if (!(cause instanceof Error)) {
      return [...lines, `  caused by ${String(cause)}`];
    }
    lines.push(`  caused by ${cause.name}: ${cause.message}`);
  }
  return lines;
}
