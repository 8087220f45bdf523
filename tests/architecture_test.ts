// docs/architecture.md is a map that is checked (issue 48): its import table
// is data this test reads, and the code may not cross a line it forbids; its
// "Where to add" claims name files that exist and every file the compiler
// needs for the change; its time model holds; every path and entry it names
// exists. Each rule also fails on a sample that breaks it.
//
// The page is read as a text import (no permission). Reading src/ needs
// --allow-read=.; the compiler probes need --allow-run=deno and
// --allow-write=.test-tmp: `deno task check` runs this file with them
// (test:unit skips those tests and says so in their names).

import { deepStrictEqual, ok } from "node:assert/strict";
import page from "../docs/architecture.md" with { type: "text" };
import denoJson from "../deno.json" with { type: "json" };
import { partOf, withoutComments } from "../tools/doors.ts";

// --- The page as data -------------------------------------------------------

/** One row of the import table: a part, its entries, what it may import. */
export interface PartRule {
  /** `core`, `token`, ... */
  readonly part: string;
  readonly entries: readonly string[];
  /** Parts it may import anything from. */
  readonly parts: ReadonlySet<string>;
  /** Parts it may import types from (`token's types`). */
  readonly typeParts: ReadonlySet<string>;
  /** Files or packages it may import (a backticked path or package). */
  readonly files: ReadonlySet<string>;
  /** `every part`: the CLI. */
  readonly everyPart: boolean;
}

/**
 * The rows of the table under "## The parts, and what each may import".
 * A "may import" cell is a list (`;` or `,`) of: `nothing`, `every part`, a
 * part (`core`), a part's types (`store's types`), or a backticked file or
 * package (`src/store/token_access.ts`, `@opentelemetry/api`).
 */
