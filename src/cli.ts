/**
 * The `partner-api` command-line tool: get a token, read the quota, and page
 * through lists, configured by `PARTNER_API_*` environment variables. `demo`
 * runs all of it against an in-process fake, with no credentials and no
 * network.
 *
 * ```sh
 * deno add --jsr @partner-api/client
 * deno run --allow-net=<token host>,<api host> --allow-env='PARTNER_API_*' \
 *   @partner-api/client/cli list transactions --sort-by creationDate --sort-direction DESC
 * deno run --allow-net=127.0.0.1 @partner-api/client/cli demo
 * ```
 *
 * @example Running the tool from code with a captured output
 * ```ts
 * import { main } from "@partner-api/client/cli";
 *
 * let out = "";
 * const writer = { isTerminal: false, write: (text: string) => void (out += text) };
 * const code = await main(["--version"], { env: () => undefined, stdout: writer, stderr: writer });
 * if (code !== 0 || !out.startsWith("partner-api ")) throw new Error(out);
 * ```
 *
 * @module
 */

import { parseArgs } from "node:util";
import { createClient, type PartnerClient } from "./client.ts";
import { defineEnvironment, type Environment } from "./environment.ts";
import { ApiError, TokenRequestError } from "./errors.ts";
import type { ListOptions } from "./client.ts";
import { createTokenProvider, type TokenProvider } from "./token.ts";
import { startFakePartnerApi } from "./testing/mod.ts";
import {
  type CliWriter,
  duration,
  gauge,
  progressReporter,
  table,
  utcTime,
} from "./_cli_render.ts";
import { VERSION } from "./_version.ts";

export type { CliWriter };

/**
 * What the tool reads and writes; {@linkcode main} uses the process's own by default.
 *
 * @example Running the tool with a fixed environment
 * ```ts
 * import { type CliIo, main } from "@partner-api/client/cli";
 *
 * let err = "";
 * const io: CliIo = {
 *   env: () => undefined,
 *   stdout: { isTerminal: false, write: () => {} },
 *   stderr: { isTerminal: false, write: (text) => void (err += text) },
 * };
 * if (await main(["token"], io) !== 2 || !err.includes("PARTNER_API_")) throw new Error(err);
 * ```
 */
export interface CliIo {
  /** Reads an environment variable; `undefined` when unset. */
  env(name: string): string | undefined;
  /** Standard output: results. */
  stdout: CliWriter;
  /** Standard error: messages and progress. */
  stderr: CliWriter;
}

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
export const CONFIG_VARIABLES = {
  baseUrl: "PARTNER_API_BASE_URL",
  pciBaseUrl: "PARTNER_API_PCI_BASE_URL",
  tokenUrl: "PARTNER_API_TOKEN_URL",
  audience: "PARTNER_API_AUDIENCE",
  clientId: "PARTNER_API_CLIENT_ID",
  clientSecret: "PARTNER_API_CLIENT_SECRET",
} as const;

const NAME = "partner-api";
const FORMATS = ["jsonl", "json", "table"] as const;
type Format = typeof FORMATS[number];

/** A mistake of the caller (flags, configuration): exit code 2. */
class UsageError extends Error {}

