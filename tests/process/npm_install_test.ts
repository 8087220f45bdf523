// Issue 37, Node as a first-class user, and issue 46, every entry on Node
// 20+. README › Install: `deno task build` as written, and the README's
// Node line; what a Node TypeScript user does with dist/ (tsc --strict with
// @types/node, no Deno types, over a file that imports every entry but the
// Deno-only ./kv). The build's dist/package.json: the test packs dist/ as
// npm publishes it (`npm pack`) and installs the tarball, with
// `@opentelemetry/api` beside it, into an npm project, as from a registry.
// There, on Node 20 (the machine's) and Node 22 (npm's `node` package,
// pinned): every entry imports by package name,
// and each Deno-only function (`./kv`'s, the file store's,
// `startFakePartnerApi`, `./cli`'s `main`) says so when called (a TypeError, not at import);
// a script gets a token for three clients sharing a memory store, a page
// and a JSONL sync; and every entry's
// declarations check under tsc --strict with @types/node alone (no DOM lib,
// no skipLibCheck) for node16, nodenext and bundler resolution.
// Every test that reads dist/ is here, on one build of this file's run:
// test files run side by side (`deno test --parallel`), and a second file
// building dist/ at the same time would read half-written files.
// Needs --allow-run=deno,node,npm and the Node 22 binary it installs,
// --allow-read=deno.json,docs,dist,.test-tmp, --allow-write=.test-tmp and
// --allow-sys=loadavg (the tests' deadline scales with the load).

import { deepStrictEqual, equal, match, ok } from "node:assert/strict";
import { textOf } from "./_cli_process.ts";
import { cpuBoundTest } from "./_scaled_deadline.ts";
import { Command } from "../_processes.ts";

const { exports, imports, name, version } = JSON.parse(
  await Deno.readTextFile("deno.json"),
) as {
  exports: Record<string, string>;
  imports: Record<string, string>;
  name: string;
  version: string;
};
const PROJECT = ".test-tmp/npm-project";
const NODE22_VERSION = "22.23.3";
const NODE22 = ".test-tmp/node22/node_modules/node/bin/node";
/** npm, quietly: errors only. */
const QUIET = ["--no-audit", "--no-fund", "--loglevel=error"];
const OTEL = imports["@opentelemetry/api"]!.replace(/^npm:/, "");
/** Every entry by package name, the CLI's too (its `main` takes an `io` off Deno). */
const FOR_NODE = Object.keys(exports)
  .map((path) => path === "." ? name : `${name}/${path.slice(2)}`);

async function run(command: string, args: string[], cwd = ".") {
  const result = textOf(
    await new Command(command, { args, cwd, stdout: "piped", stderr: "piped" })
      .output(),
  );
  return { code: result.code, out: result.stdout, err: result.stderr };
}

let built: Promise<void> | undefined;
let installed: Promise<void> | undefined;

/** dist/ of this run: `deno task build` as the README writes it, once. */
function builtDist(): Promise<void> {
  return built ??= run("deno", ["task", "build"]).then((build) =>
    equal(build.code, 0, build.out + build.err)
  );
}

/** The project of this run (built, packed and installed once). */
function installedProject(): Promise<void> {
  return installed ??= builtDist().then(project);
}

/**
 * `npm pack` of dist/, and a fresh npm project with the tarball and
 * `@opentelemetry/api` installed, as from a registry.
 */
async function project(): Promise<void> {
  await Deno.remove(PROJECT, { recursive: true }).catch(() => {});
  await Deno.mkdir(PROJECT, { recursive: true });
  await Deno.writeTextFile(
    `${PROJECT}/package.json`,
    '{ "name": "a-partner", "private": true, "type": "module" }\n',
  );
  const pack = await run("npm", [
    "pack",
    "--json",
    ...QUIET,
    "--pack-destination",
    ".",
    await Deno.realPath("dist"),
  ], PROJECT);
  equal(pack.code, 0, pack.err);
  const [{ filename }] = JSON.parse(pack.out) as [{ filename: string }];
  const install = await run("npm", [
    "install",
    ...QUIET,
    `./${filename}`,
    OTEL,
  ], PROJECT);
  equal(install.code, 0, install.err);
  await Deno.writeTextFile(`${PROJECT}/main.mjs`, SCRIPT);
  await Deno.writeTextFile(`${PROJECT}/entries.mjs`, ENTRIES);
}

