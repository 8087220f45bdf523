// Issue 46: every row of docs/errors.md is produced by a test as written.
// The rows are read from the page: each class row names a producer here,
// which must give an error of that class holding every field the row puts in
// parentheses, and naming what its last column says; each row of the tool's
// table is run as a subprocess, its fragments found in what the tool says,
// with its exit code, and the flag or folder it names then makes the run
// succeed. A row without a producer, or a producer without a row, fails.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { configFromEnv } from "../../src/core/config.ts";
import { parseQuotaHeader } from "../../src/core/quota.ts";
import { createClient } from "../../src/client/mod.ts";
import type { ApiError } from "../../src/core/errors.ts";
import { paginate } from "../../src/client/paginate.ts";
import { createTokenProvider, requestToken } from "../../src/token/mod.ts";
import { createJsonlSink, syncList } from "../../src/sync/mod.ts";
import {
  type FakePartnerApi,
  startFakePartnerApi,
} from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { cli } from "./_cli_process.ts";
import { scratchDir } from "./_fleet.ts";
import { processTest } from "../_processes.ts";
import { cpuBoundTest } from "./_scaled_deadline.ts";

/** The rows of the table that starts with `header`: its cells, trimmed. */
async function tableRows(header: string): Promise<string[][]> {
  const text = await Deno.readTextFile("docs/errors.md");
  const table = text.slice(text.indexOf(header)).split("\n\n")[0]!;
  return table.split("\n").slice(2).filter((line) => line.startsWith("|")).map((
    line,
  ) => line.split(/(?<!\\)\|/).slice(1, -1).map((cell) => cell.trim()));
}

/** The errors of a row; `names[i]`: what `errors[i]` must name, besides its class and fields. */
type Produced = { errors: unknown[]; names?: string[][] };

/** The error thrown or rejected by `work`. */
async function caught(work: () => unknown): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error("nothing was thrown");
}

/**
 * `url` under the name `localhost`, which this file's --allow-net=127.0.0.1
 * does not cover: Deno refuses it, as it does a host left out of --allow-net.
 */
function notAllowed(url: URL): string {
  const state = Deno.permissions.querySync({ name: "net", host: "localhost" });
  equal(state.state, "prompt", "run with --allow-net=127.0.0.1 alone");
  return url.href.replace("127.0.0.1", "localhost");
}

/** A port nothing listens on now. */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

const PRODUCERS: Record<string, (api: FakePartnerApi) => Promise<Produced>> = {
  TypeError: async (api) => ({
    errors: [
      await caught(() =>
        createTokenProvider({
          ...api.environment,
          clientId: "c",
          clientSecret: "",
        })
      ),
    ],
  }),
  ConfigError: async () => ({
    errors: [await caught(() => configFromEnv({}))],
  }),
  RangeError: async (api) => ({
    errors: [
      await caught(() =>
        createClient({
          environment: api.environment,
          ...api.credentials,
          timeout: -1,
        })
      ),
    ],
  }),
  TokenRequestError: async (api) => {
    const wrong = { ...api.environment, clientId: api.credentials.clientId };
    const tokenUrl = notAllowed(api.environment.tokenUrl);
    return {
      errors: [
        // 401: status, code, quota and hint; no answer at all: the cause.
        await caught(() => requestToken({ ...wrong, clientSecret: "not-it" })),
        await caught(() =>
          requestToken({
            ...api.credentials,
            audience: api.environment.audience,
            tokenUrl: `http://127.0.0.1:${closedPort()}/oauth/token`,
          })
        ),
        // No net permission for the token host.
        await caught(() =>
          requestToken({ ...wrong, ...api.credentials, tokenUrl })
        ),
      ],
      names: [[], [], [`--allow-net=${new URL(tokenUrl).host}`]],
    };
  },
  QuotaExceededError: async () => {
    await using limited = await startFakePartnerApi({ quota: { perHour: 1 } });
    const request = () =>
      requestToken({ ...limited.environment, ...limited.credentials });
    await request();
    return { errors: [await caught(request)] };
  },
  ApiError: async (api) => {
    const client = createClient({
      environment: api.environment,
      ...api.credentials,
    });
    // No net permission for the API host (the token host has it): after one attempt.
    const baseUrl = notAllowed(api.environment.baseUrl);
    const refused = createClient({
      environment: { ...api.environment, baseUrl: new URL(baseUrl) },
      ...api.credentials,
    });
    const denied = await caught(() => refused.fetch("organizations"));
    equal((denied as ApiError).attempts, 1);
    // The same from the environment: the variable set, not the option.
    const variables = { ...configFor(api), PARTNER_API_BASE_URL: baseUrl };
    const fromEnv = createClient(configFromEnv(variables));
    const named = await caught(() => fromEnv.fetch("organizations"));
    const flag = `--allow-net=${new URL(baseUrl).host}`;
    // An API that refuses every token: one fresh token, then the 401.
    await using refusing = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => Response.json({ error: "invalid_token" }, { status: 401 }),
    );
    const at = new URL(`http://127.0.0.1:${refusing.addr.port}/api/`);
    const unauthorized = createClient({
      environment: { ...api.environment, baseUrl: at },
      ...api.credentials,
    });
    return {
      errors: [
        await caught(() => client.list("transaction").next()),
        denied,
        named,
        await caught(() => unauthorized.list("transactions").next()),
      ],
      names: [
        ["/api/transaction", "organizations", "transactions", "cardholders"],
        [flag, "baseUrl's host"],
        [flag, "PARTNER_API_BASE_URL"],
        ["once an hour", "cache"],
      ],
    };
  },
  Error: async () => {
    const full = [1, 2];
    const pages = paginate(() => Promise.resolve(full), { limit: 2 });
    return { errors: [await caught(() => Array.fromAsync(pages))] };
  },
  SyntaxError: async () => ({
    errors: [await caught(() => parseQuotaHeader("h=x"))],
  }),
  SyncError: async (api) => {
    const client = createClient({
      environment: api.environment,
      ...api.credentials,
    });
    const path = ".test-tmp/no-such-folder/copy.jsonl";
    const sink = createJsonlSink(path);
    const sync = () => syncList(client, "transactions", { id: "id", sink });
    return { errors: [await caught(sync)], names: [[path]] };
  },
};

