// Internal: the command line checked into a plan before anything is read or sent. Pure: no process, no I/O.

import { nearest } from "../core/_nearest.ts";
import { given } from "../core/_check.ts";
import { parseArgs } from "node:util";
import { HELP } from "./_help.ts";
import { type SyncRequest, syncRequest } from "./_sync_plan.ts";
import {
  FLAGS,
  oneOf,
  onePositional,
  sortField,
  UsageError,
  type Values,
} from "./_flag_values.ts";
import { type ListRequest, listRequest } from "./_list_plan.ts";

/**
 * The flags each command takes, by node:util's names (`cache` is `--no-cache`): its own, then those every command takes
 * (`completion` and `demo` ignore them; `--env-file` narrows `cache clear`, `logout`).
 */
export const COMMAND_FLAGS: Readonly<Record<string, readonly string[]>> = Object
  .fromEntries(
    Object.entries({
      token: "show-token format",
      quota: "format",
      get: "pci",
      list:
        "limit page sort-by sort-direction since max-items concurrency query format fields",
      sync:
        "to id sort-by sort-direction full sweep deletes max-deletes changes priority max-duration limit concurrency query",
      ...{ cache: "", logout: "", completion: "", demo: "" },
    }).map(([command, own]) => [
      command,
      `${own} cache verbose env-file token-body client-authentication`.trim()
        .split(" "),
    ]),
  );

/** A checked command line: what to run. */
export type Plan =
  | { readonly command: "help"; readonly text: string; readonly code: number }
  | { readonly command: "version" | "demo" }
  | { readonly command: "cache clear"; readonly envFile: string | undefined }
  | { readonly command: "completion"; readonly shell: Shell }
  | SessionCommand<{ command: "quota"; json: boolean }>
  | SessionCommand<{ command: "token"; showToken: boolean; json: boolean }>
  | SessionCommand<{ command: "list"; list: ListRequest }>
  | SessionCommand<{ command: "sync"; sync: SyncRequest }>
  | SessionCommand<{ command: "get"; path: string; pci: boolean }>;

/** A command that talks to the service: its own fields, read-only, and the session's flags. */
type SessionCommand<T> = Readonly<T> & SessionFlags;

/** The shells `completion` writes for. */
export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = typeof SHELLS[number];

/** What every command that talks to the service takes. */
export interface SessionFlags {
  readonly cache: boolean;
  /** A line per request on standard error, and a failure's causes. */
  readonly verbose: boolean;
  /** A dotenv file to read the configuration from (the environment wins). */
  readonly envFile: string | undefined;
  /** `--token-body`: how the token request's body is encoded (wins over the variable). */
  readonly tokenBody?: "json" | "form";
  /** `--client-authentication`: `basic` sends HTTP Basic (wins over the variable). */
  readonly clientAuthentication?: "body" | "basic";
}

/**
 * Checks the whole command line.
 * @throws {UsageError} For an unknown command or flag (with the nearest known one), a flag the command does not take or
 * that is given twice (a switch: both ways), or a bad value.
 */
export function plan(args: readonly string[]): Plan {
  const { values, positionals, tokens } = parseFlags(args);
  const [command = "", ...rest] = positionals;
  if (values.version) return { command: "version" };
  if (values.help || command === "") {
    const named = command === "logout" ? "cache" : command; // its other name
    const text = HELP[Object.hasOwn(HELP, named) ? named : ""]!;
    return { command: "help", text, code: values.help ? 0 : 2 };
  }
  if (!Object.hasOwn(COMMAND_FLAGS, command)) { // not `toString`
    const near = nearest(command, Object.keys(COMMAND_FLAGS));
    throw new UsageError(
      `unknown command: ${command}${near ? `; did you mean ${near}?` : ""}`,
    );
  }
  flagsOnce(tokens, command);
  const flags: SessionFlags = {
    cache: values.cache !== false,
    verbose: values.verbose === true,
    envFile: values["env-file"],
    ...given({
      tokenBody: oneOf(values["token-body"], "token-body", ["json", "form"]),
      clientAuthentication: oneOf(
        values["client-authentication"],
        "client-authentication",
        ["body", "basic"],
      ),
    }),
  };
  return commandPlan(command, rest, values, flags, args);
}

