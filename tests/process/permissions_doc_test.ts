// Issue 37, friction 3: every row of docs/cli.md's permission table, run as
// written. The flags are read from the table itself (the fake's addresses
// for the hosts), and each row runs the program it is about with exactly
// them: a row without a run, or a run that fails, fails the test. (The
// table gave --allow-env=PARTNER_API_CLIENT_ID,PARTNER_API_CLIENT_SECRET
// for configFromEnv, which needs 'PARTNER_API_*': the first start died.)

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { Command } from "../_processes.ts";
import { cpuBoundTest } from "./_scaled_deadline.ts";

type Api = Awaited<ReturnType<typeof startFakePartnerApi>>;

/** The table's rows: the use, and its flags cell. */
async function rows(): Promise<Map<string, string>> {
  const text = await Deno.readTextFile("docs/cli.md");
  const table = text.slice(text.indexOf("## Permissions"));
  const found = new Map<string, string>();
  for (const line of table.split("\n")) {
    const cells = line.split("|").map((cell) => cell.trim());
    if (cells.length < 4 || !cells[2]!.includes("`")) continue;
    found.set(cells[1]!, cells[2]!);
  }
  return found;
}

/** The flags of a cell: its first code span. */
const firstSpan = (cell: string) => /`([^`]+)`/.exec(cell)![1]!;

/** The CLI rows' home: its token cache there, not in the user's. */
const HOME = new URL("../../.test-tmp/permissions-home", import.meta.url)
  .pathname;

/** A row's flags as arguments, with the fake's hosts and HOME for the placeholders. */
function argsOf(flags: string, api: Api): string[] {
  const hosts = [api.environment.tokenUrl, api.environment.pciBaseUrl]
    .map((url) => url.host).join(",");
  return flags
    .replace("<token host>,<api host>,<card-data host>", hosts)
    .replace("<hosts>", hosts)
    .replaceAll("$HOME", HOME)
    .split(" ")
    .map((arg) => arg.replaceAll("'", ""));
}

/** Merges `add`'s flags into `base`'s: an --allow-net in both becomes one. */
function adding(base: string[], add: string[]): string[] {
  const merged = [...base];
  for (const flag of add) {
    const [name, value] = flag.split("=", 2);
    const at = merged.findIndex((other) => other.startsWith(`${name}=`));
    if (at >= 0 && value !== undefined) merged[at] += `,${value}`;
    else merged.push(flag);
  }
  return merged;
}

const SCRIPT = ".test-tmp/permissions_script.ts";
const ENV_FILE = ".test-tmp/permissions.env";
const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** A script that lists 3 organizations: its configuration as `how` says. */
function script(how: "configFromEnv" | "Deno.env.get" | "argument"): string {
  const root = new URL("../../mod.ts", import.meta.url).href;
  const client = {
    configFromEnv: "createClient(configFromEnv())",
    "Deno.env.get": `createClient({
  environment: configFromEnv(JSON.parse(Deno.args[0]!)).environment,
  clientId: Deno.env.get("PARTNER_API_CLIENT_ID")!,
  clientSecret: Deno.env.get("PARTNER_API_CLIENT_SECRET")!,
})`,
    argument: "createClient(configFromEnv(JSON.parse(Deno.args[0]!)))",
  }[how];
  return `import { collect, configFromEnv, createClient } from "${root}";