/** Node 22 from npm's `node` package, pinned, once per checkout. */
async function node22(): Promise<string> {
  const found = await Deno.stat(NODE22).then(() => true, () => false);
  if (!found) {
    await Deno.mkdir(".test-tmp/node22", { recursive: true });
    const install = await run("npm", [
      "install",
      "--no-save",
      ...QUIET,
      "--prefix",
      ".test-tmp/node22",
      `node@${NODE22_VERSION}`,
    ]);
    equal(install.code, 0, install.err);
  }
  return NODE22;
}

/**
 * Runs `script` of the project on Node 20 (the machine's) and Node 22;
 * what each printed, as JSON, after checking which Node ran it.
 */
async function onEachNode(script: string): Promise<unknown[]> {
  const said: unknown[] = [];
  const majors: string[] = [];
  for (const node of ["node", await node22()]) {
    const result = await run(await Deno.realPath(node).catch(() => node), [
      script,
    ], PROJECT);
    equal(result.code, 0, `${node}: ${result.err}`);
    const { node: major, ...rest } = JSON.parse(result.out);
    majors.push(major);
    said.push(rest);
  }
  equal(majors[1], "22", "npm's node package");
  ok(Number(majors[0]) >= 20, `the machine's node: ${majors[0]}`);
  return said;
}

/**
 * Imports every entry by package name: for each, "loaded" or
 * the error; what `./kv`'s two functions throw when used outside Deno
 * (given an object that looks like a KV database); and what the other
 * Deno-only functions throw when called with good arguments, and whether
 * the file store touched its folder first.
 */
const ENTRIES = `import { existsSync } from "node:fs";
import { createRequire } from "node:module";
const imported = {}, required = {};
// From CommonJS too, as README › Install says: Node 20.19+ and 22.12+ require ES modules.
const require = createRequire(import.meta.url);
for (const name of ${JSON.stringify(FOR_NODE)}) {
  imported[name] = await import(name).then(
    (module) => Object.keys(module).length > 0 ? "loaded" : "empty",
    (error) => \`\${error.name}: \${error.message}\`,
  );
  try {
    required[name] = Object.keys(require(name)).length > 0 ? "loaded" : "empty";
  } catch (error) {
    required[name] = \`\${error.code ?? error.name}: \${error.message}\`;
  }
}
const kv = await import("${name}/kv");
const used = [kv.createKvTokenStore, kv.createKvRateLimiter].map((create) => {
  try {
    create({ atomic() {} });
    return "no error";
  } catch (error) {
    return { name: error.name, option: error.option, denoOnly: /Deno.*only/.test(error.rule) };
  }
});
const { createFileTokenStore, clearFileTokenStore } = await import("${name}/store");
const { startFakePartnerApi } = await import("${name}/testing");
const folder = "node-file-store";
const calls = {
  createFileTokenStore: () => createFileTokenStore({ folder, clientSecret: "s".repeat(40) }),
  clearFileTokenStore: () => clearFileTokenStore(folder),
  startFakePartnerApi: () => startFakePartnerApi(),
  main: async () => (await import("${name}/cli")).main(["token"]),
};
const denoOnly = {};
for (const [called, call] of Object.entries(calls)) {
  try {
    await call();
    denoOnly[called] = "no error";
  } catch (error) {
    denoOnly[called] = { name: error.name, option: error.option };
  }
}
denoOnly.folderMade = existsSync(folder);
// main with an io of the caller's: an env file and a sync's folder check need Deno's file API, and say so or step aside.
const { main } = await import("${name}/cli");
const cli = async (args, env = {}) => {
  let said = "";
  const io = {
    env: (name) => env[name],
    stdout: { isTerminal: false, write() {} },
    stderr: { isTerminal: false, write: (text) => void (said += text) },
  };
  return { code: await main(args, io), said };
};
const envFile = await cli(["token", "--env-file", "x.env"]);
denoOnly.envFile = { code: envFile.code, named: /off Deno/.test(envFile.said) };
const nowhere = {
  PARTNER_API_BASE_URL: "http://127.0.0.1:9/api/",
  PARTNER_API_PCI_BASE_URL: "http://127.0.0.1:9/pci/",
  PARTNER_API_TOKEN_URL: "http://127.0.0.1:9/token",
  PARTNER_API_AUDIENCE: "https://partner-api.test",
  PARTNER_API_CLIENT_ID: "client",
  PARTNER_API_CLIENT_SECRET: "s".repeat(40),
};
const sync = await cli(["sync", "transactions", "--to", "off-deno.jsonl", "--no-cache"], nowhere);
denoOnly.sync = { code: sync.code, token: /Cannot (request|get) token/.test(sync.said) };
console.log(JSON.stringify({ node: process.versions.node.split(".")[0], imported, required, used, denoOnly }));
`;

