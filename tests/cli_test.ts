// The CLI run in-process with captured output: version, help, flags,
// configuration and each command. cli_output_test.ts holds what it writes
// when the service misbehaves; cli_process_test.ts runs it as a real
// subprocess.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { VERSION } from "../src/core/_version.ts";
import denoJson from "../deno.json" with { type: "json" };
import { createFileTokenStore } from "../src/store/mod.ts";
import { createClient } from "../src/client/mod.ts";
import { configFromEnv, type PartnerApiConfig } from "../src/core/config.ts";
import { ApiError, TokenRequestError } from "../src/core/errors.ts";
import { configFor, run } from "./_cli_helpers.ts";
import { COMMAND_FLAGS, plan } from "../src/cli/_plan.ts";
import { badName, FLAGS } from "../src/cli/_flag_values.ts";
import { failureMessage } from "../src/cli/_commands.ts";
import { type ManualClock, manualClock } from "./_helpers.ts";

const untouchable = () => {
  throw new Error("configuration must not be read");
};

Deno.test("the CLI's version is the package's", async () => {
  equal(VERSION, denoJson.version);
  deepStrictEqual(await run(["--version"]), {
    code: 0,
    stdout: `partner-api ${VERSION}\n`,
    stderr: "",
  });
});

Deno.test("the CLI shows help for itself and each command", async () => {
  const tool = await run(["--help"]);
  equal(tool.code, 0);
  for (
    const command of [
      "token",
      "quota",
      "list",
      "demo",
      "PARTNER_API_CLIENT_SECRET",
    ]
  ) {
    ok(tool.stdout.includes(command), command);
  }
  for (const command of ["token", "quota", "list", "demo"]) {
    const help = await run([command, "--help"], untouchable);
    equal(help.code, 0);
    ok(help.stdout.startsWith(`Usage: partner-api ${command}`), help.stdout);
  }
  // logout is cache clear's other name: its help (outside review r138 F7: the tool's was shown).
  const logout = await run(["logout", "--help"], untouchable);
  equal(logout.stdout, (await run(["cache", "--help"], untouchable)).stdout);
  equal((await run([])).code, 2, "no command is a usage error");
});

