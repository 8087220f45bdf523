// Issue 39, a map for the next maintainer: every path docs/architecture.md
// names exists and every entry it names is one of deno.json's; and the door
// figures of tools/doors.ts count what they say on small samples.
//
// The page is read as a text import (no permission). Whether its paths exist
// needs read permission on the repository: `deno task check` runs this file
// with --allow-read=. (test:unit, which may read .test-tmp only, skips that
// one test and says so in its name).

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import page from "../docs/architecture.md" with { type: "text" };
import denoJson from "../deno.json" with { type: "json" };
import {
  coreStores,
  type DocJson,
  importsOf,
  reachesIn,
  report,
  sharedNames,
  underscoreDeclarations,
  withoutComments,
} from "../tools/doors.ts";
import { oversized } from "../tools/shape.ts";

/** Each backticked path or entry of `text`, with its line. */
function named(text: string): { name: string; line: number }[] {
  const found: { name: string; line: number }[] = [];
  text.split("\n").forEach((line, i) => {
    for (const [, name] of line.matchAll(/`([^`\s]+)`/g)) {
      if (isPath(name!) || isEntry(name!)) {
        found.push({ name: name!, line: i + 1 });
      }
    }
  });
  return found;
}

/** A path of the repository (no pattern such as `_<command>.ts` or `_*.ts`). */
function isPath(name: string): boolean {
  return /^(src|tests|tools|docs|examples)(\/[\w.-]+)*\/?$/.test(name) ||
    /^[\w-]+\.(ts|md|json)$/.test(name);
}

function isEntry(name: string): boolean {
  return /^\.\/[\w-]+$/.test(name);
}

const paths = named(page).filter(({ name }) => isPath(name));
const readable =
  Deno.permissions.querySync({ name: "read", path: "." }).state === "granted";

Deno.test({
  name: `docs/architecture.md names only paths that exist${
    readable ? "" : " (skipped: needs --allow-read=., run by deno task check)"
  }`,
  ignore: !readable,
  fn() {
    const missing = paths.filter(({ name }) => {
      try {
        Deno.lstatSync(name);
        return false;
      } catch {
        return true;
      }
    }).map(({ name, line }) => `docs/architecture.md:${line} ${name}`);
    deepStrictEqual(missing, [], "moved? fix the page");
  },
});

Deno.test("docs/architecture.md names paths, and only entries deno.json exports", () => {
  ok(paths.length >= 40, `${paths.length} paths named`);
  const entries = Object.keys(denoJson.exports);
  const unknown = named(page).filter(({ name }) =>
    isEntry(name) && !entries.includes(name)
  );
  deepStrictEqual(unknown, []);
  for (
    const part of [
      "core",
      "token",
      "client",
      "store",
      "sync",
      "cli",
      "testing",
      "telemetry",
    ]
  ) {
    ok(
      page.includes(`\`src/${part}/\``),
      `the part src/${part}/ is on the page`,
    );
  }
});

Deno.test("doors: a module reaching into another part's _ file counts, core's kernel and its own part's do not", () => {
  const sources = new Map([
    [
      "src/cli/_cache.ts",
      `import { aesKeyFrom } from "../store/_key.ts";\nimport { delay } from "../core/_retry.ts";`,
    ],
    [
      "src/cli/_list.ts",
      `import type { Session } from "./_session.ts";\n// import { x } from "../token/_hint.ts";`,
    ],
    [
      "src/sync/sync_list.ts",
      `export { a } from "../client/mod.ts";\nconst b = await import("../token/_value.ts");`,
    ],
  ]);
  deepStrictEqual(reachesIn(sources), [
    { what: "src/store/_key.ts", where: "src/cli/_cache.ts" },
    { what: "src/token/_value.ts", where: "src/sync/sync_list.ts" },
  ]);
  deepStrictEqual(importsOf("src/cli/_cache.ts", `import x from "npm:y";`), []);
});

