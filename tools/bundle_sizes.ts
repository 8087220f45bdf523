// `deno task bundle-sizes` (and `deno task bench`): the bytes a user ships
// for one function, as their bundler would build it. Each consumer imports
// one function from its subpath (and, for comparison, from the root), is
// bundled by esbuild from npm (minified, ESM, browser platform) and gzipped
// at level 9; beside them, the peers a user would pick for the same job:
// oauth4webapi's client-credentials grant and ky.
//
// Goals (DESIGN.md, "Performance": no growth), from their subpaths:
// parseQuotaHeader at most 700 bytes, paginate 2,000, the token provider
// 12,500 and createClient 19,000. Prints a table; `--check` exits 1 when a
// goal is missed.
//
// Needs --allow-run (npm and the esbuild it installs), --allow-read=. and
// --allow-write=.test-tmp/bundle.

import { gzipSync } from "node:zlib";

const DIR = ".test-tmp/bundle";
const PINNED = ["esbuild@0.28.2", "oauth4webapi@3.8.8", "ky@2.1.0"];

interface Consumer {
  name: string;
  /** The module's source: one import, one use that keeps it. */
  source: string;
  goal?: number;
}

const root = new URL("../", import.meta.url).pathname;
const entry = (path: string) => `${root}${path}`;

const CONSUMERS: (Consumer | Consumer[])[] = [
  one("parseQuotaHeader", "src/core/quota.ts", "mod.ts", 700),
  one("paginate", "src/client/paginate.ts", "mod.ts", 2_000),
  one("createTokenProvider", "src/token/mod.ts", "mod.ts", 12_500),
  one("createClient", "src/client/mod.ts", "mod.ts", 19_000),
  {
    name: "oauth4webapi: client-credentials grant",
    source: `import * as oauth from "oauth4webapi";
export async function token(issuer, id, secret) {
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer));
  const client = { client_id: id };
  const response = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretPost(secret), new URLSearchParams());
  return await oauth.processClientCredentialsResponse(as, client, response);
}`,
  },
  {
    name: "ky",
    source: `import ky from "ky"; export const api = ky;`,
  },
];

/** Consumers of `fn` from its subpath and from the root. */
function one(
  fn: string,
  subpath: string,
  rootPath: string,
  goal?: number,
): Consumer[] {
  const use = (path: string) =>
    `import { ${fn} } from "${entry(path)}"; export const used = ${fn};`;
  return [
    { name: `${fn} (subpath)`, source: use(subpath), ...goal && { goal } },
    { name: `${fn} (root)`, source: use(rootPath) },
  ];
}

async function main(): Promise<void> {
  await install();
  const rows: string[][] = [["consumer", "bytes (min+gzip)", "goal"]];
  const missed: string[] = [];
  for (const consumer of CONSUMERS.flat()) {
    const size = await gzipSize(consumer.source);
    const goal = consumer.goal;
    if (goal !== undefined && size > goal) missed.push(consumer.name);
    rows.push([
      consumer.name,
      size.toLocaleString("en"),
      goal === undefined ? "" : `≤ ${goal.toLocaleString("en")}`,
    ]);
  }
  printTable(rows);
  if (missed.length > 0 && Deno.args.includes("--check")) {
    console.error(`over their goal: ${missed.join(", ")}`);
    Deno.exit(1);
  }
}

/** esbuild and the peers, pinned, in a folder of their own. */
async function install(): Promise<void> {
  const { success } = await new Deno.Command("npm", {
    args: [
      "install",
      "--no-save",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      "--prefix",
      DIR,
      ...PINNED,
    ],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!success) throw new Error("Cannot measure bundles: npm install failed");
}

/** The consumer bundled, minified, then gzipped at level 9. */
async function gzipSize(source: string): Promise<number> {
  const file = `${root}${DIR}/consumer.mjs`;
  await Deno.writeTextFile(file, source);
  const { success, stdout, stderr } = await new Deno.Command(
    `${root}${DIR}/node_modules/.bin/esbuild`,
    {
      args: [
        file,
        "--bundle",
        "--minify",
        "--format=esm",
        "--platform=browser",
        "--log-level=error",
      ],
      cwd: `${root}${DIR}`,
      stdout: "piped",
      stderr: "piped",
    },
  ).output();
  if (!success) throw new Error(new TextDecoder().decode(stderr));
  return gzipSync(stdout, { level: 9 }).byteLength;
}

function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) =>
    Math.max(...rows.map((row) => row[i]!.length))
  );
  for (const row of rows) {
    console.log(
      row.map((cell, i) =>
        i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)
      )
        .join("  "),
    );
  }
}

await main();