Deno.test("the CLI refuses bad flags in one line, exit 2, before reading configuration", async (t) => {
  const cases: [string[], string][] = [
    [
      ["list", "transactions", "--limit", "zero"],
      "--limit must be an integer from 1 to 1000: received zero",
    ],
    [
      ["list", "transactions", "--limit", "0"],
      "--limit must be an integer from 1 to 1000: received 0",
    ],
    [
      ["list", "transactions", "--sort-direction", "up"],
      "--sort-direction must be ASC or DESC: received up",
    ],
    [
      ["list", "transactions", "--format", "xml"],
      "--format must be jsonl, json, csv or table: received xml",
    ],
    [
      ["list", "transactions", "--query", "noequals"],
      "--query must be k=v: received noequals",
    ],
    [
      ["list", "transactions", "--max-items=-1"],
      "--max-items must be a non-negative integer: received -1",
    ],
    // Told to write the value after "=" only where it is taken so: else why it is not (newcomer r258c).
    [
      ["list", "transactions", "--max-items", "-1"],
      "--max-items must be a non-negative integer: received -1",
    ],
    [
      ["sync", "transactions", "--to", "-copy.db"],
      "--to needs a value: -copy.db reads as a flag (write --to=-copy.db",
    ],
    [["sync", "transactions", "--to"], "--to needs a value"],
    // In the CLI's flags, not the library's options nor node:util's words (outside review r138 F8).
    [
      ["list", "transactions", "--sort-by", "-creationDate"],
      "write --sort-by creationDate --sort-direction DESC",
    ],
    [
      ["list", "transactions", "--since=-creationDate=2026-11-24"],
      "write --since creationDate=2026-11-24",
    ],
    // A flag after it: a value forgotten, with no advice to make it a field (r140 F3).
    [
      ["list", "transactions", "--sort-by", "--limit=3"],
      "--sort-by needs a value: --limit=3 is a flag",
    ],
    [
      ["list", "transactions", "--sort-by=-"],
      '--sort-by must be a field name: received "-"',
    ],
    [["list"], "list needs a <path>, e.g. transactions"],
    // An empty path is none: get sent GET /api/ (a 404, exit 1), list read the configuration first (r212c F6).
    [["list", ""], "list needs a <path>, e.g. transactions"],
    [["get", " "], "get needs a <path>, e.g. organizations"],
    [["get", "/"], "get needs a <path>, e.g. organizations"], // r214a F4: GET /api/
    [["list", "?x=1"], "list needs a <path>, e.g. transactions"],
    [["sync", "", "--to", "a.db"], "sync needs a <list>, e.g. transactions"],
    ...[
      "postgres://u:pw-Hunter2@db/copy.db",
      "postgres:u:pw-Hunter2@db", // r214a F5: these two were quoted
      "host=db user=u password=Hunter2 dbname=x",
      "jdbc:postgresql://u:Hunter2@h/copy.db", // r215a F1: these four were quoted
      " postgres://u:Hunter2@h/copy.db",
      "postgres:u:Hun/ter2@host",
      "host=db user=u PGPASSWORD=Hunter2",
    ].map((to): [string[], string] => [
      ["sync", "things", "--to", to],
      "--to takes a file, not an address",
    ]),
    [["list", "a", "b"], "unexpected argument: b"],
    [["token", "--limit", "5"], "token takes no --limit"],
    [["logout", "--limit", "5"], "logout takes no --limit"],
    [["cache", "clear", "--fields", "a"], "cache takes no --fields"],
    [["toString"], "unknown command: toString"],
    [["quota", "extra"], "unexpected argument: extra"],
    [["launch"], "unknown command: launch"],
    [["token", "--bogus"], "unknown flag --bogus"],
    [["list", "transactions", "--max", "3"], "did you mean --max-items?"],
    [["tokne"], "unknown command: tokne; did you mean token?"],
    // A letter alone: only a flag it starts, in either case (-V was "did you mean --to?").
    [["-V"], "unknown flag -V (see"],
    // r219a F3: a blank field opened the copy first (an empty copy.db left behind).
    [["sync", "t", "--to", "c.db", "--id", ""], "--id must be a field name"],
    [
      ["sync", "t", "--to", "c.db", "--sort-by", " "],
      "--sort-by must be a field name",
    ],
    [["list", "t", "--sort-by", ""], "--sort-by must be a field name"],
    // r220a F4, F5: a zero-width space or `-` for a field; a space before a --query or --since name.
    [
      ["sync", "t", "--to", "c.db", "--id", "\u200b"],
      "--id must be a field name",
    ],
    [["sync", "t", "--to", "c.db", "--id=-"], "--id must be a field name"],
    [
      ["sync", "t", "--to", "c.db", "--sort-by=- "],
      "--sort-by must be a field name",
    ],
    [
      ["sync", "t", "--to", "c.db", "--query", " limit=5"],
      "--query must be k=v",
    ],
    [["list", "t", "--query", "\t=x"], "--query must be k=v"],
    [["list", "t", "--since", " =x"], "--since must be FIELD=VALUE"],
    // r221a F3: a control character, a mark, a filler at an end.
    [
      ["sync", "t", "--to", "c.db", "--id", "transactionID\x01"],
      "--id must be a field name",
    ],
    [
      ["sync", "t", "--to", "c.db", "--id", "\u034fid"],
      "--id must be a field name",
    ],
    [["list", "t", "--query", "limit\x01=5"], "--query must be k=v"],
    [["list", "t", "--since", "\u3164=5"], "--since must be FIELD=VALUE"],
    [["list", "x", "-M"], "unknown flag -M; did you mean --max-items?"],
    [
      ["list", "transactions", "--concurrency", "2000000"],
      "--concurrency must be an integer from 1 to 64",
    ],
  ];
  for (const [args, message] of cases) {
    await t.step(args.join(" "), async () => {
      const result = await run(args, untouchable);
      equal(result.code, 2);
      equal(result.stdout, "");
      equal(result.stderr.split("\n").length, 2, "one line");
      ok(result.stderr.startsWith("partner-api: "), result.stderr);
      ok(result.stderr.includes(message), result.stderr);
      ok(!result.stderr.includes("    at "), "no stack trace");
      ok(!result.stderr.includes("Hunter2"), "no password of an address");
    });
  }
});

Deno.test("a name for a field or a query parameter may end with a mark, as words of many scripts do, and may not begin with one or have a space, control, format character or blank filler at an end (r222a F3: 'วันที่', 'राशि', NFD 'café' were refused; r223a F3, F4: a variation selector or private use passed)", () => {
  for (const name of ["วันที่", "राशि", "cafe\u0301", "first name", "id"]) {
    equal(badName(name), false, name);
  }
  for (
    const name of [
      "",
      " id",
      "id\t",
      "\u0301id",
      "id\u034f",
      "\u3164id",
      "id\x01",
      "\u200bid",
      // r223a F3, F4: a variation selector shows nothing; private use, a box.
      "id\ufe0f",
      "id\u{e0100}",
      "\ue000",
    ]
  ) {
    equal(badName(name), true, JSON.stringify(name));
  }
});

/** The commands that talk to no service, as each is run. */
const LOCAL_COMMANDS = [
  ["cache", "clear"],
  ["logout"],
  ["completion", "bash"],
  [
    "demo",
  ],
];