processTest(
  "docs/errors.md: every class row is produced as written: its class, every field in parentheses, and what it names",
  async () => {
    await using api = await startFakePartnerApi();
    const rows = await tableRows("| error ");
    deepStrictEqual(
      rows.map(([name]) => name!.replaceAll("`", "")).sort(),
      Object.keys(PRODUCERS).sort(),
    );
    for (const [cell, when] of rows) {
      const name = cell!.replaceAll("`", "");
      const { errors, names = [] } = await PRODUCERS[name]!(api);
      for (const [at, error] of errors.entries()) {
        ok(error instanceof Error, `${name}: ${error}`);
        // ConfigError is a TypeError with `missing`; the rest, their class.
        const actual = (error as { missing?: unknown }).missing !== undefined
          ? "ConfigError"
          : error.constructor.name;
        equal(actual, name, `${name}: ${error.message}`);
        for (const part of names[at] ?? []) {
          ok(error.message.includes(part), `${part} in ${error.message}`);
        }
      }
      const parenthesized = [...when!.matchAll(/\(([^)]*`[^)]*)\)/g)]
        .flatMap((group) => [...group[1]!.matchAll(/`(\w+)`/g)])
        .map((field) => field[1]!);
      for (const field of new Set(parenthesized)) {
        ok(
          errors.some((error) =>
            (error as object)[field as never] !== undefined
          ),
          `${name} has no '${field}'`,
        );
      }
    }
  },
);

/** The tool's permissions for a run against the fake, with the cache in `folder`. */
function flags(folder: string, ...more: string[]): string[] {
  return [
    "--allow-env=PARTNER_API_*",
    `--allow-read=${folder}`,
    `--allow-write=${folder}`,
    ...more,
  ];
}

/** The first `--allow-<kind>=…` flag a line names, as an argument. */
function namedFlag(line: string, kind: "net" | "env"): string {
  const flags = [
    ...line.matchAll(new RegExp(`--allow-${kind}=([^\\s)']+)`, "g")),
  ];
  ok(flags.length > 0, line);
  // The exact list, not a pattern to quote: the last one a line names.
  return `--allow-${kind}=${flags.at(-1)![1]}`;
}

/** One run of the tool: its permissions, arguments and variables besides the fake's. */
type Invocation = {
  flags: string[];
  args: string[];
  env?: Record<string, string>;
  /** Run as from cron or a pipe: Deno may ask, finds no terminal, refuses. */
  prompt?: boolean;
};

/** A row's run, in `folder`, and the run its line says will work. */
type ToolCase = (folder: string) => {
  run: Invocation;
  fix: (stderr: string) => Invocation | Promise<Invocation>;
};

const NET = "--allow-net=127.0.0.1";

const TOOL_RUNS: Record<string, ToolCase> = {
  "a list path the API does not have": (folder) => ({
    run: { flags: flags(folder, NET), args: ["list", "transaction"] },
    fix: () => ({
      flags: flags(folder, NET),
      args: ["list", "transactions", "--max-items", "1"],
    }),
  }),
  // Another host allowed than the token URL's.
  "a host `--allow-net` does not name": (folder) => ({
    run: {
      flags: flags(folder, "--allow-net=localhost"),
      args: ["token"],
      prompt: true,
    },
    fix: (stderr) => ({
      flags: flags(folder, "--allow-net=localhost", namedFlag(stderr, "net")),
      args: ["token"],
    }),
  }),
  // The token host denied: --allow-net cannot pass it; without --deny-net it works.
  "a host `--deny-net` names": (folder) => ({
    run: { flags: flags(folder, NET, "--deny-net=127.0.0.1"), args: ["token"] },
    fix: () => ({ flags: flags(folder, NET), args: ["token"] }),
  }),
  // A prefix without its `*` names one variable, PARTNER_API_.
  "a variable `--allow-env` does not name": (folder) => ({
    run: {
      flags: [NET, `--allow-read=${folder}`, "--allow-env=PARTNER_API_"],
      args: ["token", "--no-cache"],
    },
    fix: (stderr) => ({
      flags: [NET, `--allow-read=${folder}`, namedFlag(stderr, "env")],
      args: ["token", "--no-cache"],
    }),
  }),
  "a cache folder that is not yours alone": (folder) => ({
    run: {
      flags: flags(folder, NET),
      args: ["token"],
      env: { PARTNER_API_CACHE_DIR: `${folder}/shared` },
    },
    // As it says: another folder, of one's own.
    fix: () => ({
      flags: flags(folder, NET),
      args: ["token"],
      env: { PARTNER_API_CACHE_DIR: `${folder}/own` },
    }),
  }),
  "`--changes` with a `.jsonl` copy": (folder) => ({
    run: {
      flags: flags(folder, NET),
      args: ["sync", "transactions", "--to", `${folder}/c.jsonl`, "--changes"],
    },
    fix: () => ({
      flags: flags(folder, NET),
      args: ["sync", "transactions", "--to", `${folder}/c.db`, "--changes"],
    }),
  }),
  "a `--since` value not a number or date": (folder) => {
    const since = (date: string) => ({
      flags: flags(folder, NET),
      args: ["list", "transactions", "--since", `creationDate=${date}`],
    });
    return { run: since("2026-02-30"), fix: () => since("2026-02-28") };
  },
};

cpuBoundTest(
  "docs/errors.md: every row of what the tool says is run as written, and the fix it names works",
  async () => {
    await using api = await startFakePartnerApi();
    const rows = await tableRows("| the tool met ");
    deepStrictEqual(
      rows.map(([met]) => met).sort(),
      Object.keys(TOOL_RUNS).sort(),
    );
    const go = (folder: string, { flags, args, env, prompt }: Invocation) =>
      cli(flags, args, {
        ...configFor(api),
        PARTNER_API_CACHE_DIR: `${folder}/cache`,
        ...env,
      }, prompt);
    for (const [met, says, exit] of rows) {
      const folder = await scratchDir();
      // Shared with every user: what the cache row refuses.
      await Deno.mkdir(`${folder}/shared`, { mode: 0o777 });
      await Deno.chmod(`${folder}/shared`, 0o777);
      const { run, fix } = TOOL_RUNS[met!]!(folder);
      const { code, stderr } = await go(folder, run);
      const fixed = (await go(folder, await fix(stderr))).code;
      equal(code, Number(exit), `${met}: ${stderr}`);
      equal(stderr.trimEnd().split("\n").length, 1, stderr);
      const fragments = says!.replaceAll("`", "").split(/…|<[^>]+>/)
        .map((fragment) => fragment.trim()).filter((f) => f.length > 1);
      for (const fragment of fragments) {
        ok(stderr.includes(fragment), `${met}: '${fragment}' in ${stderr}`);
      }
      equal(fixed, 0, `${met}: the fix it names`);
    }
  },
);
