// The CLI as a person meets it: repeated runs on the token cache, and a real
// terminal (a pseudo-terminal from util-linux `script`). Needs
// --allow-run=deno,script and read/write on .test-tmp.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { cli } from "./_cli_process.ts";
import { Command, processTest } from "../_processes.ts";

const NET = "--allow-net=127.0.0.1";
const ENV = "--allow-env=PARTNER_API_*";

/** A fresh cache folder under .test-tmp, and the flags that allow it. */
async function cacheFolder() {
  const folder = `.test-tmp/cli-cache-${crypto.randomUUID()}`;
  await Deno.mkdir(folder, { recursive: true });
  return {
    folder,
    flags: [`--allow-read=${folder}`, `--allow-write=${folder}`],
    async [Symbol.asyncDispose]() {
      await Deno.remove(folder, { recursive: true });
    },
  };
}

/** Runs the CLI on a pseudo-terminal: stdout and stderr are one screen. */
async function onTerminal(
  flags: string[],
  args: string[],
  env: Record<string, string>,
) {
  const command = ["deno", "run", ...flags, "src/cli/mod.ts", ...args]
    .map((word) => `'${word}'`).join(" ");
  const output = await new Command("script", {
    args: ["-qec", command, "/dev/null"],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: output.code,
    screen: new TextDecoder().decode(output.stdout).replaceAll("\r\n", "\n"),
  };
}

processTest(
  "three runs cost one token request; quota then answers from the cache",
  async () => {
    await using api = await startFakePartnerApi({ quota: { perHour: 2 } });
    await using cache = await cacheFolder();
    const env = { ...configFor(api), PARTNER_API_CACHE_DIR: cache.folder };
    const flags = [NET, ENV, ...cache.flags];
    for (let run = 1; run <= 3; run++) {
      const result = await cli(flags, ["token"], env);
      equal(result.code, 0, result.stderr);
      ok(
        result.stdout.includes(
          run === 1 ? "1 token request" : "cached: no token request",
        ),
      );
    }
    const quota = await cli(flags, ["quota"], env);
    equal(quota.code, 0, quota.stderr);
    ok(quota.stdout.includes("per_hour"), quota.stdout);
    ok(quota.stderr.includes("from the cache: no token request"), quota.stderr);
    const list = await cli(
      flags,
      ["list", "transactions", "--max-items", "3"],
      env,
    );
    equal(list.code, 0, list.stderr);
    equal(api.tokenRequests, 1, "one token for three runs, a quota and a list");
    const files = await Array.fromAsync(Deno.readDir(cache.folder));
    equal(files.length, 1);
    const stored = await Deno.readFile(`${cache.folder}/${files[0]!.name}`);
    const text = new TextDecoder().decode(stored);
    ok(
      !text.includes("per_hour") && !text.includes("expiresAt"),
      "encrypted at rest",
    );
  },
);

processTest(
  "a changed secret never gets the token another secret paid for",
  async () => {
    await using api = await startFakePartnerApi();
    await using cache = await cacheFolder();
    const env = { ...configFor(api), PARTNER_API_CACHE_DIR: cache.folder };
    const flags = [NET, ENV, ...cache.flags];
    equal((await cli(flags, ["token"], env)).code, 0);
    const changed = await cli(flags, ["token"], {
      ...env,
      PARTNER_API_CLIENT_SECRET: "a-different-secret",
    });
    equal(
      changed.code,
      1,
      "it asked, and the service refused the wrong secret",
    );
    equal(api.tokenRequests, 2);
    ok(!changed.stderr.includes("a-different-secret"));
  },
);

processTest(
  "without permission on the cache folder it runs uncached, says so once, never prompts",
  async () => {
    await using api = await startFakePartnerApi();
    const env = {
      ...configFor(api),
      PARTNER_API_CACHE_DIR: "/tmp/partner-api-not-allowed",
    };
    // On a terminal Deno would prompt for a permission it lacks: it must not.
    const { code, screen } = await onTerminal([NET, ENV], ["token"], env);
    equal(code, 0, screen);
    equal(screen.split("running without the token cache").length, 2, screen);
    ok(!/Allow\?|Requires read access/.test(screen), screen);
    ok(screen.includes("token valid until"));
  },
);

/** Three pages of service data with every kind of control character in it. */
function hostilePages(api: Awaited<ReturnType<typeof startFakePartnerApi>>) {
  const page = (n: number) =>
    JSON.stringify({
      transactions: Array.from({ length: 5 }, (_, i) => ({
        transactionID: `tx_${n}${i}`,
        note: `osc52 \u001b]52;c;SGVsbG8=\u0007 csi \u009b31m bidi \u202e end`,
      })),
    });
  api.injectApiFaults(
    { kind: "body", body: page(1) },
    { kind: "body", body: page(2) },
    { kind: "body", body: page(3) },
  );
}

processTest(
  "on a terminal: one table header over three pages, and no raw control characters",
  async (t) => {
    await using api = await startFakePartnerApi();
    const env = configFor(api);
    const args = [
      "list",
      "transactions",
      "--limit",
      "5",
      "--max-items",
      "15",
      "--no-cache",
    ];
    for (const format of ["table", "jsonl", "json"]) {
      await t.step(format, async () => {
        hostilePages(api);
        const { code, screen } = await onTerminal(
          [NET, ENV],
          [...args, "--format", format],
          env,
        );
        equal(code, 0, screen);
        // Only the tool's own progress sequences may reach the terminal.
        const raw = screen.replaceAll("\r\u001b[K", "");
        ok(
          // deno-lint-ignore no-control-regex
          !/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/.test(raw),
          JSON.stringify(raw),
        );
        ok(raw.includes("\\u001b]52"), "shown escaped");
        if (format === "table") {
          equal(raw.split("transactionID").length, 2, "one header");
          equal(raw.split("tx_").length - 1, 15);
        }
        ok(/3 pages, 15 items/.test(raw), raw);
        if (format === "json") {
          // The array is whole on screen: the count comes after it closes.
          const array = raw.slice(raw.indexOf("["), raw.lastIndexOf("]") + 1);
          ok(!array.includes("items/s"), raw);
          equal(JSON.parse(array.replaceAll("\r\n", "\n")).length, 15);
        }
        ok(
          !raw.includes("pages, 0 items"),
          "no progress before the first page",
        );
      });
    }
  },
);

processTest(
  "service failures exit 1 and bad flags exit 2, one line each",
  async () => {
    await using api = await startFakePartnerApi();
    const env = configFor(api);
    api.injectApiFaults({ kind: "body", body: "[1, 2" }, {
      kind: "body",
      body: "[1, 2",
    }, {
      kind: "body",
      body: "[1, 2",
    });
    const shape = await cli(
      [NET, ENV],
      ["list", "transactions", "--no-cache"],
      env,
    );
    equal(shape.code, 1, shape.stderr);
    equal(shape.stderr.trim().split("\n").length, 1, shape.stderr);
    const absurd = { ...env };
    const flag = await cli([NET, ENV], [
      "list",
      "transactions",
      "--concurrency",
      "2000000",
    ], absurd);
    equal(flag.code, 2);
    equal(flag.stderr.trim().split("\n").length, 1);
    const missing = await cli([NET, ENV], ["token"], {});
    equal(missing.code, 2);
    for (
      const name of [
        "BASE_URL",
        "PCI_BASE_URL",
        "TOKEN_URL",
        "AUDIENCE",
        "CLIENT_ID",
        "CLIENT_SECRET",
      ]
    ) {
      ok(missing.stderr.includes(`PARTNER_API_${name}`), missing.stderr);
    }
    const pasted = await cli([NET, ENV], ["token", "--no-cache"], {
      ...env,
      PARTNER_API_TOKEN_URL: env.PARTNER_API_CLIENT_SECRET!,
    });
    equal(pasted.code, 2);
    ok(!pasted.stderr.includes(env.PARTNER_API_CLIENT_SECRET!), pasted.stderr);
  },
);

processTest(
  "on a terminal, `get` shows one resource as indented JSON; a 404 is one line and exit 1",
  async () => {
    await using api = await startFakePartnerApi({
      items: { organizations: 2 },
    });
    const env = configFor(api);
    const shown = await onTerminal(
      [NET, ENV],
      ["get", "organizations?limit=1", "--no-cache"],
      env,
    );
    equal(shown.code, 0, shown.screen);
    const body = JSON.parse(shown.screen);
    equal(body.organizations.length, 1);
    ok(
      shown.screen.includes('\n  "organizations": [\n'),
      "indented for a person",
    );
    const missing = await onTerminal(
      [NET, ENV],
      ["get", "nothing/here", "--no-cache"],
      env,
    );
    equal(missing.code, 1);
    equal(missing.screen.trim().split("\n").length, 1, missing.screen);
    ok(missing.screen.includes("404"));
  },
);