/** A token, a page and a JSONL sync, by package name, against the fake on node:http. */
const SCRIPT = `import { createServer } from "node:http";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@partner-api/client";
import { createFakePartnerService } from "@partner-api/client/testing";
import { createJsonlSink, syncList } from "@partner-api/client/sync";
import { createMemoryTokenStore } from "@partner-api/client/store";
import { ApiError, PartnerApiError } from "@partner-api/client/errors";
import { ApiError as RootApiError } from "@partner-api/client";

function listen(handle) {
  const server = createServer(async (incoming, outgoing) => {
    const chunks = [];
    for await (const chunk of incoming) chunks.push(chunk);
    const body = incoming.method === "POST" ? { body: Buffer.concat(chunks) } : {};
    const response = await handle(new Request("http://" + incoming.headers.host + incoming.url, {
      method: incoming.method,
      headers: Object.entries(incoming.headers),
      ...body,
    }));
    outgoing.writeHead(response.status, Object.fromEntries(response.headers));
    outgoing.end(Buffer.from(await response.arrayBuffer()));
  });
  return new Promise((done) => server.listen(0, "127.0.0.1", () => done(server)));
}

const service = createFakePartnerService({ items: { transactions: 120 } });
const main = await listen(service.handle);
const pci = await listen(service.handlePci);
const at = (server) => "http://127.0.0.1:" + server.address().port;
// Three clients of one process share a token through the memory store.
const store = createMemoryTokenStore();
const [client, ...others] = [1, 2, 3].map(() => createClient({
  environment: service.environmentAt(at(main), at(pci)),
  ...service.credentials,
  store,
}));
const token = await client.tokenProvider.getToken();
const shared = await Promise.all(others.map((other) => other.tokenProvider.getToken()));
let page;
for await (const first of client.pages("transactions", { limit: 50 })) {
  page = first; // Node 20 has no Array.fromAsync
  break;
}
const file = join(mkdtempSync(join(tmpdir(), "partner-api-")), "copy.jsonl");
const synced = await syncList(client, "transactions", { id: "transactionID", sink: createJsonlSink(file) });
const lines = readFileSync(file, "utf8").trim().split("\\n").length;
// One class through every entry that exports it (bundled apart, each entry had its own: no instanceof held).
const failure = await client.pages("nope", { limit: 1 }).next().catch((error) => error);
const classes = [ApiError, RootApiError, PartnerApiError];
console.log(JSON.stringify({
  node: process.versions.node.split(".")[0],
  token: token.expiresIn > 0,
  shared: shared.every((other) => other.accessToken === token.accessToken),
  page: page.items.length,
  inserted: synced.inserted ?? synced.written,
  lines,
  tokenRequests: service.tokenRequests,
  sameClasses: classes.map((type) => failure instanceof type),
}));
service.close();
for (const server of [main, pci]) {
  server.close();
  server.closeAllConnections();
}
`;

/** tsc --strict --noEmit, as a Node project runs it, with `options` over `files`. */
function tsc(options: string[], files: string[]) {
  return run("deno", [
    "run",
    "--allow-read",
    "--allow-env",
    `${imports.typescript}/tsc`,
    "--strict",
    "--noEmit",
    ...options,
    ...files,
  ]);
}

/** dist/'s file name of every entry: "." is partner-api, "./otel" otel. */
const DIST_NAMES = Object.keys(exports).map((path) =>
  path === "." ? "partner-api" : path.slice(2)
);
/** The bundle's chunks under `folder`, at any depth. */
async function* chunkPaths(folder: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(folder)) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory) yield* chunkPaths(path);
    else if (path.endsWith(".js")) yield path;
  }
}

