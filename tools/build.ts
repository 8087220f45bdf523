// `deno task build`: for every export of deno.json, an ES module
// (`dist/<name>.mjs`, over the chunks of one split `deno bundle` of them all,
// `dist/lib/`) and its type declarations
// (`dist/<name>.d.ts`, and `.d.mts`, which TypeScript looks up next to an
// `.mjs`), so that Node and Bun users of dist/ get types too. Declarations
// come from the TypeScript compiler pinned in deno.json (`npm:typescript`),
// emitted without a type check (the sources are checked by `deno check`;
// stock tsc does not know Deno's `.ts` imports or its `Deno` namespace) into
// dist/types/, which the one-line entry files re-export. And a
// dist/package.json (name, version, `exports` with `types` conditions,
// `engines`, `sideEffects`), so that `npm install ./dist` then
// `import "@partner-api/client/sync"` works.
//
// Node 20 and 22 cannot parse `using` (V8 supports it from Node 24), which
// the sources may use, and `deno bundle` has no target: each chunk goes
// through the same pinned compiler (target ES2022, as the declarations),
// which rewrites `using` and `await using` into try/finally blocks with its
// disposal helpers; and the build fails if a `using` is left in any chunk.
//
// Needs --allow-read, --allow-write=dist, --allow-run=deno and --allow-env
// (the compiler reads its environment).

import ts from "typescript";

/** The file name of an export: "." is partner-api, "./otel" is otel. */
function distName(exportPath: string): string {
  return exportPath === "." ? "partner-api" : exportPath.slice(2);
}

/**
 * The package.json of dist/: every export as its bundle, with the `types`
 * condition first (TypeScript reads conditions in order).
 */
export function packageJson(config: {
  name: string;
  version: string;
  license: string;
  exports: Record<string, string>;
  imports: Record<string, string>;
}): Record<string, unknown> {
  const exports: Record<string, unknown> = {};
  for (const path of Object.keys(config.exports)) {
    const name = distName(path);
    exports[path] = { types: `./${name}.d.mts`, default: `./${name}.mjs` };
  }
  exports["./package.json"] = "./package.json";
  const otel = /^npm:@opentelemetry\/api@(.+)$/.exec(
    config.imports["@opentelemetry/api"] ?? "",
  )?.[1];
  return {
    name: config.name,
    version: config.version,
    description:
      "OAuth 2.0 client-credentials tokens and paged lists of the partner API, without wasting its token quota",
    license: config.license,
    type: "module",
    exports,
    types: "./partner-api.d.mts",
    engines: { node: ">=20.3" }, // AbortSignal.any

    // No entry or shared chunk does import-time work of its own.
    sideEffects: false,
    ...(otel === undefined ? {} : {
      peerDependencies: { "@opentelemetry/api": `^${otel}` },
      peerDependenciesMeta: { "@opentelemetry/api": { optional: true } },
    }),
  };
}

/**
 * `./kv` takes a `Deno.Kv` and runs on Deno only; outside Deno its
 * declarations name an empty `Deno.Kv`, so that a project with only
 * @types/node still type-checks (a real `Deno.Kv` merges with it).
 */
const DENO_KV_SHIM =
  `// ./kv runs on Deno only: it takes a Deno.Kv. Declared empty here for
// projects without Deno's types; Deno's own declaration merges with it.
declare global {
  namespace Deno {
    interface Kv {}
  }
}
`;

/**
 * `code` (a bundle) in syntax Node 20 parses: the compiler's ES2022 output,
 * with `using` declarations lowered and every import kept as written.
 */
export function forNode20(code: string): string {
  return ts.transpileModule(code, {
    fileName: "bundle.mjs",
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      verbatimModuleSyntax: true,
    },
  }).outputText;
}

/** `code` parsed as a module, with parents set (node texts and positions). */
function parsed(code: string): ts.SourceFile {
  return ts.createSourceFile(
    "bundle.mjs",
    code,
    ts.ScriptTarget.Latest,
    true,
    ts.ScriptKind.JS,
  );
}

/**
 * Each `using` or `await using` declaration in `code`, as `line:column`;
 * found by parsing, so a `using` in a comment, a string or a name is none.
 */
export function usingDeclarations(code: string): string[] {
  const source = parsed(code);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    const kind = node.flags & ts.NodeFlags.BlockScoped;
    if (
      ts.isVariableDeclarationList(node) &&
      (kind === ts.NodeFlags.Using || kind === ts.NodeFlags.AwaitUsing)
    ) {
      const at = source.getLineAndCharacterOfPosition(node.getStart(source));
      found.push(`${at.line + 1}:${at.character + 1}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Throws, naming each place, if a bundle of `bundles` (path → code) holds
 * a `using` declaration, which Node 20 and 22 reject with a SyntaxError.
 */
export function assertNode20Syntax(bundles: Record<string, string>): void {
  const places = Object.entries(bundles).flatMap(([path, code]) =>
    usingDeclarations(code).map((at) => `${path}:${at}`)
  );
  if (places.length > 0) {
    throw new Error(
      `a bundle holds \`using\`, which Node 20 cannot parse: ${
        places.join(", ")
      }`,
    );
  }
}