Deno.test("cache clear, logout, completion and demo take the flags every command takes (DESIGN's CLI table): each exits 0; --env-file narrows cache clear and logout to that configuration", async (t) => {
  await using api = await startFakePartnerApi();
  const file = Object.entries(configFor(api)).map(([k, v]) => `${k}=${v}\n`);
  const readTextFile = () => Promise.resolve(file.join(""));
  const cleared: (PartnerApiConfig | undefined)[] = [];
  const clearCache = (config?: PartnerApiConfig) => {
    cleared.push(config);
    return Promise.resolve("removed 1 cached token");
  };
  const common = [
    ["--no-cache"],
    ["-v"],
    ["--verbose"],
    ["--env-file", "ci.env"],
    ["--token-body", "form"],
    ["--client-authentication", "basic"],
  ];
  for (const command of LOCAL_COMMANDS) {
    for (const flag of common) {
      const args = [...command, ...flag];
      await t.step(args.join(" "), async () => {
        cleared.length = 0;
        const extra = { readTextFile, clearCache };
        // Nothing but --env-file's file is read: no variable of the process.
        const result = await run(args, untouchable, undefined, extra);
        equal(result.code, 0, result.stderr);
        if (command[0] === "completion") {
          ok(result.stdout.includes("--max-items"), result.stdout);
        } else if (command[0] === "demo") {
          ok(result.stdout.includes("summary: "), result.stdout);
        } else {
          equal(result.stdout, "removed 1 cached token\n");
          // The file's configuration alone, or every configuration's.
          const narrowed = flag[0] === "--env-file";
          equal(cleared.length, 1);
          equal(
            cleared[0]?.clientId,
            narrowed ? api.credentials.clientId : undefined,
          );
        }
      });
    }
  }
  equal(api.tokenRequests + api.apiRequests, 0);
});

Deno.test("cache clear --env-file reads the configuration whose token it removes, not how that token is asked for: a bad PARTNER_API_TOKEN_BODY there is not refused", async () => {
  await using api = await startFakePartnerApi();
  const file = Object.entries({
    ...configFor(api),
    PARTNER_API_TOKEN_BODY: "xml",
    PARTNER_API_CLIENT_AUTHENTICATION: "none",
  }).map(([k, v]) => `${k}=${v}\n`).join("");
  const cleared: (PartnerApiConfig | undefined)[] = [];
  const extra = {
    readTextFile: () => Promise.resolve(file),
    clearCache: (config?: PartnerApiConfig) => {
      cleared.push(config);
      return Promise.resolve("removed 1 cached token");
    },
  };
  const args = ["cache", "clear", "--env-file", "ci.env"];
  const result = await run(args, untouchable, undefined, extra);
  equal(result.code, 0, result.stderr);
  equal(cleared[0]?.clientId, api.credentials.clientId);
});

Deno.test("cache clear, logout, completion and demo check the common flags as every command does: a bad value, a repeat or a contradiction exits 2 in one line", async (t) => {
  const clearCache = () => Promise.reject(new Error("nothing may be cleared"));
  const readTextFile = () => Promise.resolve("# no configuration\n");
  const bad = [
    ["--token-body", "xml"],
    ["--client-authentication", "digest"],
    ["--env-file", "a.env", "--env-file", "b.env"],
    ["--cache", "--no-cache"],
    ["-v", "--no-verbose"],
    ["--token-body", "json", "--token-body", "form"],
  ];
  for (const command of LOCAL_COMMANDS) {
    for (const flags of bad) {
      const args = [...command, ...flags];
      await t.step(args.join(" "), async () => {
        const extra = { readTextFile, clearCache };
        const result = await run(args, untouchable, undefined, extra);
        equal(result.code, 2, result.stderr);
        equal(result.stdout, "");
        equal(result.stderr.split("\n").length, 2, result.stderr);
      });
    }
  }
  // cache clear --env-file needs the whole configuration to know whose token: the missing variables are named.
  const partial = await run(["logout", "--env-file", "ci.env"], {}, undefined, {
    readTextFile,
    clearCache,
  });
  equal(partial.code, 2, partial.stderr);
  ok(partial.stderr.includes("PARTNER_API_CLIENT_ID"), partial.stderr);
});

