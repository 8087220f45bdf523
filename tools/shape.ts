// The house's shape limits (issue 39, and the team's code style): no file
// of src/ over 400 lines, no function over 60. Only src/ is held to them
// (tests and tools are not). Every function counts: declarations, methods,
// accessors, constructors, function expressions and arrows, each
// from its first line to its last (a nested function counts within its
// parent too). It prints what is over and exits 1, so `deno task check`
// fails on it.
//
//   deno run --allow-read=src,node_modules --allow-env tools/shape.ts
//
// (The TypeScript package reads a dozen TSC_* variables as it loads; it
// only reads them.)

// Loaded when first used: the TypeScript package reads the environment as it
// loads, and tests without --allow-env import this file too.
import type ts from "typescript";

/** The most lines a file of src/ may have. */
export const MAX_FILE_LINES = 400;
/** The most lines a function may span. */
export const MAX_FUNCTION_LINES = 60;

/** Something over its limit: where, and how many lines. */
export interface Oversize {
  /** `path` for a file, `path:line name` for a function. */
  readonly where: string;
  /** Its lines. */
  readonly lines: number;
}

/** The files and functions of one source text that are over their limits. */
export async function oversized(
  path: string,
  text: string,
): Promise<Oversize[]> {
  const { default: ts } = await import("typescript");
  const found: Oversize[] = [];
  const fileLines = text.endsWith("\n")
    ? text.split("\n").length - 1
    : text.split("\n").length;
  if (fileLines > MAX_FILE_LINES) found.push({ where: path, lines: fileLines });
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const lineOf = (at: number) => source.getLineAndCharacterOfPosition(at).line;
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const lines = lineOf(node.getEnd()) - lineOf(node.getStart(source)) + 1;
      if (lines > MAX_FUNCTION_LINES) {
        const line = lineOf(node.getStart(source)) + 1;
        found.push({ where: `${path}:${line} ${nameOf(ts, node)}`, lines });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** A function's name as a reader finds it, or `(anonymous)`. */
function nameOf(ts: typeof import("typescript"), node: ts.Node): string {
  const named = node as { name?: ts.Node };
  if (named.name !== undefined) return named.name.getText();
  const parent = node.parent;
  if (parent !== undefined && ts.isVariableDeclaration(parent)) {
    return parent.name.getText();
  }
  if (parent !== undefined && ts.isPropertyAssignment(parent)) {
    return parent.name.getText();
  }
  return "(anonymous)";
}

async function* sourceFiles(folder: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(folder)) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory) yield* sourceFiles(path);
    else if (entry.name.endsWith(".ts")) yield path;
  }
}

if (import.meta.main) {
  const found: Oversize[] = [];
  let files = 0;
  for await (const path of sourceFiles("src")) {
    files += 1;
    found.push(...await oversized(path, await Deno.readTextFile(path)));
  }
  for (const { where, lines } of found) console.error(`${lines}  ${where}`);
  if (found.length > 0) {
    console.error(
      `shape: ${found.length} over the limits (files ${MAX_FILE_LINES} lines, functions ${MAX_FUNCTION_LINES})`,
    );
    Deno.exit(1);
  }
  console.log(
    `shape: ${files} files of src, none over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES}`,
  );
}