/**
 * `code` without its `if (import.meta.main) …` statements (the CLI's run as a program): a bundler that inlines a chunk
 * gives `import.meta.main` its own program's value, so a user's esbuild bundle that imported `./cli` ran the tool on
 * its own arguments, and a Worker's failed to load. The program is src/cli/mod.ts; dist/cli.mjs is a module.
 */
export function withoutMainRun(code: string): string {
  const source = parsed(code);
  const runs = source.statements.filter((statement) =>
    ts.isIfStatement(statement) &&
    statement.expression.getText(source) === "import.meta.main" &&
    statement.elseStatement === undefined
  );
  let kept = code;
  for (const statement of runs.reverse()) {
    kept = kept.slice(0, statement.getStart(source)) +
      kept.slice(statement.getEnd());
  }
  return kept;
}

/** Whether `code` reads `import.meta.main` (found by parsing: a comment or a string that names it does not). */
function readsMain(code: string): boolean {
  const source = parsed(code);
  const reads = (node: ts.Node): boolean =>
    (ts.isPropertyAccessExpression(node) &&
      node.getText(source) === "import.meta.main") ||
    (ts.forEachChild(node, reads) ?? false);
  return reads(source);
}

/** Throws, naming each chunk, if a chunk of `bundles` still reads `import.meta.main` (a form `withoutMainRun` left). */
export function assertNoMainRun(bundles: Record<string, string>): void {
  const left = Object.keys(bundles).filter((path) => readsMain(bundles[path]!));
  if (left.length > 0) {
    throw new Error(
      `a bundle still reads import.meta.main, which a user's bundler would give its own program's value: ${
        left.join(", ")
      }`,
    );
  }
}

/** The files under `folder`, at any depth. */
async function* walk(folder: string): AsyncGenerator<{ path: string }> {
  for await (const entry of Deno.readDir(folder)) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory) yield* walk(path);
    else yield { path };
  }
}

async function run(args: string[]): Promise<void> {
  // Without a test's DENO_COVERAGE_DIR: covered, the TypeScript compiler ran
  // twice as long (the build 15 s, 7 s without), and covers nothing of ours.
  const env = Deno.env.toObject();
  delete env.DENO_COVERAGE_DIR;
  const { code } = await new Deno.Command("deno", {
    args,
    clearEnv: true,
    env,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (code !== 0) throw new Error(`deno ${args.join(" ")}: exit ${code}`);
}

if (import.meta.main) {
  const config = JSON.parse(await Deno.readTextFile("deno.json"));
  const { exports, imports } = config as {
    exports: Record<string, string>;
    imports: Record<string, string>;
  };
  await Deno.remove("dist", { recursive: true }).catch(() => {});
  const entries = Object.entries(exports);
  // One bundle of every entry, split into shared chunks (dist/lib): a class
  // two entries export is one class (bundled apart, an error thrown through
  // one entry was no instance of the same class imported from another). npm
  // packages (OpenTelemetry's API) stay imports: the user's own copy is the
  // one its SDK registers with.
  await run([
    "bundle",
    "--quiet",
    "--platform=browser",
    "--external=@opentelemetry/api",
    "--code-splitting",
    "--outdir=dist/lib",
    ...entries.map(([, file]) => file),
  ]);
  const bundles: Record<string, string> = {};
  for await (const { path } of walk("dist/lib")) {
    bundles[path] = withoutMainRun(forNode20(await Deno.readTextFile(path)));
    await Deno.writeTextFile(path, bundles[path]);
  }
  assertNode20Syntax(bundles);
  assertNoMainRun(bundles);
  for (const [path, file] of entries) {
    const bundle = file.replace(/^\.\//, "./lib/").replace(/\.ts$/, ".js");
    await Deno.writeTextFile(
      `dist/${distName(path)}.mjs`,
      `export * from "${bundle}";\n`,
    );
  }
  await run([
    "run",
    "--allow-read",
    "--allow-write=dist",
    "--allow-env",
    `${imports.typescript}/tsc`,
    "--declaration",
    "--emitDeclarationOnly",
    "--noCheck",
    "--allowImportingTsExtensions",
    ...["--target", "es2022", "--module", "nodenext"],
    ...["--moduleResolution", "nodenext", "--outDir", "dist/types"],
    ...entries.map(([, file]) => file),
  ]);
  for (const [path, file] of entries) {
    const line = `export * from "./types/${file.replace(/^\.\//, "")}";\n`;
    const text = path === "./kv" ? DENO_KV_SHIM + line : line;
    for (const extension of [".d.ts", ".d.mts"]) {
      await Deno.writeTextFile(`dist/${distName(path)}${extension}`, text);
    }
  }
  await Deno.writeTextFile(
    "dist/package.json",
    `${JSON.stringify(packageJson(config), null, 2)}\n`,
  );
  // The JSDoc points to docs/*.md for the reference: the package carries it.
  await Deno.mkdir("dist/docs", { recursive: true });
  for await (const doc of Deno.readDir("docs")) {
    if (doc.name.endsWith(".md")) {
      await Deno.copyFile(`docs/${doc.name}`, `dist/docs/${doc.name}`);
    }
  }
  for (const file of ["README.md", "CHANGELOG.md", "LICENSE"]) {
    await Deno.copyFile(file, `dist/${file}`);
  }
  console.log(
    `dist/: ${entries.length} entries, .mjs and .d.ts each, and package.json`,
  );
}