Deno.test("the CLI names a missing or invalid configuration variable", async () => {
  await using api = await startFakePartnerApi();
  const config = configFor(api);
  const { PARTNER_API_AUDIENCE: _, ...missing } = config;
  const absent = await run(["token"], missing);
  equal(absent.code, 2);
  ok(
    absent.stderr.startsWith("partner-api: PARTNER_API_AUDIENCE is not set"),
    absent.stderr,
  );
  const insecure = await run(["token"], {
    ...config,
    PARTNER_API_TOKEN_URL: "http://idp.example.com/token",
  });
  equal(insecure.code, 2);
  ok(
    insecure.stderr.includes("PARTNER_API_TOKEN_URL must use https"),
    insecure.stderr,
  );
  const denied = await run(["token"], () => {
    throw new Error("Requires env access");
  });
  ok(denied.stderr.includes("--allow-env='PARTNER_API_*'"), denied.stderr);
  equal(api.tokenRequests, 0);
});

Deno.test("a configuration error names the variable and the rule, never the value", async () => {
  await using api = await startFakePartnerApi();
  const config = configFor(api);
  const pasted = "pasted-Secret-9f8e7d6c5b4a";
  for (
    const [variable, value] of [
      ["PARTNER_API_TOKEN_URL", pasted],
      ["PARTNER_API_TOKEN_URL", `http://idp.example.com/${pasted}`],
      ["PARTNER_API_BASE_URL", `https://api.example.com/${pasted}`],
      ["PARTNER_API_PCI_BASE_URL", `https://user:${pasted}@pci.example.com/`],
    ]
  ) {
    const result = await run(["token"], { ...config, [variable!]: value! });
    equal(result.code, 2);
    ok(result.stderr.includes(`${variable} must`), result.stderr);
    ok(!result.stderr.includes(pasted), result.stderr);
    ok(!result.stderr.includes("9f8e7d"), result.stderr);
  }
  equal(api.tokenRequests, 0);
});

Deno.test("`token` shows expiry and quota, and the token only when asked", async () => {
  await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
  const config = configFor(api);
  const shown = await run(["token"], config);
  equal(shown.code, 0);
  ok(
    /^token valid until \d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 24 h; 1 token request\)\nquota:\n/
      .test(shown.stdout),
  );
  ok(shown.stdout.includes("per_hour"));
  ok(shown.stdout.includes("9/10 left"));
  const withToken = await run(["token", "--show-token"], config);
  const token = withToken.stdout.trim();
  ok(api.isValidToken(token), "stdout holds the token alone");
  ok(withToken.stderr.includes("token valid until"));
  ok(!shown.stdout.includes(token) && !shown.stderr.includes(token));
});

Deno.test("the CLI's token cache is given the run's clock, as its provider is: its lock is stamped and judged by it (it read the system clock)", async () => {
  await using api = await startFakePartnerApi();
  await Deno.mkdir(".test-tmp", { recursive: true });
  const folder = await Deno.makeTempDir({ dir: ".test-tmp", prefix: "cli-" });
  const now = () => Date.now() + 60_000;
  const given: unknown[] = [];
  const extra = {
    now,
    openCache: (
      clientSecret: string,
      onNotice: (line: string) => void,
      clock?: () => number,
    ) => {
      given.push(clock);
      return {
        store: createFileTokenStore({ folder, clientSecret, onNotice, now }),
      };
    },
  };
  const result = await run(["token"], configFor(api), undefined, extra);
  equal(result.code, 0, result.stderr);
  deepStrictEqual(given, [now]);
  await Deno.remove(folder, { recursive: true });
});

Deno.test("`get` answered 401 after the token's one renewal of the hour says why no other token is tried, and the command that clears the cache as the tool was run (it printed the bare 401, where a list's said so)", async () => {
  await using api = await startFakePartnerApi();
  await Deno.mkdir(".test-tmp", { recursive: true });
  const folder = await Deno.makeTempDir({ dir: ".test-tmp", prefix: "cli-" });
  const extra = {
    helpHint: "deno run -A '/a b/mod.ts' --help",
    openCache: (clientSecret: string, onNotice: (line: string) => void) => ({
      store: createFileTokenStore({ folder, clientSecret, onNotice }),
    }),
  };
  const get = () =>
    run(["get", "organizations"], configFor(api), undefined, extra);
  equal((await get()).code, 0);
  api.revokeTokens(); // a restarted fake: the cached token is refused, renewed once
  equal((await get()).code, 0);
  api.revokeTokens(); // again within the hour: no renewal
  const refused = await get();
  equal(refused.code, 1);
  ok(refused.stderr.includes("answered 401"), refused.stderr);
  ok(
    refused.stderr.endsWith(
      "; deno run -A '/a b/mod.ts' cache clear removes the cached token\n",
    ),
    refused.stderr,
  );
  equal(api.tokenRequests, 2);
  await Deno.remove(folder, { recursive: true });
});

