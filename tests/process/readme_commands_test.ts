// Every command the README and docs/ show, run as written: each test is
// named after the section it checks. The `deno task cli` lines are read from
// the pages themselves, so a command added there is run here. Only the path
// of `.env` differs (the test writes under .test-tmp). Needs
// --allow-run=deno, --allow-net=127.0.0.1,
// --allow-read=README.md,docs,deno.json,.test-tmp and --allow-write=.test-tmp.

import { deepStrictEqual, equal, match, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import type { Run } from "../_cli_helpers.ts";
import { textOf } from "./_cli_process.ts";
import { Command, processTest } from "../_processes.ts";
import { cpuBoundTest } from "./_scaled_deadline.ts";

const FOLDER = ".test-tmp/readme-commands";
const ENV_FILE = `${FOLDER}/.env`;
/** The children's cache folder: never the user's own. */
const CHILD_ENV = { PARTNER_API_CACHE_DIR: `${FOLDER}/cache` };

/** The text of every `sh` block of a page. */
async function shellLines(file: string): Promise<string[]> {
  const text = await Deno.readTextFile(file);
  return [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)]
    .flatMap((block) => block[1]!.split("\n"))
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line !== "");
}

/** `VAR=value ... deno task name args` as environment and arguments. */
function parse(line: string): { env: Record<string, string>; args: string[] } {
  const words = line.split(/\s+/);
  const env: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(words[0]!)) {
    const [name, value] = words.shift()!.split("=");
    env[name!] = value!;
  }
  ok(words[0] === "deno", line);
  return { env, args: words.slice(1) };
}

/** Runs `deno` with `args`, in the test's cache folder; the output as text. */
async function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<Run> {
  return textOf(
    await new Command("deno", {
      args,
      env: { ...CHILD_ENV, ...env },
      stdout: "piped",
      stderr: "piped",
    }).output(),
  );
}

/**
 * A port nothing listens on now, nor on the one after it (the fake's card-data port), below the range the system hands
 * out to outgoing connections: a port from that range was taken between two starts of the fake, by a connection of a
 * test running beside (seen in CI: "port … or the one after it is in use").
 */
function freePort(): number {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const listeners: Deno.Listener[] = [];
    try {
      for (const at of [port, port + 1]) {
        listeners.push(Deno.listen({ hostname: "127.0.0.1", port: at }));
      }
      return port;
    } catch {
      // In use: another.
    } finally {
      for (const listener of listeners) listener.close();
    }
  }
}

/**
 * `deno task fake` as the README starts it, on `port`: its printed lines,
 * and a stop that ends it with Ctrl-C, as a user would.
 */
