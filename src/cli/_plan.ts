// Internal: the command line, checked into a plan before anything is read
// or sent. Pure: no process, no I/O, tested directly.

import { nearest } from "../core/_nearest.ts";
import { parseArgs } from "node:util";
import type { ListOptions } from "../client/mod.ts";
import { VERSION } from "../core/_version.ts";

export const NAME = "partner-api";

/**
 * The environment variables the tool reads.
 *
 * @example Listing what to put in .env
 * ```ts
 * import { CONFIG_VARIABLES } from "@partner-api/client/cli";
 *
 * const names = Object.values(CONFIG_VARIABLES);
 * if (!names.includes("PARTNER_API_CLIENT_SECRET")) throw new Error();
 * ```
 */
import { CONFIG_VARIABLES } from "../core/config.ts";

export { CONFIG_VARIABLES };

/** Where the token cache goes, first found wins. */
export const CACHE_VARIABLES = [
  "PARTNER_API_CACHE_DIR",
  "XDG_CACHE_HOME",
  "HOME",
] as const;

export const FORMATS = ["jsonl", "json", "table"] as const;
export type Format = typeof FORMATS[number];
/** The most pages in flight, as the library allows. */
const MAX_CONCURRENCY = 64;

/** A mistake of the caller (flags, configuration): exit code 2. */
export class UsageError extends Error {}

const COSTS =
  `What each command costs (the token quota is small, per hour and per day):
  token, list    nothing while the cached token is valid; else one token request
  quota          nothing when the cache or a 429 knows the quota; else one token request
  demo           nothing: it runs against a fake in this process`;

export const HELP: Readonly<Record<string, string>> = {
  "": `${NAME} ${VERSION}: tokens, quota and lists of the partner API

Usage: ${NAME} <command> [options]

Commands:
  token          get a token and show its expiry and the quota
  quota          show the quota buckets and when each resets
  list <path>    page through a list, e.g. transactions
  demo           all of the above against an in-process fake service

Options:
  -h, --help     help for the tool or a command
  --version      the version
  --no-cache     neither read nor write the token cache
  -v, --verbose  a line per request on standard error, and a failure's causes

Configuration (environment, or deno task --env-file=.env cli ...):
  ${Object.values(CONFIG_VARIABLES).join("\n  ")}

The token, the quota and any quota block are cached between runs, encrypted
with a key derived from the client secret, in $PARTNER_API_CACHE_DIR, else
$XDG_CACHE_HOME/partner-api, else $HOME/.cache/partner-api. Without read and
write permission there, the tool runs uncached and says so.

${COSTS}

Exit codes: 0 done, 1 the service or network failed, 2 bad flags or configuration.
`,
  token: `Usage: ${NAME} token [--show-token] [--no-cache]

Shows when the token expires, and the quota. Costs a token request only when
no cached token is valid.
  --show-token   print the token alone on standard output (the summary goes
                 to standard error), e.g. TOKEN=$(${NAME} token --show-token)
`,
  quota: `Usage: ${NAME} quota [--no-cache]

Shows each quota bucket and when it resets. The token endpoint is the only
place that reports the quota: the tool shows what the cache (or the last 429)
knows, marked with its age, and costs a token request only when it knows
nothing.
`,
  list: `Usage: ${NAME} list <path> [options]

Pages through a list under the API base and prints its items.
  --limit N              items per page (default 50)
  --page N               first page (default 1)
  --sort-by FIELD        e.g. creationDate
  --sort-direction DIR   ASC or DESC
  --max-items N          stop after N items
  --concurrency N        pages in flight, 1 to ${MAX_CONCURRENCY} (default 1)
  --query k=v            extra query parameter; repeat for more
  --format F             jsonl, json or table (default: table on a terminal, jsonl otherwise)
  --no-cache             neither read nor write the token cache
Progress goes to standard error when it is a terminal.
`,
  demo: `Usage: ${NAME} demo

Starts a fake of the service in this process and runs token, quota and list
against it: no credentials, no network beyond 127.0.0.1, no cache.
`,
};

const FLAGS = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  cache: { type: "boolean", default: true },
  "show-token": { type: "boolean" },
  limit: { type: "string" },
  page: { type: "string" },
  "sort-by": { type: "string" },
  "sort-direction": { type: "string" },
  "max-items": { type: "string" },
  concurrency: { type: "string" },
  query: { type: "string", multiple: true },
  format: { type: "string" },
  verbose: { type: "boolean", short: "v" },
} as const;

const COMMAND_FLAGS: Readonly<Record<string, readonly string[]>> = {
  token: ["show-token", "cache", "verbose"],
  quota: ["cache", "verbose"],
  demo: [],
  list: [
    "limit",
    "page",
    "sort-by",
    "sort-direction",
    "max-items",
    "concurrency",
    "query",
    "format",
    "cache",
    "verbose",
  ],
};

type Values = Partial<ReturnType<typeof parseFlags>["values"]>;

/** What `list` was asked for. */
export interface ListRequest {
  readonly path: string;
  readonly format: Format | undefined;
  readonly options: ListOptions<unknown>;
  readonly limit: number;
}