export function importTable(text: string): PartRule[] {
  const section = sectionOf(text, "## The parts, and what each may import");
  const rules: PartRule[] = [];
  for (const line of section.split("\n")) {
    const cells = line.split("|").slice(1, -1).map((cell) => cell.trim());
    const part = /^`src\/(\w+)\/`$/.exec(cells[0] ?? "")?.[1];
    if (part === undefined || cells.length !== 3) continue;
    const rule = {
      part,
      entries: [...cells[1]!.matchAll(/`(\.\/[\w-]+)`/g)].map(([, e]) => e!),
      parts: new Set<string>(),
      typeParts: new Set<string>(),
      files: new Set<string>(),
      everyPart: false,
    };
    for (const item of cells[2]!.split(/[;,]/).map((it) => it.trim())) {
      const quoted = /^`([^`]+)`$/.exec(item)?.[1];
      const types = /^(\w+)'s types$/.exec(item)?.[1];
      if (quoted !== undefined) rule.files.add(quoted);
      else if (types !== undefined) rule.typeParts.add(types);
      else if (item === "every part") rule.everyPart = true;
      else if (/^\w+$/.test(item) && item !== "nothing") rule.parts.add(item);
      else if (item !== "nothing") {
        throw new Error(`the import table: what is "${item}"? (${part})`);
      }
    }
    rules.push(rule);
  }
  return rules;
}

/** The text of the section under `heading`, up to the next `## `. */
function sectionOf(text: string, heading: string): string {
  const start = text.indexOf(`${heading}\n`);
  if (start < 0) throw new Error(`docs/architecture.md: no "${heading}"`);
  const end = text.indexOf("\n## ", start + heading.length);
  return text.slice(start, end < 0 ? undefined : end);
}

/** One import or re-export of a module. */
export interface Import {
  /** A repository path (`src/core/errors.ts`) or a package (`@opentelemetry/api`). */
  readonly target: string;
  /** `import type`, `export type`, or only `type`-marked names. */
  readonly typeOnly: boolean;
}

/** The imports and re-exports of a module, outside comments. */
export function importsIn(path: string, text: string): Import[] {
  const code = withoutComments(text);
  const found: Import[] = [];
  const add = (specifier: string, typeOnly: boolean) => {
    const target = specifier.startsWith(".")
      ? new URL(specifier, new URL(path, "file:///")).pathname.slice(1)
      : specifier;
    found.push({ target, typeOnly });
  };
  for (
    const [, type, clause, specifier] of code.matchAll(
      /\b(?:import|export)\s+(type\s+)?([^;]*?)\bfrom\s*["']([^"']+)["']/g,
    )
  ) {
    const names = /^\{([^}]*)\}$/.exec(clause!.trim())?.[1]?.split(",")
      .map((name) => name.trim()).filter((name) => name !== "");
    const allTyped = names !== undefined && names.length > 0 &&
      names.every((name) => name.startsWith("type "));
    add(specifier!, type !== undefined || allTyped);
  }
  for (
    const [, specifier] of code.matchAll(
      /(?:^|[^\w.])import\s*(?:\(\s*)?["']([^"']+)["']/gm,
    )
  ) add(specifier!, false);
  return found;
}

/**
 * Imports of `sources` (path → text) that cross a line the table forbids:
 * into another part of src/ it may not import (or only its types), or of a
 * package it does not name. `node:` modules are the runtime's, not a part's.
 */
export function forbiddenImports(
  rules: readonly PartRule[],
  sources: ReadonlyMap<string, string>,
): string[] {
  const byPart = new Map(rules.map((rule) => [rule.part, rule]));
  const found: string[] = [];
  for (const [path, text] of sources) {
    const from = partOf(path);
    if (from === "root") continue;
    const rule = byPart.get(from);
    for (const { target, typeOnly } of importsIn(path, text)) {
      if (target.startsWith("node:")) continue;
      const local = target.startsWith("src/") || target === "mod.ts";
      const to = local ? partOf(target) : target;
      if (to === from) continue;
      const allowed = rule !== undefined &&
        (rule.files.has(target) || rule.parts.has(to) ||
          (typeOnly && rule.typeParts.has(to)) ||
          (rule.everyPart && local && to !== "root"));
      if (!allowed) {
        found.push(`${path} imports ${typeOnly ? "types of " : ""}${target}`);
      }
    }
  }
  return found.sort();
}

/** One "Where to add" claim: its title and the files it names. */
export interface Claim {
  readonly title: string;
  readonly files: readonly string[];
}

/** The bullets of "## Where to add", each with the concrete paths it names. */
export function whereToAdd(text: string): Claim[] {
  return sectionOf(text, "## Where to add").split(/\n- /).slice(1).map(
    (bullet) => ({
      title: /^\*\*([^*]+?)\.?\*\*/.exec(bullet)?.[1] ?? bullet.slice(0, 30),
      files: [...bullet.matchAll(/`(src\/[\w/.-]+\.ts)`/g)].map(([, f]) => f!),
    }),
  );
}

// --- The time model -----------------------------------------------------------

/**
 * Readings of the time outside the time model: `Date.now()`, `new Date()`
 * and `performance.now()` called in code, or `Date.now` handed on as a
 * clock, where every reading goes through a `now` option (DESIGN §4, "One
 * time model"); `Date.now` as a default (`?? Date.now`, `= Date.now`) or
 * compared with one is the model. The steady clock of `src/core/_clock.ts`
 * is where `performance.now()` belongs.
 */
export function clockReadings(sources: ReadonlyMap<string, string>): string[] {
  const found: string[] = [];
  for (const [path, text] of sources) {
    if (path === "src/core/_clock.ts") continue;
    withoutComments(text).split("\n").forEach((line, i) => {
      const called = /\bDate\.now\(\)|\bnew Date\(\)|\bperformance\.now!?\(\)/;
      const handedOn = /(?<!(\?\?|[=!]?==?)\s*)\bDate\.now\b(?!\s*\()/;
      if (called.test(line) || handedOn.test(line)) {
        found.push(`${path}:${i + 1}`);
      }
    });
  }
  return found;
}

/**
 * Files whose readings of the time other branches of this round move to
 * `now` (issue 48: sync's leases and staleness, the file store). The lead
 * removes each as its branch lands; one without a reading fails the test
 * until it is removed, so the list only shrinks.
 */
const CLOCK_PENDING = new Set([
  // A span's end is the wall clock a tracing backend reads; a `now` for
  // openTelemetry is not in DESIGN yet.
  "src/telemetry/otel.ts",
  // The demo prints how long it took, for a person.
  "src/cli/_demo.ts",
]);

/**
 * Circles of imports among `sources` (path → text), types included, each as
 * the paths around it from its first file in order: two files that import
 * each other must be read together, so the map keeps none.
 */
export function importCircles(sources: ReadonlyMap<string, string>): string[] {
  const edges = new Map(
    [...sources].map(([path, text]) => [
      path,
      [...new Set(importsIn(path, text).map(({ target }) => target))]
        .filter((target) => sources.has(target)),
    ]),
  );
  const circles = new Set<string>();
  const walk = (path: string, trail: string[]) => {
    const at = trail.indexOf(path);
    if (at >= 0) {
      const circle = trail.slice(at);
      const first = circle.indexOf([...circle].sort()[0]!);
      circles.add(
        [...circle.slice(first), ...circle.slice(0, first)].join(" -> "),
      );
      return;
    }
    if (trail.length > 12) return; // longer circles would be named by a shorter path's walk
    for (const next of edges.get(path) ?? []) walk(next, [...trail, path]);
  };
  for (const path of edges.keys()) walk(path, []);
  return [...circles].sort();
}

// --- Reading the repository ------------------------------------------------------

const readable =
  Deno.permissions.querySync({ name: "read", path: "." }).state === "granted";
const needsRead = readable
  ? ""
  : " (skipped: needs --allow-read=., run by deno task check)";

function sourcesOf(folder: string): Map<string, string> {
  const sources = new Map<string, string>();
  const visit = (path: string) => {
    for (const entry of Deno.readDirSync(path)) {
      const inner = `${path}/${entry.name}`;
      if (entry.isDirectory) visit(inner);
      else if (entry.name.endsWith(".ts")) {
        sources.set(inner, Deno.readTextFileSync(inner));
      }
    }
  };
  visit(folder);
  return sources;
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

// --- The code against the map ------------------------------------------------------

Deno.test({
  name:
    `the import table: no import in src/ crosses a line it forbids${needsRead}`,
  ignore: !readable,
  fn() {
    deepStrictEqual(forbiddenImports(importTable(page), sourcesOf("src")), []);
  },
});

Deno.test({
  name:
    `no two files of src/ import each other, directly or around a circle${needsRead}`,
  ignore: !readable,
  fn() {
    deepStrictEqual(importCircles(sourcesOf("src")), []);
  },
});

Deno.test("import circles: a type-only circle counts, a chain does not", () => {
  const sources = new Map([
    ["src/client/a.ts", `import { b } from "./b.ts";`],
    ["src/client/b.ts", `import type { A } from "./a.ts";`],
    ["src/client/c.ts", `import { b } from "./b.ts";`],
  ]);
  deepStrictEqual(importCircles(sources), [
    "src/client/a.ts -> src/client/b.ts",
  ]);
});

Deno.test("the import table: one row per part of src/, with the entries deno.json gives the part", () => {
  const rules = importTable(page);
  const exports = denoJson.exports as Record<string, string>;
  const parts = new Set(
    Object.values(exports).map((file) => partOf(file.replace(/^\.\//, ""))),
  );
  parts.delete("root");
  deepStrictEqual(rules.map(({ part }) => part).sort(), [...parts].sort());
  for (const { part, entries } of rules) {
    const own = Object.entries(exports)
      .filter(([, file]) => partOf(file.replace(/^\.\//, "")) === part)
      .map(([entry]) => entry);
    deepStrictEqual([...entries].sort(), own.sort(), `the entries of ${part}`);
  }
});

Deno.test("the import table: a sample that crosses a line fails; what a row allows passes", () => {
  const rules = importTable(`## The parts, and what each may import

| part | entries | may import |
| --- | --- | --- |
| \`src/core/\` | \`./errors\` | nothing |
| \`src/store/\` | \`./store\` | core |
| \`src/token/\` | \`./token\` | core; store's types; \`src/store/token_access.ts\` |
| \`src/client/\` | \`./client\` | core, token |
| \`src/telemetry/\` | \`./otel\` | core; \`@opentelemetry/api\` |
| \`src/cli/\` | \`./cli\` | every part |
`);
  const sources = new Map([
    [
      "src/token/provider.ts",
      `import { StoreAccess } from "../store/token_access.ts";\nimport type { TokenStore } from "../store/types.ts";\nimport { type A, type B } from "../store/mod.ts";\nimport { errors } from "../core/errors.ts";`,
    ],
    [
      "src/token/_bad.ts",
      `import { createMemoryTokenStore } from "../store/mod.ts";`,
    ],
    [
      "src/client/mod.ts",
      `// export type * from "../store/types.ts";\nexport type * from "../store/types.ts";\nexport * from "../token/mod.ts";`,
    ],
    [
      "src/core/quota.ts",
      `import { x } from "../token/mod.ts";\nimport "node:process";`,
    ],
    [
      "src/telemetry/otel.ts",
      `import { trace } from "@opentelemetry/api";\nimport pg from "pg";`,
    ],
    [
      "src/cli/main.ts",
      `import { syncList } from "../sync/mod.ts";\nimport x from "../../tools/doors.ts";`,
    ],
    ["mod.ts", `export * from "./src/cli/mod.ts";`],
  ]);
  deepStrictEqual(forbiddenImports(rules, sources), [
    "src/cli/main.ts imports tools/doors.ts",
    "src/client/mod.ts imports types of src/store/types.ts",
    "src/core/quota.ts imports src/token/mod.ts",
    "src/telemetry/otel.ts imports pg",
    "src/token/_bad.ts imports src/store/mod.ts",
  ]);
});

// --- Where to add ----------------------------------------------------------------

/** Files a claim needs that it does not name. */
export function missingFiles(
  claim: Claim,
  needed: readonly string[],
): string[] {
  return needed.filter((file) => !claim.files.includes(file));
}

/**
 * A change each claim describes, made in a scratch copy of the repository:
 * the files `deno check` then fails in are the files the change needs, and
 * the claim must name each of them. (Sinks are not probed: sync is being
 * reshaped into one SQL kit with dialects this round.)
 */
const PROBES: readonly {
  title: string;
  edits: readonly { file: string; find: string; add: string }[];
  check: readonly string[];
}[] = [
  {
    title: "A list, or a list's default sort",
    edits: [
      {
        file: "src/testing/fake_options.ts",
        find: "export interface ListSizes {\n",
        add: "  merchants: number;\n",
      },
      {
        file: "src/testing/_list_data.ts",
        find: "const SHAPES = [\n",
        add:
          `  { name: "merchants", idField: "merchantID", sortable: ["merchantID"], defaultSort: "merchantID" },\n`,
      },
    ],
    check: ["src/testing/mod.ts"],
  },
  {
    title: "A CLI command",
    edits: [{
      file: "src/cli/_plan.ts",
      find: "export type Plan =\n",
      add: `  | ({ readonly command: "probe" } & SessionFlags)\n`,
    }],
    check: ["src/cli/mod.ts"],
  },
  {
    title: "An event",
    edits: [{
      file: "src/core/events.ts",
      find: "export type PartnerApiEvent =\n",
      add: `  | { readonly type: "probe.event"; readonly at: number }\n`,
    }],
    check: ["mod.ts", "src/telemetry/otel.ts", "src/cli/mod.ts"],
  },
];

/** The files of the repository `deno check` reports errors in. */
function errorFiles(output: string, root: string): string[] {
  const files = [...output.matchAll(/at file:\/\/([^:]+):\d+:\d+/g)]
    .map(([, path]) =>
      path!.startsWith(root) ? path!.slice(root.length) : path!
    );
  return [...new Set(files)].sort();
}

const canProbe = readable &&
  Deno.permissions.querySync({ name: "run", command: "deno" }).state ===
    "granted" &&
  Deno.permissions.querySync({ name: "write", path: ".test-tmp" }).state ===
    "granted";

Deno.test("where to add: every claim names files that exist", () => {
  const claims = whereToAdd(page);
  ok(claims.length >= 4, `${claims.length} claims`);
  for (const claim of claims) ok(claim.files.length > 0, claim.title);
  if (!readable) return;
  const missing = claims.flatMap(({ title, files }) =>
    files.filter((file) => !exists(file)).map((file) => `${title}: ${file}`)
  );
  deepStrictEqual(missing, []);
});

Deno.test("where to add: a claim that leaves out a file the change needs fails", () => {
  const [claim] = whereToAdd(`## Where to add

- **A list's default sort.** \`SHAPES\` in \`src/testing/_list_data.ts\`, its
  size in \`src/testing/fake_options.ts\`.
`);
  deepStrictEqual(
    missingFiles(claim!, [
      "src/testing/_list_data.ts",
      "src/testing/fake_service.ts",
    ]),
    ["src/testing/fake_service.ts"],
  );
  deepStrictEqual(
    errorFiles(
      "TS2741 [ERROR]: ...\n    at file:///x/src/testing/fake_service.ts:357:3\n    at file:///x/src/testing/fake_options.ts:305:3\n",
      "/x/",
    ),
    ["src/testing/fake_options.ts", "src/testing/fake_service.ts"],
  );
});

Deno.test({
  name:
    `where to add: each probed change, made in a scratch copy, needs only files its claim names${
      canProbe
        ? ""
        : " (skipped: needs --allow-run=deno --allow-write=.test-tmp, run by deno task check)"
    }`,
  ignore: !canProbe,
  async fn() {
    const claims = new Map(whereToAdd(page).map((c) => [c.title, c]));
    await Deno.mkdir(".test-tmp", { recursive: true });
    const scratch = await Deno.makeTempDir({
      dir: ".test-tmp",
      prefix: "map-",
    });
    const root = `${Deno.realPathSync(scratch)}/`;
    try {
      // No deno.json in the copy: the repository's, found upward, gives the
      // compiler options and node_modules.
      await Deno.copyFile("mod.ts", `${scratch}/mod.ts`);
      for (const [path, text] of sourcesOf("src")) {
        await Deno.mkdir(`${scratch}/${path.replace(/\/[^/]+$/, "")}`, {
          recursive: true,
        });
        await Deno.writeTextFile(`${scratch}/${path}`, text);
      }
      for (const probe of PROBES) {
        const claim = claims.get(probe.title);
        ok(claim !== undefined, `no claim "${probe.title}" on the page`);
        const saved = new Map<string, string>();
        for (const { file, find, add } of probe.edits) {
          const text = saved.get(file) ??
            await Deno.readTextFile(`${scratch}/${file}`);
          if (!saved.has(file)) saved.set(file, text);
          const current = await Deno.readTextFile(`${scratch}/${file}`);
          ok(
            current.includes(find),
            `${probe.title}: "${find.trim()}" moved; fix the probe`,
          );
          await Deno.writeTextFile(
            `${scratch}/${file}`,
            current.replace(find, find + add),
          );
        }
        const { stdout, stderr } = await new Deno.Command("deno", {
          args: ["check", "--quiet", ...probe.check],
          cwd: scratch,
          env: { NO_COLOR: "1" },
          stdout: "piped",
          stderr: "piped",
        }).output();
        const output = new TextDecoder().decode(stdout) +
          new TextDecoder().decode(stderr);
        const needed = [
          ...new Set([
            ...probe.edits.map(({ file }) => file),
            ...errorFiles(output, root),
          ]),
        ];
        deepStrictEqual(
          missingFiles(claim!, needed),
          [],
          `${probe.title}:\n${output}`,
        );
        for (const [file, text] of saved) {
          await Deno.writeTextFile(`${scratch}/${file}`, text);
        }
      }
    } finally {
      await Deno.remove(scratch, { recursive: true });
    }
  },
});

// --- The time model ----------------------------------------------------------------

Deno.test({
  name:
    `one time model: no reading of the time in src/ outside a now option and the steady clock${needsRead}`,
  ignore: !readable,
  fn() {
    const found = clockReadings(sourcesOf("src"));
    const pending = (at: string) =>
      [...CLOCK_PENDING].some((prefix) => at.startsWith(prefix));
    deepStrictEqual(found.filter((at) => !pending(at)), []);
    const stale = [...CLOCK_PENDING].filter((prefix) =>
      !found.some((at) => at.startsWith(prefix))
    );
    deepStrictEqual(
      stale,
      [],
      "no reading left there: remove it from CLOCK_PENDING",
    );
  },
});

Deno.test("one time model: a sample reading the clock fails; a now option defaulting to Date.now passes", () => {
  const sources = new Map([
    ["src/core/_clock.ts", "const steady = () => origin + performance.now();"],
    [
      "src/store/x.ts",
      "const now = options.now ?? Date.now;\n// Date.now() in a comment\nconst at = Date.now();\nconst day = new Date().toISOString();\nif (now === Date.now) steady();\nfunction f(clock = Date.now) {}\nnew Deadlines(ms, Date.now, 0);",
    ],
  ]);
  deepStrictEqual(clockReadings(sources), [
    "src/store/x.ts:3",
    "src/store/x.ts:4",
    "src/store/x.ts:7",
  ]);
});

// --- Every path and entry the page names ----------------------------------------

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

Deno.test({
  name: `docs/architecture.md names only paths that exist${needsRead}`,
  ignore: !readable,
  fn() {
    const missing = paths.filter(({ name }) => !exists(name))
      .map(({ name, line }) => `docs/architecture.md:${line} ${name}`);
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
});
