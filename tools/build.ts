// `deno task build`: for every export of deno.json, an ES module
// (`dist/<name>.mjs`, from `deno bundle`) and its type declarations
// (`dist/<name>.d.ts`, and `.d.mts`, which TypeScript looks up next to an
// `.mjs`), so that Node and Bun users of dist/ get types too. Declarations
// come from the TypeScript compiler pinned in deno.json (`npm:typescript`),
// emitted without a type check (the sources are checked by `deno check`;
// stock tsc does not know Deno's `.ts` imports or its `Deno` namespace) into
// dist/types/, which the one-line entry files re-export.
//
// Needs --allow-read, --allow-write=dist, --allow-run=deno and --allow-env
// (the compiler reads its environment).

const { exports, imports } = JSON.parse(
  await Deno.readTextFile("deno.json"),
) as { exports: Record<string, string>; imports: Record<string, string> };

/** The file name of an export: "." is partner-api, "./otel" is otel. */
function distName(exportPath: string): string {
  return exportPath === "." ? "partner-api" : exportPath.slice(2);
}

async function run(args: string[]): Promise<void> {
  const { code } = await new Deno.Command("deno", {
    args,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (code !== 0) throw new Error(`deno ${args.join(" ")}: exit ${code}`);
}

if (import.meta.main) {
  await Deno.remove("dist", { recursive: true }).catch(() => {});
  const entries = Object.entries(exports);
  for (const [path, file] of entries) {
    // npm packages (OpenTelemetry's API) stay imports: the user's own copy
    // is the one its SDK registers with.
    await run([
      "bundle",
      "--quiet",
      "--platform=browser",
      "--external=@opentelemetry/api",
      `--output=dist/${distName(path)}.mjs`,
      file,
    ]);
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
    for (const extension of [".d.ts", ".d.mts"]) {
      await Deno.writeTextFile(`dist/${distName(path)}${extension}`, line);
    }
  }
  console.log(`dist/: ${entries.length} entries, .mjs and .d.ts each`);
}
