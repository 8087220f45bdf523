// The house's checks hold what they say: each fails on a small sample that
// breaks its rule (DESIGN §2, "Shape limits and the checks that hold them"),
// and passes the shape beside it that keeps it. `deno task check` runs this
// file; test:unit too, which skips the shape samples (TypeScript needs
// --allow-env) and says so in their names.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import {
  coreStores,
  type DocJson,
  importsOf,
  reachesIn,
  report,
  sharedValues,
  strayTypes,
  underscoreDeclarations,
  valueNames,
  withoutComments,
} from "../tools/doors.ts";
import {
  type Exception,
  exceptionProblems,
  MAX_EXCEPTIONS,
  oversized,
} from "../tools/shape.ts";
import { latestRelease, versionProblems } from "../tools/versions.ts";

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

Deno.test("doors: a value exported from two entries besides the root fails the check; a type re-exported with `export type` is no value", () => {
  const sources = new Map([
    ["mod.ts", `export * from "./src/core/errors.ts";`],
    [
      "src/core/errors.ts",
      `export class PartnerApiError extends Error {}\nexport type { Bucket } from "./quota.ts";\nexport const LIMIT = 1;`,
    ],
    [
      "src/sync/mod.ts",
      `export { SyncError, type SyncOptions } from "./sync_error.ts";\n// Named by SyncError's signature:\nexport type { PartnerApiError } from "../core/errors.ts";`,
    ],
    [
      "src/sync/sync_error.ts",
      `import { PartnerApiError } from "../core/errors.ts";\nexport class SyncError extends PartnerApiError {}\nexport interface SyncOptions {}`,
    ],
    // The sample that breaks the rule: the class itself, a second home.
    ["src/token/mod.ts", `export * from "../core/errors.ts";`],
  ]);
  const read = (path: string) => sources.get(path);
  const values = Object.fromEntries(
    [
      [".", "mod.ts"],
      ["./errors", "src/core/errors.ts"],
      ["./sync", "src/sync/mod.ts"],
      ["./token", "src/token/mod.ts"],
    ].map(([entry, file]) => [entry!, valueNames(file!, read)]),
  );
  deepStrictEqual([...values["./sync"]!], ["SyncError"]);
  deepStrictEqual(sharedValues(values), [
    { what: "LIMIT", where: "./errors ./token" },
    { what: "PartnerApiError", where: "./errors ./token" },
  ]);
  const figures = {
    underscoreDeclarations: [],
    sharedValues: sharedValues(values),
    strayTypes: [],
    reachesIn: [],
    coreStores: [],
  };
  equal(report(figures).ok, false);
  delete values["./token"];
  deepStrictEqual(sharedValues(values), []);
  equal(report({ ...figures, sharedValues: sharedValues(values) }).ok, true);
});

Deno.test("doors: a type an entry re-exports fails the check unless the entry's own declarations name it, directly or through another type", () => {
  const root = "file:///house/";
  const at = (file: string) => ({ filename: `${root}${file}`, line: 1 });
  const ref = (typeName: string) => ({ kind: "typeRef", value: { typeName } });
  const doc: DocJson = {
    nodes: {
      [`${root}src/client/mod.ts`]: {
        symbols: [
          {
            name: "createClient",
            declarations: [{
              kind: "function",
              location: at("src/client/client.ts"),
              def: { params: [{ tsType: ref("ClientOptions") }] },
            }],
          },
          {
            name: "ClientOptions",
            declarations: [{
              kind: "interface",
              location: at("src/client/options.ts"),
              def: { properties: [{ tsType: ref("TokenProvider") }] },
            }],
          },
          // Named through ClientOptions: may be here.
          {
            name: "TokenProvider",
            declarations: [{
              kind: "interface",
              location: at("src/token/types.ts"),
              def: { extends: [ref("TokenStore")] },
            }],
          },
          // The store contract through TokenProvider: may be here.
          {
            name: "TokenStore",
            declarations: [{
              kind: "interface",
              location: at("src/store/types.ts"),
            }],
          },
          // Named by nothing of ./client: stray.
          {
            name: "CoordinateOptions",
            declarations: [{
              kind: "interface",
              location: at("src/store/types.ts"),
            }],
          },
        ],
      },
      [`${root}src/token/mod.ts`]: {
        symbols: ["TokenProvider", "TokenStore", "CoordinateOptions"].map(
          (name) => ({
            name,
            declarations: [{
              kind: "interface",
              location: at(
                `src/${name === "TokenProvider" ? "token" : "store"}/types.ts`,
              ),
            }],
          }),
        ),
      },
    },
  };
  const entries = {
    "./client": "./src/client/mod.ts",
    "./token": "./src/token/mod.ts",
  };
  // ./token's TokenProvider is its part's own; the store types it re-exports
  // are named by nothing there.
  deepStrictEqual(strayTypes(doc, entries, root), [
    { what: "CoordinateOptions", where: "./client" },
    { what: "CoordinateOptions", where: "./token" },
    { what: "TokenStore", where: "./token" },
  ]);
});

Deno.test("doors: public names placed in _ files count", () => {
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
        symbols: [symbol("Hidden", "src/token/_options.ts", 8)],
      },
    },
  };
  deepStrictEqual(underscoreDeclarations(doc, root), [
    { what: "Hidden", where: "src/token/_options.ts:8" },
  ]);
});

Deno.test("doors: only a switched-on figure above its limit fails the check", () => {
  const one = [{ what: "x", where: "y" }];
  const figures = {
    underscoreDeclarations: one,
    sharedValues: one,
    strayTypes: [],
    reachesIn: [],
    coreStores: [],
  };
  equal(report(figures, { reachesIn: 0, coreStores: 0 }).ok, true);
  equal(report(figures, { sharedValues: 3 }).ok, true);
  equal(report(figures, { underscoreDeclarations: 0 }).ok, false);
  ok(
    report(figures, {}).lines.some((line) => line.includes("not checked yet")),
  );
});