/** ./kv takes a `Deno.Kv`: a Deno-only entry, like its bundle. */
const DIST_FOR_NODE = DIST_NAMES.filter((file) => file !== "kv");

cpuBoundTest(
  "README › Install: `deno task build` writes .mjs and .d.ts for every entry, and the README's Node line loads the root",
  async () => {
    await builtDist();
    for (const name of DIST_NAMES) {
      await Deno.stat(`dist/${name}.mjs`);
      await Deno.stat(`dist/${name}.d.ts`);
    }
    // No chunk runs the CLI as a program: a bundler inlining one gives
    // `import.meta.main` the user's program's value (r75 F1: esbuild ran the
    // tool on the user's arguments; a Worker failed to load).
    const paths = await Array.fromAsync(chunkPaths("dist/lib"));
    ok(paths.some((path) => path.endsWith("/cli/mod.js")), String(paths));
    for (const path of paths) {
      const code = await Deno.readTextFile(path);
      ok(!code.includes("import.meta.main"), path);
    }

    // The README's own Node line, as written.
    const node = await run("node", [
      "-e",
      'import("./dist/partner-api.mjs").then((m) => console.log(Object.keys(m).length))',
    ]);
    equal(node.code, 0, node.err);
    ok(Number(node.out.trim()) > 10, node.out);
  },
);

// Every entry for Node by its path in dist/, and a use of the names a Node
// user reaches for first.
const DIST_CONSUMER = `${
  DIST_FOR_NODE.map((file, i) =>
    `import * as m${i} from "../../dist/${file}.mjs";`
  ).join("\n")
}
import { createClient } from "../../dist/partner-api.mjs";
import { createFakePartnerService } from "../../dist/testing.mjs";
import { openTelemetry } from "../../dist/otel.mjs";
import { syncList } from "../../dist/sync.mjs";

const service = createFakePartnerService();
const client = createClient({
  environment: service.environmentAt("http://127.0.0.1:1", "http://127.0.0.1:2"),
  ...service.credentials,
  onEvent: openTelemetry(),
});
const left: number | undefined = client.tokenProvider.quota?.buckets[0]?.remaining;
export const used = [left, syncList, ${
  DIST_FOR_NODE.map((_, i) => `m${i}`).join(", ")
}];
`;

cpuBoundTest(
  "README › Install: a Node TypeScript consumer of dist/ type-checks with tsc --strict, and a wrong call is caught",
  async () => {
    await builtDist();
    const folder = ".test-tmp/node-consumer";
    await Deno.mkdir(folder, { recursive: true });
    await Deno.writeTextFile(
      `${folder}/package.json`,
      '{ "type": "module" }\n',
    );
    await Deno.writeTextFile(`${folder}/main.ts`, DIST_CONSUMER);
    await Deno.writeTextFile(
      `${folder}/wrong.ts`,
      `import { createClient } from "../../dist/partner-api.mjs";
createClient({ environment: "https://partner.example/api/", clientId: 1 });
`,
    );
    // One program of both files (one tsc start, one read of @types/node):
    // tsc reports each error under its file, so main.ts is clean when every
    // error is wrong.ts's.
    const checked = await tsc([
      ...["--module", "nodenext", "--moduleResolution", "nodenext"],
      ...["--target", "es2022", "--types", "node"],
    ], [`${folder}/main.ts`, `${folder}/wrong.ts`]);
    const out = checked.out + checked.err;
    equal(checked.code, 2, out);
    match(out, /wrong\.ts\(2,\d+\): error TS2322/);
    deepStrictEqual(
      out.split("\n").filter((line) =>
        /^\S/.test(line) && !line.startsWith(`${folder}/wrong.ts(`)
      ),
      [],
    );
  },
);