/** The plan of one command, its flags checked against it already. */
function commandPlan(
  command: string,
  rest: string[],
  values: Values,
  flags: SessionFlags,
  args: readonly string[],
): Plan {
  if (command === "list") {
    return { command, list: listRequest(rest, values), ...flags };
  }
  if (command === "get") {
    const path = onePositional(rest, "get needs a <path>, e.g. organizations");
    return { command, path, pci: !!values.pci, ...flags };
  }
  if (command === "sync") {
    // Sync's messages give the command line back (to confirm a mass delete).
    const sync = { ...syncRequest(rest, values), args };
    return { command, sync, ...flags };
  }
  if (command === "completion") return { command, shell: shellOf(rest) };
  if (command === "cache" && (rest.length !== 1 || rest[0] !== "clear")) {
    throw new UsageError("cache takes one action: clear");
  }
  const arg = command === "cache" ? undefined : rest[0];
  if (arg !== undefined) throw new UsageError(`unexpected argument: ${arg}`);
  const clear = { command: "cache clear", envFile: flags.envFile } as const;
  if (command === "cache" || command === "logout") return clear;
  // `token` and `quota` print text, or with `--format json` one object.
  const json = oneOf(values.format, "format", ["json"]) === "json";
  if (command === "token") {
    return { command, showToken: !!values["show-token"], json, ...flags };
  }
  if (command === "quota") return { command, json, ...flags };
  return { command: "demo" };
}

function shellOf(positionals: readonly string[]): Shell {
  const [shell, ...extra] = positionals;
  const known = SHELLS.includes(shell as Shell);
  if (known && extra.length === 0) return shell as Shell;
  // The word that is wrong: past a good shell, the first extra one.
  const wrong = known ? extra[0] : shell;
  const received = wrong === undefined ? "" : `: received ${wrong}`;
  throw new UsageError(
    `completion takes one shell: ${SHELLS.join(", ")}${received}`,
  );
}

function parseFlags(args: readonly string[]) {
  try {
    return parseArgs({
      args: [...args],
      options: FLAGS,
      allowPositionals: true,
      allowNegative: true,
      strict: true,
      tokens: true,
    });
  } catch (error) {
    // node:util's words, made one line, with the nearest flag (among those the command takes, when it is one).
    const { message } = error as Error;
    const unknown = /Unknown option '(-{1,2})([^']+)'/.exec(message);
    const ambiguous = /Option '--([^']+)' argument is ambiguous/.exec(message);
    if (ambiguous) throw dashValue(ambiguous[1]!, args);
    // Last on the line, a flag's value left out (node:util: "Option '--to <value>' argument missing").
    const missing = /Option '(?:-\w, )?--([\w-]+) <value>' argument missing/
      .exec(message);
    if (missing) throw new UsageError(`--${missing[1]} needs a value`);
    if (!unknown) throw new UsageError(message.replace(/\s*\n\s*/g, " "));
    const own = Object.hasOwn(COMMAND_FLAGS, `${args[0]}`) &&
      COMMAND_FLAGS[`${args[0]}`];
    const flags = own ? [...own, "help", "version"] : Object.keys(FLAGS);
    const near = nearest(unknown[2]!, [...flags, "no-cache"]);
    const hint = near ? `; did you mean --${near}?` : "";
    throw new UsageError(`unknown flag ${unknown[1]}${unknown[2]}${hint}`);
  }
}

/** A flag's value that begins with "-" given after a space (node:util takes it for a flag), said in the CLI's flags. */
function dashValue(flag: string, args: readonly string[]): UsageError {
  const value = args[args.indexOf(`--${flag}`) + 1] ?? "";
  // A flag after it (`--limit=3`, `--`): its value forgotten, not one to advise on.
  if (/^--|^-$/.test(value)) {
    return new UsageError(`--${flag} needs a value: ${value} is a flag`);
  }
  if (flag === "sort-by") sortField(value); // its own advice: --sort-by field --sort-direction DESC
  // Advised only where that form is taken (`--sweep=-1` is refused for its own reason).
  const line = [...args];
  line.splice(args.indexOf(`--${flag}`), 2, `--${flag}=${value}`);
  try {
    plan(line);
  } catch (refused) {
    const own = refused instanceof UsageError &&
      refused.message.startsWith(`--${flag} `);
    if (own) return refused;
  }
  return new UsageError(
    `--${flag} needs a value: ${value} reads as a flag (write --${flag}=${value} if it is the value)`,
  );
}

/**
 * Each flag given one `command` takes, and once: node:util keeps the last value, so one given again (an appended
 * `--max-deletes 1`) would win silently. A switch may repeat (`-v -v`), not contradict itself (`--cache --no-cache`).
 */
function flagsOnce(tokens: Tokens, command: string) {
  const own = COMMAND_FLAGS[command]!;
  const said = new Map<string, string>();
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    const raw = token.name;
    const name = raw in FLAGS ? raw : raw.slice(3); // no-cache
    if (!own.includes(name)) {
      throw new UsageError(`${command} takes no --${raw}`);
    }
    const value = token.value ?? `--${raw}`;
    const first = said.get(name);
    said.set(name, value);
    if (first === undefined || "multiple" in FLAGS[name as "query"]) continue;
    if (token.value !== undefined || first !== value) {
      throw new UsageError(
        `--${name} was given twice: give it once (received ${first} and ${value})`,
      );
    }
  }
}

type Tokens = ReturnType<typeof parseFlags>["tokens"];