Deno.test("`token` says a token from the cache was not checked with the service (it said 'valid until' of one a revoked or restarted service refuses), in text and JSON, never the token", async () => {
  await using api = await startFakePartnerApi();
  await Deno.mkdir(".test-tmp", { recursive: true });
  const folder = await Deno.makeTempDir({ dir: ".test-tmp", prefix: "cli-" });
  const extra = {
    openCache: (clientSecret: string, onNotice: (line: string) => void) => ({
      store: createFileTokenStore({ folder, clientSecret, onNotice }),
    }),
  };
  const token = (...flags: string[]) =>
    run(["token", ...flags], configFor(api), undefined, extra);
  const issued = await token();
  equal(issued.code, 0, issued.stderr);
  ok(issued.stdout.startsWith("token valid until "), issued.stdout);
  api.revokeTokens(); // the cached token is no longer good: the run cannot know
  const cached = await token();
  equal(cached.code, 0, cached.stderr);
  const line = cached.stdout.split("\n")[0]!;
  ok(line.startsWith("cached, unchecked token expires "), line);
  ok(/\(in \d+ h; cached: no token request\)$/.test(line), line);
  const json = await token("--format", "json");
  deepStrictEqual([JSON.parse(json.stdout).cached, api.tokenRequests], [
    true,
    1,
  ]);
  const fresh = await token("--format", "json", "--no-cache");
  equal(JSON.parse(fresh.stdout).cached, false);
  const shown = await token("--show-token");
  const printed = [issued, cached, json, fresh, shown].map((each) =>
    each.stdout + each.stderr
  ).join("");
  ok(printed.split(shown.stdout.trim()).length === 2, "the token once, asked");
  await Deno.remove(folder, { recursive: true });
});

Deno.test("`quota` prints the buckets as a table", async () => {
  await using api = await startFakePartnerApi({
    quota: { perHour: 10, perDay: 50 },
  });
  const result = await run(["quota"], configFor(api));
  equal(result.code, 0);
  const [header, hour, day] = result.stdout.trim().split("\n").map((line) =>
    line.split(/\s{2,}/)
  );
  deepStrictEqual(header, [
    "bucket",
    "limit",
    "remaining",
    "resets in",
    "resets at",
  ]);
  deepStrictEqual(hour?.slice(0, 3), ["per_hour", "10", "9"]);
  deepStrictEqual(day?.slice(0, 3), ["per_day", "50", "49"]);
  ok(day?.[4]?.endsWith(" UTC"));
});

Deno.test("`quota` from the cache after a bucket's reset shows it full, resetting next on the next UTC hour, not in 0 s (newcomer r250c)", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({
    quota: { perHour: 10, perDay: 50 },
    now: clock,
  });
  const { folder, extra } = await cacheOn(clock);
  clock.set(Date.UTC(2026, 10, 21, 10, 20)); // the hourly bucket resets at 11:00
  equal((await run(["token"], configFor(api), undefined, extra)).code, 0);
  clock.set(Date.UTC(2026, 10, 21, 12, 20)); // two hours on: the cache's reading is old
  const result = await run(["quota"], configFor(api), undefined, extra);
  equal(result.code, 0, result.stderr);
  equal(api.tokenRequests, 1, "from the cache");
  const [, hour, day] = result.stdout.trim().split("\n").map((line) =>
    line.split(/\s{2,}/)
  );
  deepStrictEqual(hour, [
    "per_hour",
    "10",
    "10",
    "40 min",
    "2026-11-21 13:00 UTC",
  ]);
  deepStrictEqual(day?.slice(2), ["49", "11 h 40 min", "2026-11-22 00:00 UTC"]);
  await Deno.remove(folder, { recursive: true });
});

Deno.test("`list` writes JSONL by default off a terminal, JSON or a table on request", async () => {
  await using api = await startFakePartnerApi({ items: { cardholders: 7 } });
  const config = configFor(api);
  const jsonl = await run(["list", "cardholders", "--limit", "3"], config);
  equal(jsonl.code, 0);
  const lines = jsonl.stdout.trim().split("\n").map((line) => JSON.parse(line));
  deepStrictEqual(
    lines.map((row) => row.cardholderID),
    [1, 2, 3, 4, 5, 6, 7].map((n) => `ch_00000${n}`),
  );
  equal(jsonl.stderr, "", "no progress off a terminal");
  const json = await run([
    "list",
    "cardholders",
    "--format",
    "json",
    "--max-items",
    "2",
  ], config);
  equal(JSON.parse(json.stdout).length, 2);
  const empty = await run([
    "list",
    "cardholders",
    "--format",
    "json",
    "--max-items",
    "0",
  ], config);
  deepStrictEqual(JSON.parse(empty.stdout), []);
  const onTerminal = await run(
    ["list", "cardholders", "--sort-by", "name", "--sort-direction", "desc"],
    config,
    {
      stdout: true,
      stderr: true,
    },
  );
  ok(onTerminal.stdout.startsWith("cardholderID"), "a table on a terminal");
  ok(onTerminal.stderr.includes("7 items"), "progress on a terminal");
  const filtered = await run([
    "list",
    "organizations",
    "--query",
    "country=DE",
    "--max-items",
    "1",
  ], config);
  equal(filtered.code, 0);
  equal(api.tokenRequests, 4, "one token per run that requests a page");
});