async function startFake(
  { env, args }: { env: Record<string, string>; args: string[] },
) {
  const child = new Command("deno", {
    args: ["task", "fake", ...args],
    env: { ...CHILD_ENV, ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // A line per request, e.g. "POST /oauth/token 200 (token requests: 1)".
  const log = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let printed = "";
  while (printed.split("\n").length <= 6) {
    const { value, done } = await reader.read();
    if (done) break;
    printed += value;
  }
  return {
    printed,
    async stop() {
      try {
        child.kill("SIGINT");
      } catch {
        // It ended already (seen once in CI, under load): its code and log below say why.
      }
      await reader.cancel();
      // 130 when Ctrl-C comes before the fake listens for it. Any other code
      // (seen once in CI) says what the fake printed, to tell why.
      const { code } = await child.status;
      ok([0, 130].includes(code), `exit code ${code}: ${await log}`);
      return await log;
    },
  };
}

/** The README's `deno task fake` line (its secret in the environment), on a port of the test's. */
async function readmeFake() {
  const line = (await shellLines("README.md"))
    .find((line) => /^([A-Z_]+=\S+ )*deno task fake/.test(line))!;
  const { env, args } = parse(line.replace(/\s*>.*$/, ""));
  const port = String(freePort());
  return { env, args: args.slice(2).map((a) => a === "8787" ? port : a) };
}

cpuBoundTest(
  "README › Getting started, docs/cli.md: every `deno task cli` line runs as written against `deno task fake`, and exits 0",
  async () => {
    // A cache of an earlier run would answer the first command.
    await Deno.remove(FOLDER, { recursive: true }).catch(() => {});
    await Deno.mkdir(FOLDER, { recursive: true });
    const fake = await startFake(await readmeFake());
    // An OAuth server that takes HTTP Basic only, for the line that says so.
    const basic = `Basic ${btoa("me:s3cret")}`;
    await using basicOnly = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (request) => {
        const body = await request.text();
        return request.headers.get("authorization") === basic &&
            !body.includes("s3cret")
          ? Response.json({
            access_token: "b",
            expires_in: 60,
            token_type: "Bearer",
          })
          : Response.json({ error: "invalid_client" }, { status: 401 });
      },
    );
    const basicTokenUrl = `http://127.0.0.1:${basicOnly.addr.port}/oauth/token`;
    try {
      await Deno.writeTextFile(ENV_FILE, fake.printed);
      const lines = [
        ...await shellLines("README.md"),
        ...await shellLines("docs/cli.md"),
      ].filter((line) => / deno task cli |^deno task cli /.test(` ${line}`));
      ok(lines.length >= 6, lines.join("\n"));
      for (const line of lines) {
        const { env, args } = parse(line);
        // The .env and a sync's copy live in the test's folder.
        const result = await run(
          args.map((arg) =>
            arg === ".env"
              ? ENV_FILE
              : /\.(db|jsonl)$/.test(arg)
              ? `${FOLDER}/${arg}`
              : arg
          ),
          env.PARTNER_API_CLIENT_AUTHENTICATION === "basic"
            ? { ...env, PARTNER_API_TOKEN_URL: basicTokenUrl }
            : env,
        );
        equal(result.code, 0, `${line}\n${result.stderr}`);
        if (args.includes("get")) match(result.stdout, /"cardholderID"/);
        if (args.includes("quota")) {
          match(result.stdout + result.stderr, /no token request/);
        }
        if (args.includes("list")) {
          ok(result.stdout.trim().split("\n").length >= 5, result.stdout);
        }
        if (args.includes("sync")) {
          const copy = args[args.indexOf("--to") + 1]!;
          ok(
            (await Deno.stat(`${FOLDER}/${copy}`)).size > 0,
            "the copy is there",
          );
        }
      }
    } finally {
      const log = await fake.stop();
      // The README: "The second command costs no token: the first one's is
      // cached". No line after the first spends one either.
      deepStrictEqual(
        [...log.matchAll(/^POST \/oauth\/token (\d+)/gm)].map((m) => m[1]),
        ["200"],
      );
    }
  },
);

processTest(
  "README › Getting started: the fake's .env survives a restart (the card-data port too)",
  async () => {
    const fake = await readmeFake();
    const first = await startFake(fake);
    await first.stop();
    const second = await startFake(fake);
    await second.stop();
    deepStrictEqual(second.printed, first.printed);
    match(first.printed, /PARTNER_API_PCI_BASE_URL=http:\/\/127\.0\.0\.1:\d+/);
  },
);

processTest(
  "docs/cli.md › Permissions: a mistyped variable is named under the task's narrow --allow-env",
  async () => {
    const result = await run(["task", "cli", "token"], {
      PARTNER_API_BASEURL: "http://127.0.0.1:1/api/",
    });
    equal(result.code, 2, result.stderr);
    match(
      result.stderr,
      /PARTNER_API_BASEURL is set: did you mean PARTNER_API_BASE_URL\?/,
    );
  },
);

processTest(
  "README › Install: the checkout import map resolves every export path to its file",
  async () => {
    const readme = await Deno.readTextFile("README.md");
    const block = /^```json\n([\s\S]*?)^```$/m.exec(readme)![1]!;
    const { imports } = JSON.parse(block) as {
      imports: Record<string, string>;
    };
    const { exports } = JSON.parse(await Deno.readTextFile("deno.json")) as {
      exports: Record<string, string>;
    };
    // Import map resolution: the exact key, else the longest key ending in
    // "/" that the specifier starts with.
    const resolve = (specifier: string): string | undefined => {
      if (Object.hasOwn(imports, specifier)) return imports[specifier];
      const prefix = Object.keys(imports)
        .filter((key) => key.endsWith("/") && specifier.startsWith(key))
        .sort((a, b) => b.length - a.length)[0];
      return prefix && imports[prefix] + specifier.slice(prefix.length);
    };
    const expected = Object.entries(exports).map((
      [path, file],
    ) => [
      `@partner-api/client${path.slice(1)}`,
      `../partner-api/${file.slice(2)}`,
    ]);
    deepStrictEqual(
      expected.map(([specifier]) => [specifier, resolve(specifier!)]),
      expected,
    );
    equal(expected.length, 14);
  },
);

/** docs/events.md's collector command, with the address given. */
async function observe(endpoint: string) {
  const text = await Deno.readTextFile("docs/events.md");
  const line = (await shellLines("docs/events.md")).find((line) =>
    line.includes("OTEL_EXPORTER_OTLP_ENDPOINT=")
  )!;
  ok(text.includes(line));
  const { env, args } = parse(
    line.replace(/OTEL_EXPORTER_OTLP_ENDPOINT=\S+/, ""),
  );
  return await run(args, { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
}

processTest(
  "docs/events.md › OpenTelemetry: OTEL_EXPORTER_OTLP_ENDPOINT sends to the collector; with none listening the run still ends well",
  async () => {
    const paths: string[] = [];
    await using collector = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (request) => {
        await request.body?.cancel();
        paths.push(new URL(request.url).pathname);
        return new Response(null, { status: 200 });
      },
    );
    const sent = await observe(`http://127.0.0.1:${collector.addr.port}`);
    equal(sent.code, 0, sent.stderr);
    ok(paths.includes("/v1/traces"), paths.join());
    ok(paths.includes("/v1/metrics"), paths.join());

    const dropped = await observe(`http://127.0.0.1:${freePort()}`);
    equal(dropped.code, 0, dropped.stderr);
    equal(dropped.stderr, "", "dropped without a word, as the page says");
  },
);

processTest(
  "README › What it costs: a refused token request is remembered across runs of `deno task cli` (4 runs, 1 request, under any load)",
  async () => {
    // Refused once (403) asking an hour: however slow the 4 runs, they come
    // within it (the 10 s default, clock driven: tests/cli_test.ts). Only
    // the first request is refused: a run that forgot would get a token.
    await using api = await startFakePartnerApi();
    api.injectTokenFaults({ kind: "status", status: 403, retryAfter: 3600 });
    const folder = `${FOLDER}/refused`;
    await Deno.remove(folder, { recursive: true }).catch(() => {});
    await Deno.mkdir(`${folder}/cache`, { recursive: true });
    const { environment: e, credentials: c } = api;
    await Deno.writeTextFile(
      `${folder}/.env`,
      `PARTNER_API_BASE_URL=${e.baseUrl.href}
PARTNER_API_PCI_BASE_URL=${e.pciBaseUrl.href}
PARTNER_API_TOKEN_URL=${e.tokenUrl.href}
PARTNER_API_AUDIENCE=${e.audience}
PARTNER_API_CLIENT_ID=${c.clientId}
PARTNER_API_CLIENT_SECRET=${c.clientSecret}
`,
    );
    for (let i = 0; i < 4; i++) {
      const result = await run(
        ["task", "cli", "token", "--env-file", `${folder}/.env`],
        { PARTNER_API_CACHE_DIR: `${folder}/cache` },
      );
      equal(result.code, 1, result.stderr);
    }
    equal(api.tokenRequests, 1);
  },
);

processTest(
  "README › Contents: every link between the README and docs/ reaches a file and a heading",
  async () => {
    const slug = (heading: string) =>
      heading.trim().toLowerCase().replace(/[^\w\- ]/g, "").replaceAll(
        " ",
        "-",
      );
    const pages = ["README.md"];
    for await (const entry of Deno.readDir("docs")) {
      if (entry.name.endsWith(".md")) pages.push(`docs/${entry.name}`);
    }
    const broken: string[] = [];
    for (const page of pages) {
      const text = await Deno.readTextFile(page);
      const folder = page.includes("/") ? "docs/" : "";
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue; // another site
        const [file, anchor] = target!.split("#");
        const path = file === ""
          ? page
          : new URL(file!, `file:///${folder}`).pathname.slice(1);
        const linked = await Deno.readTextFile(path).catch(() => undefined);
        const headings = [...(linked ?? "").matchAll(/^#+ (.+)$/gm)]
          .map((match) => slug(match[1]!));
        if (linked === undefined || (anchor && !headings.includes(anchor))) {
          broken.push(`${page}: ${target}`);
        }
      }
    }
    deepStrictEqual(broken, []);
  },
);