const HELP: Record<string, string> = {
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

Configuration (environment, or deno run --env-file=.env):
  ${Object.values(CONFIG_VARIABLES).join("\n  ")}

Exit codes: 0 done, 1 the service or network failed, 2 bad flags or configuration.
`,
  token: `Usage: ${NAME} token [--show-token]

Gets a token (one token request) and shows when it expires and the quota.
  --show-token   print the token alone on standard output (the summary goes
                 to standard error), e.g. TOKEN=$(${NAME} token --show-token)
`,
  quota: `Usage: ${NAME} quota

Shows each quota bucket and when it resets. Reading the quota costs one token
request: the token endpoint is the only place that reports it.
`,
  list: `Usage: ${NAME} list <path> [options]

Pages through a list under the API base and prints its items.
  --limit N              items per page (default 50)
  --page N               first page (default 1)
  --sort-by FIELD        e.g. creationDate
  --sort-direction DIR   ASC or DESC
  --max-items N          stop after N items
  --concurrency N        pages in flight (default 1)
  --query k=v            extra query parameter; repeat for more
  --format F             jsonl, json or table (default: table on a terminal, jsonl otherwise)
Progress goes to standard error when it is a terminal.
`,
  demo: `Usage: ${NAME} demo

Starts a fake of the service in this process and runs token, quota and list
against it: no credentials, no network beyond 127.0.0.1.
`,
};

const FLAGS = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  "show-token": { type: "boolean" },
  limit: { type: "string" },
  page: { type: "string" },
  "sort-by": { type: "string" },
  "sort-direction": { type: "string" },
  "max-items": { type: "string" },
  concurrency: { type: "string" },
  query: { type: "string", multiple: true },
  format: { type: "string" },
} as const;

const COMMAND_FLAGS: Record<string, readonly string[]> = {
  token: ["show-token"],
  quota: [],
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
  ],
};

type Values = Partial<ReturnType<typeof parseFlags>["values"]>;

function parseFlags(args: string[]) {
  try {
    return parseArgs({
      args,
      options: FLAGS,
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    // node:util words some mistakes over several lines; the tool says one.
    throw new UsageError((error as Error).message.replace(/\s*\n\s*/g, " "));
  }
}

function count(
  values: Values,
  flag: "limit" | "page" | "max-items" | "concurrency",
  min: number,
) {
  const text = values[flag];
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    const rule = min === 0 ? "a non-negative integer" : "a positive integer";
    throw new UsageError(`--${flag} must be ${rule}: received ${text}`);
  }
  return value;
}

/** What `list` was asked for, checked before anything is read or sent. */
interface ListRequest {
  readonly path: string;
  readonly format: Format | undefined;
  readonly options: ListOptions<unknown>;
  readonly limit: number;
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
  const query: Record<string, string> = {};
  for (const pair of values.query ?? []) {
    const equals = pair.indexOf("=");
    if (equals < 1) {
      throw new UsageError(`--query must be k=v: received ${pair}`);
    }
    query[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  const numbers = {
    limit: count(values, "limit", 1),
    page: count(values, "page", 1),
    maxItems: count(values, "max-items", 0),
    concurrency: count(values, "concurrency", 1),
  };
  const options: ListOptions<unknown> = { query };
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

function readConfig(
  io: CliIo,
): { environment: Environment; clientId: string; clientSecret: string } {
  const read = (name: string) => {
    let value: string | undefined;
    try {
      value = io.env(name);
    } catch {
      throw new UsageError(
        `cannot read ${name}: run with --allow-env='PARTNER_API_*' (or name each variable)`,
      );
    }
    if (value === undefined || value.trim() === "") {
      throw new UsageError(`${name} is not set`);
    }
    return value.trim();
  };
  const values = Object.fromEntries(
    Object.entries(CONFIG_VARIABLES).map(([key, name]) => [key, read(name)]),
  ) as Record<keyof typeof CONFIG_VARIABLES, string>;
  try {
    const environment = defineEnvironment(values);
    return {
      environment,
      clientId: values.clientId,
      clientSecret: values.clientSecret,
    };
  } catch (error) {
    // Name the variable rather than the option it feeds.
    const message = (error as Error).message.replace(
      /^Cannot define environment: '(\w+)'/,
      (_, field: keyof typeof CONFIG_VARIABLES) => CONFIG_VARIABLES[field],
    );
    throw new UsageError(message);
  }
}

/** The provider and client one run of the tool shares between its steps. */
interface Session {
  readonly io: CliIo;
  readonly provider: TokenProvider;
  readonly client: PartnerClient;
}

function openSession(
  io: CliIo,
  config: ReturnType<typeof readConfig>,
): Session {
  const provider = createTokenProvider({ ...config.environment, ...config });
  const client = createClient({
    environment: config.environment,
    tokenProvider: provider,
  });
  return { io, provider, client };
}

function writeQuotaGauges(session: Session, out: CliWriter): void {
  const buckets = session.provider.quota?.buckets ?? [];
  if (buckets.length === 0) {
    out.write("  (the token endpoint reported no quota)\n");
  }
  for (const bucket of buckets) out.write(gauge(bucket));
}

async function runToken(session: Session, showToken: boolean): Promise<void> {
  const token = await session.provider.getToken();
  const summary = showToken ? session.io.stderr : session.io.stdout;
  if (showToken) session.io.stdout.write(`${token.accessToken}\n`);
  const left = (token.expiresAt - Date.now()) / 1000;
  summary.write(
    `token valid until ${utcTime(token.expiresAt)} (in ${duration(left)})\n`,
  );
  summary.write("quota:\n");
  writeQuotaGauges(session, summary);
}

async function runQuota(session: Session): Promise<void> {
  if (session.provider.quota === undefined) await session.provider.getToken();
  const quota = session.provider.quota;
  const rows = (quota?.buckets ?? []).map((bucket) => ({
    bucket: bucket.bucket,
    limit: bucket.limit,
    remaining: bucket.remaining,
    "resets in": duration(bucket.resetAfter),
    "resets at": utcTime(
      (quota?.observedAt ?? Date.now()) + bucket.resetAfter * 1000,
    ),
  }));
  session.io.stdout.write(
    rows.length === 0
      ? "the token endpoint reported no quota\n"
      : table(["bucket", "limit", "remaining", "resets in", "resets at"], rows),
  );
}

/** Writes items as they come (JSONL, JSON) or in tables of a page each. */
function itemWriter(out: CliWriter, format: Format, pageSize: number) {
  let first = true;
  let buffered: Record<string, unknown>[] = [];
  const flushTable = () => {
    if (buffered.length === 0) return;
    out.write(table(Object.keys(buffered[0]!), buffered));
    buffered = [];
  };
  return {
    write(item: unknown) {
      if (format === "jsonl") out.write(`${JSON.stringify(item)}\n`);
      else if (format === "json") {
        out.write(`${first ? "[\n" : ",\n"}  ${JSON.stringify(item)}`);
      } else {
        buffered.push(
          typeof item === "object" && item !== null
            ? item as Record<string, unknown>
            : { value: item },
        );
        if (buffered.length >= pageSize) flushTable();
      }
      first = false;
    },
    end() {
      if (format === "json") out.write(first ? "[]\n" : "\n]\n");
      flushTable();
    },
  };
}

async function runList(
  session: Session,
  request: ListRequest,
  forceProgress = false,
): Promise<number> {
  const { io } = session;
  const format = request.format ?? (io.stdout.isTerminal ? "table" : "jsonl");
  const writer = itemWriter(io.stdout, format, request.limit);
  const progress = io.stderr.isTerminal || forceProgress
    ? progressReporter(io.stderr, request.limit)
    : undefined;
  let items = 0;
  try {
    for await (
      const item of session.client.list(request.path, request.options)
    ) {
      writer.write(item);
      progress?.item();
      items++;
    }
  } finally {
    progress?.done();
  }
  writer.end();
  return items;
}

/** A checked command line: what to run, decided before anything is read or sent. */
type Plan =
  | { readonly command: "help"; readonly text: string; readonly code: number }
  | { readonly command: "version" | "quota" | "demo" }
  | { readonly command: "token"; readonly showToken: boolean }
  | { readonly command: "list"; readonly list: ListRequest };

function plan(args: string[]): Plan {
  const { values, positionals } = parseFlags(args);
  const [command = "", ...rest] = positionals;
  if (values.version) return { command: "version" };
  if (values.help || command === "") {
    const text = HELP[Object.hasOwn(HELP, command) ? command : ""]!;
    return { command: "help", text, code: values.help ? 0 : 2 };
  }
  const allowed = COMMAND_FLAGS[command];
  if (allowed === undefined) {
    throw new UsageError(`unknown command: ${command}`);
  }
  const misplaced = Object.keys(values).find((flag) => !allowed.includes(flag));
  if (misplaced !== undefined) {
    throw new UsageError(`${command} takes no --${misplaced}`);
  }
  if (command === "list") return { command, list: listRequest(rest, values) };
  if (rest.length > 0) throw new UsageError(`unexpected argument: ${rest[0]}`);
  if (command === "token") {
    return { command, showToken: values["show-token"] === true };
  }
  return { command: command as "quota" | "demo" };
}

async function execute(
  session: Session,
  planned: Plan,
  forceProgress = false,
): Promise<void> {
  if (planned.command === "token") await runToken(session, planned.showToken);
  else if (planned.command === "quota") await runQuota(session);
  else if (planned.command === "list") {
    await runList(session, planned.list, forceProgress);
  }
}

const NEWEST = "list transactions --sort-by creationDate --sort-direction DESC";
const DEMO_STEPS = [
  "token",
  "quota",
  `${NEWEST} --max-items 5 --format table`,
  `${NEWEST} --limit 40 --concurrency 2 --format jsonl`,
].map((line) => line.split(" "));

async function runDemo(io: CliIo): Promise<void> {
  const started = Date.now();
  await using api = await startFakePartnerApi({
    quota: { perHour: 10, perDay: 50 },
    items: { transactions: 240 },
    latency: 15,
  });
  // One session for every step, as one long-running service would have.
  const session = openSession(io, {
    environment: api.environment,
    ...api.credentials,
  });
  const discard: CliWriter = { isTerminal: false, write: () => {} };
  io.stdout.write(
    `${NAME} demo: the real flow against an in-process fake of the service\n`,
  );
  for (const [i, args] of DEMO_STEPS.entries()) {
    const last = i === DEMO_STEPS.length - 1;
    io.stdout.write(
      `\n$ ${NAME} ${args.join(" ")}${last ? " > /dev/null" : ""}\n`,
    );
    const step = last
      ? { ...session, io: { ...io, stdout: discard } }
      : session;
    await execute(step, plan(args), last);
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const requests = api.tokenRequests;
  io.stdout.write(
    `\nsummary: ${api.apiRequests} API requests, ${requests} token request${
      requests === 1 ? "" : "s"
    } (quota left: ${
      session.provider.quota?.buckets.map((b) =>
        `${b.bucket} ${b.remaining}/${b.limit}`
      ).join(", ")
    }), ${seconds} s\n`,
  );
}

function failureMessage(error: unknown): { message: string; code: number } {
  if (error instanceof UsageError) return { message: error.message, code: 2 };
  if (error instanceof TypeError || error instanceof RangeError) {
    return { message: error.message, code: 2 };
  }
  if (error instanceof TokenRequestError || error instanceof ApiError) {
    const cause = error.cause instanceof Error
      ? `: ${error.cause.message}`
      : "";
    return { message: `${error.message}${cause}`, code: 1 };
  }
  return {
    message: error instanceof Error ? error.message : String(error),
    code: 1,
  };
}

/**
 * Runs the tool with `args` (the words after the program name).
 *
 * All flags are parsed and checked before any configuration is read or any
 * request is sent. Errors are one line on standard error, never a stack trace.
 *
 * @param args The command line, e.g. `["list", "transactions", "--limit", "10"]`.
 * @param io Environment and output; the process's own by default.
 * @returns The exit code: 0 done, 1 the service or network failed, 2 bad
 * flags or configuration.
 *
 * @example Showing the help of a command
 * ```ts
 * import { main } from "@partner-api/client/cli";
 *
 * let out = "";
 * const writer = { isTerminal: false, write: (text: string) => void (out += text) };
 * await main(["list", "--help"], { env: () => undefined, stdout: writer, stderr: writer });
 * if (!out.includes("--sort-direction")) throw new Error(out);
 * ```
 */
export async function main(
  args: string[],
  io: CliIo = processIo(),
): Promise<number> {
  try {
    const planned = plan(args);
    if (planned.command === "version") io.stdout.write(`${NAME} ${VERSION}\n`);
    else if (planned.command === "help") {
      io.stdout.write(planned.text);
      return planned.code;
    } else if (planned.command === "demo") await runDemo(io);
    else await execute(openSession(io, readConfig(io)), planned);
    return 0;
  } catch (error) {
    // A closed output (e.g. `| head`) leaves nothing to tell and nobody to tell it.
    if ((error as Error)?.name === "BrokenPipe") return 0;
    const { message, code } = failureMessage(error);
    io.stderr.write(
      `${NAME}: ${message}${code === 2 ? ` (see ${NAME} --help)` : ""}\n`,
    );
    return code;
  }
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

function processIo(): CliIo {
  return {
    env: (name) => Deno.env.get(name),
    stdout: processWriter(Deno.stdout),
    stderr: processWriter(Deno.stderr),
  };
}

if (import.meta.main) Deno.exit(await main(Deno.args));