Deno.test("`list` times its progress line by the run's clock (io.now), as `sync` does: pages 5 s apart on it are 2 items/s (the system clock said thousands)", async () => {
  const clock = manualClock();
  // Each list request the fake answers takes 5 s of the run's clock.
  const onRequest = ({ path }: { path: string }) => {
    if (path.startsWith("/api/")) clock.advance(5_000);
  };
  const items = { cardholders: 25 };
  await using api = await startFakePartnerApi({ items, now: clock, onRequest });
  const result = await run(
    ["list", "cardholders", "--limit", "10", "--no-cache"],
    configFor(api),
    { stdout: false, stderr: true },
    { now: clock },
  );
  equal(result.code, 0, result.stderr);
  deepStrictEqual(result.stderr.split("\r\x1b[K").slice(1), [
    "1 page, 10 items, 2 items/s",
    "2 pages, 20 items, 2 items/s",
    "3 pages, 25 items, 2 items/s",
    "3 pages, 25 items, 2 items/s\n",
  ]);
});

Deno.test("the CLI reports a service failure in one line, exit 1", async () => {
  await using api = await startFakePartnerApi();
  const config = configFor(api);
  const denied = await run(["token"], {
    ...config,
    PARTNER_API_CLIENT_SECRET: "wrong",
  });
  equal(denied.code, 1);
  equal(
    denied.stderr,
    "partner-api: Cannot request token: the token endpoint answered 401 access_denied: Unauthorized: check PARTNER_API_CLIENT_ID, PARTNER_API_CLIENT_SECRET and PARTNER_API_AUDIENCE, and that PARTNER_API_TOKEN_URL is this environment's\n",
  );
  const missing = await run(["list", "nothing"], config);
  equal(missing.code, 1);
  ok(missing.stderr.includes("answered 404"), missing.stderr);
  const outside = await run(["list", "https://evil.example/api/x"], config);
  equal(outside.code, 2);
  for (const result of [denied, missing, outside]) {
    ok(!result.stderr.includes(api.credentials.clientSecret));
  }
});

Deno.test("a host without net permission: the CLI says the library's message, which names the flag to add and the variable, and exits 2 as for a missing read permission (it exited 1, a failure a retry wrapper retries)", async () => {
  await using api = await startFakePartnerApi();
  // The API under the name localhost, which this run's --allow-net=127.0.0.1 does not cover.
  const env = configFor(api);
  const localhost = (url: string) => url.replace("127.0.0.1", "localhost");
  env.PARTNER_API_BASE_URL = localhost(env.PARTNER_API_BASE_URL!);
  env.PARTNER_API_PCI_BASE_URL = localhost(env.PARTNER_API_PCI_BASE_URL!);
  const client = createClient(configFromEnv(env));
  for (
    const [args, call, variable] of [
      [
        ["get", "organizations"],
        () => client.fetch("organizations"),
        "PARTNER_API_BASE_URL",
      ],
      [
        ["get", "--pci", "cards"],
        () => client.pciFetch("cards"),
        "PARTNER_API_PCI_BASE_URL",
      ],
    ] as const
  ) {
    const error = await call().then(() => undefined, (error) => error);
    ok(error instanceof ApiError, String(error));
    const { host } = new URL(error.url);
    // The flag, and the variable whose host it is: what was set, not the option's name.
    ok(error.message.includes(`--allow-net=${host}`), error.message);
    ok(error.message.includes(variable), error.message);
    const result = await run([...args, "--no-cache"], env);
    equal(result.code, 2);
    equal(
      result.stderr,
      `partner-api: ${error.message} (see partner-api ${args[0]} --help)\n`,
    );
  }
});

Deno.test("a permission Deno refuses outright (the demo's own server without --allow-net) exits 2 with Deno's words; a failure of the network exits 1", () => {
  const refused = new Deno.errors.NotCapable(
    'Requires net access to "127.0.0.1:0", run again with the --allow-net flag',
  );
  deepStrictEqual(failureMessage(refused), {
    message: refused.message,
    code: 2,
  });
  equal(failureMessage(new Deno.errors.ConnectionRefused("refused")).code, 1);
});