Deno.test("doors: a core file naming a store in code counts, in a comment or example it does not", () => {
  const sources = new Map([
    [
      "src/core/rate_events.ts",
      `/**\n * equal(event.store, "redis");\n */\nexport interface A { readonly store: string }`,
    ],
    [
      "src/core/events.ts",
      `// "kv" in a comment\nexport type Store = "redis" | "kv";`,
    ],
    ["src/store/redis.ts", `const name = "redis";`],
  ]);
  deepStrictEqual(coreStores(sources), [
    {
      what: `export type Store = "redis" | "kv";`,
      where: "src/core/events.ts:2",
    },
  ]);
  equal(withoutComments(`a; // b\n/* c */ "// d"`), `a;     \n        "// d"`);
});

Deno.test("doors: public names placed in _ files, and names in more than one entry besides the root", () => {
  const root = "file:///house/";
  const symbol = (name: string, file: string, line = 1) => ({
    name,
    declarations: [{ location: { filename: `${root}${file}`, line } }],
  });
  const doc: DocJson = {
    nodes: {
      [`${root}mod.ts`]: {
        symbols: [
          symbol("Shared", "src/core/shared.ts"),
          symbol("Hidden", "src/token/_options.ts", 8),
        ],
      },
      [`${root}src/token/mod.ts`]: {
        symbols: [
          symbol("Shared", "src/core/shared.ts"),
          symbol("Hidden", "src/token/_options.ts", 8),
        ],
      },
      [`${root}src/client/mod.ts`]: {
        symbols: [symbol("Shared", "src/core/shared.ts")],
      },
      [`${root}src/store/mod.ts`]: {
        symbols: [symbol("Fleet", "src/store/types.ts")],
      },
      [`${root}src/store/kv.ts`]: {
        symbols: [symbol("Fleet", "src/store/types.ts")],
      },
    },
  };
  deepStrictEqual(underscoreDeclarations(doc, root), [
    { what: "Hidden", where: "src/token/_options.ts:8" },
  ]);
  const entries = {
    ".": "./mod.ts",
    "./token": "./src/token/mod.ts",
    "./client": "./src/client/mod.ts",
    "./store": "./src/store/mod.ts",
    "./kv": "./src/store/kv.ts",
  };
  // Hidden is in the root and one entry: its home. Fleet is in two entries,
  // neither of them the root.
  deepStrictEqual(sharedNames(doc, entries, root), [
    { what: "Fleet", where: "./kv ./store" },
    { what: "Shared", where: ". ./client ./token" },
  ]);
});

Deno.test("doors: only a switched-on figure above its limit fails the check", () => {
  const one = [{ what: "x", where: "y" }];
  const figures = {
    underscoreDeclarations: one,
    sharedNames: one,
    reachesIn: [],
    coreStores: [],
  };
  equal(report(figures, { reachesIn: 0, coreStores: 0 }).ok, true);
  equal(report(figures, { sharedNames: 3 }).ok, true);
  equal(report(figures, { underscoreDeclarations: 0 }).ok, false);
  ok(
    report(figures, {}).lines.some((line) => line.includes("not checked yet")),
  );
});

const envAllowed =
  Deno.permissions.querySync({ name: "env" }).state === "granted";

Deno.test({
  name:
    `shape: a file over 400 lines and a function over 60 count, each once, by name${
      envAllowed
        ? ""
        : " (skipped: TypeScript needs --allow-env, run by deno task check)"
    }`,
  ignore: !envAllowed,
  async fn() {
    const body = (lines: number) => "  x();\n".repeat(lines - 2);
    const text = [
      `export function long() {\n${body(61)}}`,
      `export function fits() {\n${body(60)}}`,
      `class A {\n  #method() {\n${body(61)}  }\n}`,
      `const arrow = () => {\n${body(61)}};`,
    ].join("\n") + "\n" + "// filler\n".repeat(160);
    deepStrictEqual(await oversized("src/x.ts", text), [
      { where: "src/x.ts", lines: 405 },
      { where: "src/x.ts:1 long", lines: 61 },
      { where: "src/x.ts:123 #method", lines: 61 },
      { where: "src/x.ts:185 arrow", lines: 61 },
    ]);
  },
});