/** A checked command line: what to run. */
export type Plan =
  | { readonly command: "help"; readonly text: string; readonly code: number }
  | { readonly command: "version" | "demo" }
  | ({ readonly command: "quota" } & SessionFlags)
  | ({ readonly command: "token"; readonly showToken: boolean } & SessionFlags)
  | ({ readonly command: "list"; readonly list: ListRequest } & SessionFlags);

/** What every command that talks to the service takes. */
export interface SessionFlags {
  readonly cache: boolean;
  /** A line per request on standard error, and a failure's causes. */
  readonly verbose: boolean;
}

/**
 * Checks the whole command line.
 *
 * @throws {UsageError} For an unknown command or flag (with the nearest
 * known one), a flag the command does not take, or a bad value.
 */
export function plan(args: readonly string[]): Plan {
  const { values, positionals } = parseFlags(args);
  const [command = "", ...rest] = positionals;
  if (values.version) return { command: "version" };
  if (values.help || command === "") {
    const text = HELP[Object.hasOwn(HELP, command) ? command : ""]!;
    return { command: "help", text, code: values.help ? 0 : 2 };
  }
  const allowed = COMMAND_FLAGS[command];
  if (allowed === undefined) {
    const near = nearest(command, Object.keys(COMMAND_FLAGS));
    throw new UsageError(
      `unknown command: ${command}${near ? `; did you mean ${near}?` : ""}`,
    );
  }
  const misplaced = Object.keys(values).find((flag) =>
    !allowed.includes(flag) && !(flag === "cache" && values.cache === true)
  );
  if (misplaced !== undefined) {
    throw new UsageError(
      `${command} takes no --${flagName(misplaced, values)}`,
    );
  }
  const flags = {
    cache: values.cache !== false,
    verbose: values.verbose === true,
  };
  if (command === "list") {
    return { command, list: listRequest(rest, values), ...flags };
  }
  if (rest.length > 0) throw new UsageError(`unexpected argument: ${rest[0]}`);
  if (command === "token") {
    return { command, showToken: values["show-token"] === true, ...flags };
  }
  if (command === "quota") return { command, ...flags };
  return { command: "demo" };
}

function flagName(flag: string, values: Values): string {
  return flag === "cache" && values.cache === false ? "no-cache" : flag;
}

function parseFlags(args: readonly string[]) {
  try {
    return parseArgs({
      args: [...args],
      options: FLAGS,
      allowPositionals: true,
      allowNegative: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(flagProblem((error as Error).message));
  }
}

/** node:util's words, made one line, with the nearest known flag where one is near. */
function flagProblem(message: string): string {
  const unknown = /Unknown option '(-{1,2})([^']+)'/.exec(message);
  if (unknown) {
    const near = nearest(unknown[2]!, [...Object.keys(FLAGS), "no-cache"]);
    return `unknown flag ${unknown[1]}${unknown[2]}${
      near ? `; did you mean --${near}?` : ""
    }`;
  }
  return message.replace(/\s*\n\s*/g, " ");
}

function count(
  values: Values,
  flag: "limit" | "page" | "max-items" | "concurrency",
  min: number,
  max = Number.MAX_SAFE_INTEGER,
) {
  const text = values[flag];
  if (text === undefined) return undefined;
  const value = Number(text);
  if (
    !/^[0-9]+$/.test(text) || !Number.isSafeInteger(value) || value < min ||
    value > max
  ) {
    const rule = max < Number.MAX_SAFE_INTEGER
      ? `an integer from ${min} to ${max}`
      : min === 0
      ? "a non-negative integer"
      : "a positive integer";
    throw new UsageError(`--${flag} must be ${rule}: received ${text}`);
  }
  return value;
}

function listRequest(positionals: string[], values: Values): ListRequest {
  const [path, ...extra] = positionals;
  if (path === undefined) {
    throw new UsageError("list needs a <path>, e.g. transactions");
  }
  if (extra.length > 0) {
    throw new UsageError(`unexpected argument: ${extra[0]}`);
  }
  const direction = values["sort-direction"]?.toUpperCase();
  if (direction !== undefined && direction !== "ASC" && direction !== "DESC") {
    throw new UsageError(
      `--sort-direction must be ASC or DESC: received ${
        values["sort-direction"]
      }`,
    );
  }
  const format = values.format;
  if (format !== undefined && !FORMATS.includes(format as Format)) {
    throw new UsageError(
      `--format must be one of ${FORMATS.join(", ")}: received ${format}`,
    );
  }
  const numbers = {
    limit: count(values, "limit", 1),
    page: count(values, "page", 1),
    maxItems: count(values, "max-items", 0),
    concurrency: count(values, "concurrency", 1, MAX_CONCURRENCY),
  };
  const options: ListOptions<unknown> = { query: queryOf(values.query ?? []) };
  for (const [key, value] of Object.entries(numbers)) {
    if (value !== undefined) Object.assign(options, { [key]: value });
  }
  if (values["sort-by"] !== undefined) options.sortBy = values["sort-by"];
  if (direction !== undefined) options.sortDirection = direction;
  return {
    path,
    format: format as Format | undefined,
    options,
    limit: numbers.limit ?? 50,
  };
}

function queryOf(pairs: readonly string[]): Record<string, string> {
  const query: Record<string, string> = {};
  for (const pair of pairs) {
    const equals = pair.indexOf("=");
    if (equals < 1) {
      throw new UsageError(`--query must be k=v: received ${pair}`);
    }
    query[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  return query;
}