const client = ${client};
console.log((await collect(client.list("organizations"), { maxItems: 3 })).length);
`;
}

async function runScript(
  flags: string[],
  how: "configFromEnv" | "Deno.env.get" | "argument",
  env: Record<string, string>,
  argument = "{}",
) {
  await Deno.writeTextFile(SCRIPT, script(how));
  return await new Command("deno", {
    args: ["run", "--no-prompt", ...flags, SCRIPT, argument],
    env,
  }).output();
}

function cli(flags: string[], args: string[], env: Record<string, string>) {
  return new Command("deno", {
    args: ["run", "--no-prompt", ...flags, "src/cli/mod.ts", ...args],
    env: { HOME, XDG_CACHE_HOME: `${HOME}/.cache`, ...env },
  }).output();
}

/** Each row's run: what it starts, with the table's flags. */
const RUNS: Record<
  string,
  (
    row: (use: string) => string[],
    api: Api,
    cell: (use: string) => string,
  ) => Promise<Deno.CommandOutput>
> = {
  "a script or service": (row, api) =>
    runScript(
      row("a script or service"),
      "argument",
      {},
      JSON.stringify(configFor(api)),
    ),
  "credentials from the environment (`Deno.env.get`)": (row, api) => {
    const { PARTNER_API_CLIENT_ID, PARTNER_API_CLIENT_SECRET, ...rest } =
      configFor(api);
    return runScript(
      adding(
        row("a script or service"),
        row("credentials from the environment (`Deno.env.get`)"),
      ),
      "Deno.env.get",
      {
        PARTNER_API_CLIENT_ID: PARTNER_API_CLIENT_ID!,
        PARTNER_API_CLIENT_SECRET: PARTNER_API_CLIENT_SECRET!,
      },
      JSON.stringify({
        ...rest,
        PARTNER_API_CLIENT_ID: "-",
        PARTNER_API_CLIENT_SECRET: "-",
      }),
    );
  },
  "the configuration from the environment (`configFromEnv()`)": (row, api) =>
    runScript(configFromEnvFlags(row), "configFromEnv", configFor(api)),
  "the CLI": (row, api) =>
    cli(
      row("the CLI"),
      ["list", "organizations", "--max-items", "3"],
      configFor(api),
    ),
  "a `.env` file": async (row, api) => {
    await writeEnvFile(api);
    return await runScript(
      [
        ...configFromEnvFlags(row),
        ...row("a `.env` file").map((flag) =>
          flag.replace("=.env", `=${ENV_FILE}`)
        ),
      ],
      "configFromEnv",
      {},
    );
  },
  "the tool's own `--env-file F`": async (row, api) => {
    await writeEnvFile(api);
    const flags = adding(
      row("the CLI"),
      row("the tool's own `--env-file F`").map((flag) =>
        flag.replace("=F", `=${ENV_FILE}`)
      ),
    );
    return await cli(
      flags,
      ["list", "organizations", "--max-items", "3", "--env-file", ENV_FILE],
      {},
    );
  },
  "an edge function serving on 8000": (row, api, cell) => edge(row, cell, api),
  "tests against `./testing`, the demo": async (row) => {
    const flags = row("tests against `./testing`, the demo");
    const demo = await cli(flags, ["demo"], {});
    if (!demo.success) return demo;
    return await new Command("deno", {
      args: ["test", "--no-prompt", ...flags, "examples/test_with_fake.ts"],
    }).output();
  },
};

function configFromEnvFlags(row: (use: string) => string[]): string[] {
  return adding(
    row("a script or service"),
    row("the configuration from the environment (`configFromEnv()`)"),
  );
}

async function writeEnvFile(api: Api): Promise<void> {
  await Deno.writeTextFile(
    ENV_FILE,
    Object.entries(configFor(api)).map(([name, value]) => `${name}=${value}\n`)
      .join(""),
  );
}

/** The edge example under the edge row's flags, on a free port for 8000. */
async function edge(
  row: (use: string) => string[],
  cell: (use: string) => string,
  api: Api,
): Promise<Deno.CommandOutput> {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = probe.addr.port;
  probe.close();
  // "add `0.0.0.0:8000` to `--allow-net`, and `--unstable-kv` for ..."
  const [host, flag, more] = [
    ...cell("an edge function serving on 8000")
      .matchAll(/`([^`]+)`/g),
  ].map((match) => match[1]!);
  const flags = adding(configFromEnvFlags(row), [
    `${flag}=${host!.replace("8000", String(port))}`,
    more!,
  ]);
  const server = new Command("deno", {
    args: [
      "serve",
      "--no-prompt",
      "--unstable-no-legacy-abort",
      `--port=${port}`,
      ...flags,
      "examples/edge_function.ts",
    ],
    env: { ...configFor(api), PARTNER_API_KV_PATH: ":memory:" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
  await lines.read(); // its onListen line
  lines.releaseLock();
  const answer = await fetch(`http://127.0.0.1:${port}/organizations/count`);
  const body = await answer.text();
  server.kill();
  await server.status;
  await server.stdout.cancel().catch(() => {});
  const stderr = await new Response(server.stderr).bytes();
  return {
    success: answer.status === 200,
    code: answer.status === 200 ? 0 : 1,
    signal: null,
    stdout: new TextEncoder().encode(body),
    stderr,
  };
}

cpuBoundTest(
  "every row of docs/cli.md's permission table runs as written",
  async () => {
    await using api = await startFakePartnerApi();
    await Deno.mkdir(`${HOME}/.cache`, { recursive: true });
    const table = await rows();
    equal(table.size, Object.keys(RUNS).length, [...table.keys()].join("; "));
    const cell = (use: string) => {
      const flags = table.get(use);
      ok(flags !== undefined, `the table has no row '${use}'`);
      return flags;
    };
    const row = (use: string) => argsOf(firstSpan(cell(use)), api);
    for (const use of table.keys()) {
      const run = RUNS[use];
      ok(run !== undefined, `no run for the row '${use}'`);
      const result = await run(row, api, cell);
      const said = decode(result.stderr);
      equal(result.code, 0, `${use}: ${said}`);
      // The CLI row cost a token per run, its cache out of reach (newcomer r181 N2).
      ok(!said.includes("without the token cache"), `${use}: ${said}`);
    }
  },
);