cpuBoundTest(
  "deno task build, npm pack of dist/ and npm install of the tarball: a package.json naming every entry with its types",
  async () => {
    await installedProject();
    const manifest = JSON.parse(await Deno.readTextFile("dist/package.json"));
    equal(manifest.name, name);
    equal(manifest.version, version);
    deepStrictEqual(
      Object.keys(manifest.exports).sort(),
      [...Object.keys(exports), "./package.json"].sort(),
    );
    for (const [path, target] of Object.entries(manifest.exports)) {
      if (path === "./package.json") continue;
      deepStrictEqual(Object.keys(target as object), ["types", "default"]);
    }
    // Node 20.0 to 20.2 lack AbortSignal.any, which every request takes.
    equal(manifest.engines.node, ">=20.3");
    equal(manifest.sideEffects, false);
    // Installed from the tarball: a copy, not a link to dist/.
    const copy = await Deno.lstat(`${PROJECT}/node_modules/${name}`);
    equal(copy.isSymlink, false);
  },
);

cpuBoundTest(
  "every entry imports and requires by package name on Node 20 and Node 22, and each Deno-only function (./kv, the file store, startFakePartnerApi, ./cli's main without an io) says so when called",
  async () => {
    await installedProject();
    const loaded = Object.fromEntries(
      FOR_NODE.map((entry) => [entry, "loaded"]),
    );
    const expected = {
      imported: loaded,
      required: loaded,
      used: Array(2).fill({ name: "TypeError", option: "kv", denoOnly: true }),
      // Refused at the call, before any file or socket: an option error
      // naming what the runtime cannot serve.
      denoOnly: {
        createFileTokenStore: { name: "TypeError", option: "folder" },
        clearFileTokenStore: { name: "TypeError", option: "folder" },
        startFakePartnerApi: { name: "TypeError", option: "port" },
        main: { name: "TypeError", option: "io" },
        folderMade: false,
        // "Deno is not defined" (exit 1 for the env file, and for sync before any request) before.
        envFile: { code: 2, named: true },
        sync: { code: 1, token: true },
      },
    };
    deepStrictEqual(await onEachNode("entries.mjs"), [expected, expected]);
  },
);

cpuBoundTest(
  "a token shared by three clients through a memory store, a page and a JSONL sync by package name on Node 20 and Node 22",
  async () => {
    await installedProject();
    const expected = {
      token: true,
      shared: true,
      page: 50,
      inserted: 120,
      lines: 120,
      tokenRequests: 1,
      sameClasses: [true, true, true],
    };
    deepStrictEqual(await onEachNode("main.mjs"), [expected, expected]);
  },
);

/** A file that imports every entry by package name and uses a few names. */
const CONSUMER = `${
  Object.keys(exports).map((path, i) =>
    `import * as m${i} from "${
      path === "." ? name : `${name}/${path.slice(2)}`
    }";`
  ).join("\n")
}
import { createClient, type Page } from "${name}";
import { createFakePartnerService } from "${name}/testing";

const service = createFakePartnerService();
const client = createClient({
  environment: service.environmentAt("http://127.0.0.1:1", "http://127.0.0.1:2"),
  ...service.credentials,
});
export const pages: AsyncIterable<Page<{ id: string }>> = client.pages("x");
export const all = [${Object.keys(exports).map((_, i) => `m${i}`).join(", ")}];
`;

cpuBoundTest(
  "every entry's declarations check by package name under tsc --strict with @types/node alone: node16, nodenext, bundler",
  async () => {
    await installedProject();
    await Deno.writeTextFile(`${PROJECT}/consumer.ts`, CONSUMER);
    for (
      const [module, resolution] of [
        ["node16", "node16"],
        ["nodenext", "nodenext"],
        ["esnext", "bundler"],
      ]
    ) {
      const checked = await tsc([
        ...["--lib", "es2022", "--types", "node", "--target", "es2022"],
        ...["--module", module!, "--moduleResolution", resolution!],
      ], [`${PROJECT}/consumer.ts`]);
      deepStrictEqual(
        [checked.code, checked.out + checked.err],
        [0, ""],
        resolution,
      );
    }
  },
);

Deno.test("docs/runtimes.md says what every entry needs: one row per export path", async () => {
  const text = await Deno.readTextFile("docs/runtimes.md");
  const table = text.slice(text.indexOf("## What each entry needs"));
  const named = table.split("\n")
    .filter((line) => line.startsWith("| `"))
    .flatMap((line) =>
      [...line.split("|")[1]!.matchAll(/`([^`]+)`/g)].map((match) => match[1])
    );
  deepStrictEqual(named.sort(), Object.keys(exports).sort());
});
