// Issue 37, Node as a first-class user: `deno task build` writes a
// dist/package.json, so `npm install ./dist` in a Node project gives
// `import "@partner-api/client/sync"`; a script there gets a token, a page
// and a JSONL sync on Node 20 (the machine's) and Node 22 (npm's `node`
// package, pinned); and every entry's declarations check under
// tsc --strict with @types/node alone (no DOM lib, no skipLibCheck) for
// node16, nodenext and bundler resolution.
// Needs --allow-run=deno,node,npm and the Node 22 binary it installs.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { textOf } from "./_cli_process.ts";
import { Command, processTest } from "../_processes.ts";

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

async function run(command: string, args: string[], cwd = ".") {
  const result = textOf(
    await new Command(command, { args, cwd, stdout: "piped", stderr: "piped" })
      .output(),
  );
  return { code: result.code, out: result.stdout, err: result.stderr };
}

/** The project: dist/ installed by npm, and a script that uses it. */
async function project(): Promise<void> {
  await Deno.remove(PROJECT, { recursive: true }).catch(() => {});
  await Deno.mkdir(PROJECT, { recursive: true });
  await Deno.writeTextFile(
    `${PROJECT}/package.json`,
    '{ "name": "a-partner", "private": true, "type": "module" }\n',
  );
  const install = await run("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
    await Deno.realPath("dist"),
  ], PROJECT);
  equal(install.code, 0, install.err);
  await Deno.writeTextFile(`${PROJECT}/main.mjs`, SCRIPT);
}

/** A token, a page and a JSONL sync, by package name, against the fake on node:http. */
const SCRIPT = `import { createServer } from "node:http";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@partner-api/client";
import { createFakePartnerService } from "@partner-api/client/testing";
import { createJsonlSink, syncList } from "@partner-api/client/sync";

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
const client = createClient({
  environment: service.environmentAt(at(main), at(pci)),
  ...service.credentials,
});
const token = await client.tokenProvider.getToken();
let page;
for await (const first of client.pages("transactions", { limit: 50 })) {
  page = first; // Node 20 has no Array.fromAsync
  break;
}
const file = join(mkdtempSync(join(tmpdir(), "partner-api-")), "copy.jsonl");
const synced = await syncList(client, "transactions", { id: "transactionID", sink: createJsonlSink(file) });
const lines = readFileSync(file, "utf8").trim().split("\\n").length;
console.log(JSON.stringify({
  node: process.versions.node.split(".")[0],
  token: token.expiresIn > 0,
  page: page.items.length,
  inserted: synced.inserted ?? synced.written,
  lines,
  tokenRequests: service.tokenRequests,
}));
service.close();
for (const server of [main, pci]) {
  server.close();
  server.closeAllConnections();
}
`;

/** Node 22 from npm's `node` package, pinned, once per checkout. */
async function node22(): Promise<string> {
  const found = await Deno.stat(NODE22).then(() => true, () => false);
  if (!found) {
    await Deno.mkdir(".test-tmp/node22", { recursive: true });
    const install = await run("npm", [
      "install",
      "--no-save",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      "--prefix",
      ".test-tmp/node22",
      `node@${NODE22_VERSION}`,
    ]);
    equal(install.code, 0, install.err);
  }
  return NODE22;
}

processTest(
  "npm install ./dist, then a token, a page and a JSONL sync by package name on Node 20 and Node 22",
  async () => {
    const build = await run("deno", ["task", "build"]);
    equal(build.code, 0, build.err);
    const manifest = JSON.parse(await Deno.readTextFile("dist/package.json"));
    equal(manifest.name, name);
    equal(manifest.version, version);
    deepStrictEqual(
      Object.keys(manifest.exports).sort(),
      [
        ...Object.keys(exports),
        "./package.json",
      ].sort(),
    );
    for (const [path, target] of Object.entries(manifest.exports)) {
      if (path === "./package.json") continue;
      deepStrictEqual(Object.keys(target as object), ["types", "default"]);
    }
    ok(manifest.engines.node);
    equal(manifest.sideEffects, false);
    await project();
    const majors: string[] = [];
    for (const node of ["node", await node22()]) {
      const result = await run(await Deno.realPath(node).catch(() => node), [
        "main.mjs",
      ], PROJECT);
      equal(result.code, 0, `${node}: ${result.err}`);
      const said = JSON.parse(result.out);
      majors.push(said.node);
      deepStrictEqual(
        { ...said, node: undefined },
        {
          node: undefined,
          token: true,
          page: 50,
          inserted: 120,
          lines: 120,
          tokenRequests: 1,
        },
      );
    }
    equal(majors[1], "22", "npm's node package");
    ok(Number(majors[0]) >= 20, `the machine's node: ${majors[0]}`);
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

processTest(
  "every entry's declarations check by package name under tsc --strict with @types/node alone: node16, nodenext, bundler",
  async () => {
    if (!(await Deno.stat(`${PROJECT}/node_modules/${name}`).catch(() => 0))) {
      const build = await run("deno", ["task", "build"]);
      equal(build.code, 0, build.err);
      await project();
    }
    await Deno.writeTextFile(`${PROJECT}/consumer.ts`, CONSUMER);
    for (
      const [module, resolution] of [
        ["node16", "node16"],
        ["nodenext", "nodenext"],
        ["esnext", "bundler"],
      ]
    ) {
      const checked = await run("deno", [
        "run",
        "--allow-read",
        "--allow-env",
        `${imports.typescript}/tsc`,
        "--strict",
        "--noEmit",
        ...["--lib", "es2022", "--types", "node", "--target", "es2022"],
        ...["--module", module!, "--moduleResolution", resolution!],
        `${PROJECT}/consumer.ts`,
      ]);
      deepStrictEqual(
        [checked.code, checked.out + checked.err],
        [0, ""],
        resolution,
      );
    }
  },
);