const envAllowed =
  Deno.permissions.querySync({ name: "env" }).state === "granted";
const needsEnv = envAllowed
  ? ""
  : " (skipped: TypeScript needs --allow-env, run by deno task check)";
const body = (lines: number) => "  x();\n".repeat(lines - 2);
const fileOf = (lines: number) => "// filler\n".repeat(lines);

Deno.test({
  name:
    `shape: a file over 400 lines and a function over 60 count, each once, by name${needsEnv}`,
  ignore: !envAllowed,
  async fn() {
    const text = [
      `export function long() {\n${body(61)}}`,
      `export function fits() {\n${body(60)}}`,
      `class A {\n  #method() {\n${body(61)}  }\n}`,
      `const arrow = () => {\n${body(61)}};`,
    ].join("\n") + "\n" + fileOf(160);
    deepStrictEqual(await oversized("src/x.ts", text, []), [
      { where: "src/x.ts", lines: 405 },
      { where: "src/x.ts:1 long", lines: 61 },
      { where: "src/x.ts:123 #method", lines: 61 },
      { where: "src/x.ts:185 arrow", lines: 61 },
    ]);
  },
});

Deno.test({
  name:
    `shape: a listed exception may reach 600 lines, not 601, and its functions keep the 60-line limit${needsEnv}`,
  ignore: !envAllowed,
  async fn() {
    const listed = [{ path: "src/kit.ts", reason: "one concern" }];
    deepStrictEqual(await oversized("src/kit.ts", fileOf(600), listed), []);
    deepStrictEqual(await oversized("src/kit.ts", fileOf(601), listed), [
      { where: "src/kit.ts", lines: 601 },
    ]);
    deepStrictEqual(await oversized("src/other.ts", fileOf(401), listed), [
      { where: "src/other.ts", lines: 401 },
    ]);
    const long = `function f() {\n${body(61)}}\n` + fileOf(500);
    deepStrictEqual(await oversized("src/kit.ts", long, listed), [
      { where: "src/kit.ts:1 f", lines: 61 },
    ]);
  },
});

Deno.test("shape: more than 3 exceptions, one without a reason, or one that needs none fails the check", () => {
  const lines = (path: string) =>
    ({ "src/a.ts": 450, "src/b.ts": 500, "src/c.ts": 590, "src/d.ts": 410 })[
      path
    ];
  const listed = (paths: string[], reason = "one concern"): Exception[] =>
    paths.map((path) => ({ path, reason }));
  deepStrictEqual(
    exceptionProblems(listed(["src/a.ts", "src/b.ts", "src/c.ts"]), lines),
    [],
  );
  deepStrictEqual(
    exceptionProblems(
      listed(["src/a.ts", "src/b.ts", "src/c.ts", "src/d.ts"]),
      lines,
    ),
    [`4 exceptions: at most ${MAX_EXCEPTIONS}`],
  );
  equal(exceptionProblems(listed(["src/a.ts"], " "), lines).length, 1);
  equal(
    exceptionProblems(listed(["src/gone.ts"]), () => undefined).length,
    1,
  );
  equal(exceptionProblems(listed(["src/a.ts"]), () => 400).length, 1);
});

Deno.test("versions: a changelog's latest release is its first numbered section, Unreleased or not", () => {
  equal(
    latestRelease(
      "# Changelog\n\n## [Unreleased]\n\n## [0.4.0] - Unreleased\n\n## [0.3.0] - 2026-11-24\n",
    ),
    "0.4.0",
  );
  equal(latestRelease("## [1.0.0-rc.1] - 2027-01-01\n"), "1.0.0-rc.1");
  equal(latestRelease("# Changelog\n\nNothing yet.\n"), undefined);
});

Deno.test("versions: a place whose version differs from deno.json's fails the check", () => {
  deepStrictEqual(
    versionProblems({
      "deno.json": "0.4.0",
      "dist/package.json": "0.4.0",
      "CHANGELOG.md": "0.4.0",
    }),
    [],
  );
  deepStrictEqual(
    versionProblems({
      "deno.json": "0.4.0",
      "dist/package.json": "0.3.0",
      "CHANGELOG.md": undefined,
    }),
    [
      "dist/package.json: 0.3.0, deno.json: 0.4.0",
      "CHANGELOG.md: no version, deno.json: 0.4.0",
    ],
  );
  equal(versionProblems({ "deno.json": undefined }).length, 1);
});

// r214b N1: deno.json's nodeModulesDir is "manual", so from a fresh clone `deno task build` (and test:unit, check)
// failed on the first npm package it imported, asking for `deno install`.
const configReadable =
  Deno.permissions.querySync({ name: "read", path: "deno.json" }).state ===
    "granted";

Deno.test({
  name:
    `tasks: each that tests, benches or runs a tool importing npm packages installs the lockfile's first${
      configReadable
        ? ""
        : " (skipped: reads deno.json, run by deno task check)"
    }`,
  ignore: !configReadable,
  fn: tasksInstallFirst,
});

async function tasksInstallFirst() {
  const config = JSON.parse(await Deno.readTextFile("deno.json"));
  const commands = Object.entries(config.tasks).map(([name, task]) =>
    [
      name,
      typeof task === "string" ? task : (task as { command: string }).command,
    ] as const
  );
  const needing = commands.filter(([, command]) =>
    /\bdeno (test|bench)\b|tools\/(build|shape|doc)\.ts/.test(command)
  );
  ok(needing.length >= 9, String(needing.length));
  for (const [name, command] of needing) {
    ok(command.startsWith("deno install --quiet && "), name);
  }
}