Deno.test("a timeout's line says its limit once: its cause, the timer's own words, is not added (r182 F11: 'within 30000 ms: no answer within 30000 ms')", () => {
  const timer = new DOMException("no answer within 30000 ms", "TimeoutError");
  const said =
    "Cannot get token: no answer from https://idp.example/token within 30000 ms";
  for (
    const error of [
      new TokenRequestError(said, { reason: "timeout", cause: timer }),
      new ApiError(said, {
        reason: "timeout",
        status: 0,
        url: "https://api.example/api/x",
        cause: timer,
      }),
    ]
  ) {
    deepStrictEqual(failureMessage(error), { message: said, code: 1 });
  }
});

Deno.test("`demo` runs token, quota and list on one token", async () => {
  const result = await run(["demo"], untouchable);
  equal(result.code, 0, result.stderr);
  for (
    const step of [
      "$ partner-api token",
      "$ partner-api quota",
      "$ partner-api list transactions",
    ]
  ) {
    ok(result.stdout.includes(step), step);
  }
  ok(
    /summary: \d+ API requests, 1 token request \(/.test(result.stdout),
    result.stdout,
  );
  ok(result.stderr.includes("6 pages, 240 items"), result.stderr);
});

Deno.test("a refused token request is remembered across runs through the cache: none within its 10 s cooldown, one after (the clock driven); a request sent another way (the hint's --token-body form) is not held", async () => {
  // A server that takes form bodies only, asked with JSON: refused (400).
  await using api = await startFakePartnerApi({ tokenBodyFormats: ["form"] });
  const clock = manualClock();
  const { folder, extra } = await cacheOn(clock);
  const requests: number[] = [];
  // 0 s: refused; 9.9 s: within the cooldown; 10.1 s: after it (refused
  // again, 20 s now); 30 s: within the second.
  for (const at of [0, 9_900, 10_100, 30_000]) {
    clock.set(Date.UTC(2026, 10, 21, 10) + at);
    const { code, stderr } = await run(
      ["token"],
      configFor(api),
      undefined,
      extra,
    );
    equal(code, 1, stderr);
    requests.push(api.tokenRequests);
  }
  deepStrictEqual(requests, [1, 1, 2, 2]);
  // Following the hint (--token-body form) within that cooldown: sent, and the
  // token comes (r57 F7: refused by the cooldown of the JSON request).
  const { code, stderr } = await run(
    ["token", "--token-body", "form"],
    configFor(api),
    undefined,
    extra,
  );
  equal(code, 0, stderr);
  equal(api.tokenRequests, 3);
  await Deno.remove(folder, { recursive: true });
});

Deno.test("the CLI refuses what the service or library would refuse only later (a page above 1000, two copies, a paging key in --query in any case or a name twice, a direction in other letters): exit 2, one line naming the flag, no request", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 5 } });
  const folder = ".test-tmp/cli-inputs";
  await Deno.mkdir(folder, { recursive: true });
  const sync = ["sync", "transactions", "--to", `${folder}/copy.db`];
  const cases: [string[], string][] = [
    [["list", "transactions", "--limit", "1001"], "--limit"],
    [[...sync, "--limit", "1001"], "--limit"],
    [[...sync, "--to", `${folder}/copy.jsonl`], "--to"],
    [["list", "transactions", "--query", "sortby=x"], "--query"],
    [["list", "transactions", "--query", "LIMIT=5"], "--query"],
    [["list", "transactions", "--query", "limit=5"], "--query"],
    [[...sync, "--query", "Page=2"], "--query"],
    // A name given twice: the second won silently.
    [
      [...sync, "--query", "status=open", "--query", "status=closed"],
      "--query",
    ],
    [["list", "transactions", "--sort-direction", "aſc"], "--sort-direction"],
    // The library's refusals, said in flags: its option words are not the tool's.
    [["list", "transactions", "--sort-by=-amount"], "--sort-direction DESC"],
    [[...sync, "--sort-by=-amount"], "--sort-direction DESC"],
    [["list", "transactions?page=3"], "--page"],
    [["list", "transactions?status=open&limit=3"], "--limit"],
    [["sync", "transactions?status=open", "--to", `${folder}/q.db`], "--query"],
  ];
  for (const [args, flag] of cases) {
    const result = await run([...args, "--no-cache"], configFor(api));
    equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
    equal(result.stdout, "");
    equal(result.stderr.split("\n").length, 2, result.stderr);
    ok(result.stderr.includes(flag), result.stderr);
    ok(!result.stderr.includes(api.credentials.clientSecret), result.stderr);
    deepStrictEqual([api.tokenRequests, api.apiRequests], [0, 0]);
  }
  // Lower case is the tool's own leniency, kept (the service reads only ASC and DESC).
  const asc = plan(["list", "transactions", "--sort-direction", "asc"]);
  equal(asc.command === "list" && asc.list.options.sortDirection, "ASC");
  await Deno.remove(folder, { recursive: true });
});

Deno.test("a single-value flag given twice is refused by every command that takes it: exit 2, one line, no request (the second must not win silently: an appended --max-deletes 1 would lift a guard)", async (t) => {
  await using api = await startFakePartnerApi({ items: { transactions: 5 } });
  const folder = ".test-tmp/cli-twice";
  await Deno.mkdir(folder, { recursive: true });
  for (const name of ["a.env", "b.env"]) {
    await Deno.writeTextFile(`${folder}/${name}`, "# nothing\n");
  }
  // Two values each flag takes alone (so only the repeat is refused); a flag
  // added to FLAGS without one here fails the test until it has them.
  const valid: Record<string, [string, string]> = {
    "env-file": [`${folder}/a.env`, `${folder}/b.env`],
    fields: ["transactionID", "amount"],
    limit: ["10", "20"],
    page: ["1", "2"],
    "sort-by": ["creationDate", "transactionID"],
    "sort-direction": ["ASC", "DESC"],
    since: ["creationDate=2026-11-01", "creationDate=2026-11-02"],
    "max-items": ["1", "2"],
    concurrency: ["1", "2"],
    format: ["json", "json"],
    to: [`${folder}/a.db`, `${folder}/b.jsonl`],
    id: ["transactionID", "id"],
    sweep: ["1", "all"],
    deletes: ["remove", "mark"],
    "max-deletes": ["0.1", "1"],
    priority: ["high", "low"],
    "max-duration": ["10m", "1h"],
    "token-body": ["json", "form"],
    "client-authentication": ["body", "basic"],
  };
  const base = (command: string, flag: string) =>
    command === "sync"
      ? [
        "sync",
        "transactions",
        // A copy of its own: one made with other flags may refuse these.
        ...(flag === "to" ? [] : ["--to", `${folder}/${flag}.db`]),
      ]
      : command === "list" || command === "get"
      ? [command, "transactions"]
      : command === "cache"
      ? ["cache", "clear"]
      : command === "completion"
      ? ["completion", "bash"]
      : [command];
  const single = Object.entries(FLAGS).filter(([, spec]) =>
    spec.type === "string" && !("multiple" in spec && spec.multiple)
  ).map(([flag]) => flag);
  ok(single.includes("limit") && !single.includes("query"), single.join());
  for (const flag of single) {
    const values = valid[flag];
    ok(values, `--${flag}: give it two valid values in this test`);
    const commands = Object.keys(COMMAND_FLAGS).filter((command) =>
      COMMAND_FLAGS[command]!.includes(flag)
    );
    ok(commands.length > 0, `--${flag} is taken by no command`);
    for (const command of commands) {
      const [first, second] = values.map((value) => [`--${flag}`, value]);
      const args = [...base(command, flag), ...first!, ...second!];
      await t.step(args.join(" "), async () => {
        // Each value alone is taken: only the repeat is refused.
        for (const one of [first!, second!]) {
          plan([...base(command, flag), ...one]);
        }
        const sent = () => [api.tokenRequests, api.apiRequests];
        const before = sent();
        const result = await run([...args, "--no-cache"], configFor(api));
        equal(result.code, 2, result.stderr);
        equal(result.stdout, "");
        equal(result.stderr.split("\n").length, 2, result.stderr);
        deepStrictEqual(sent(), before, "no token and no list request");
      });
    }
  }
  // A boolean may be repeated (-v --verbose: nothing to choose between), not
  // contradicted (--cache --no-cache: which one was meant?).
  const verbose = plan(["list", "transactions", "-v", "--verbose", "-vv"]);
  ok(verbose.command === "list" && verbose.verbose);
  for (const flags of [["--cache", "--no-cache"], ["--no-verbose", "-v"]]) {
    const result = await run(
      ["list", "transactions", ...flags],
      configFor(api),
    );
    equal(result.code, 2, result.stderr);
    equal(result.stderr.split("\n").length, 2, result.stderr);
  }
  deepStrictEqual([api.tokenRequests, api.apiRequests], [0, 0]);
  await Deno.remove(folder, { recursive: true });
});

/** A cache folder of its own, and the run options that open it afresh each run, as a process would, on `clock`. */
async function cacheOn(clock: ManualClock) {
  await Deno.mkdir(".test-tmp", { recursive: true });
  const folder = await Deno.makeTempDir({ dir: ".test-tmp", prefix: "cli-" });
  const extra = {
    now: clock,
    openCache: (clientSecret: string, onNotice: (line: string) => void) => ({
      store: createFileTokenStore({
        folder,
        clientSecret,
        onNotice,
        now: clock,
      }),
    }),
  };
  return { folder, extra };
}
