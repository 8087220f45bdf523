// The house's shape limits (issue 39, and the team's code style): no file
// of src/ over 400 lines, no function over 60. A concern that truly needs
// more stays whole in one file listed in EXCEPTIONS with its reason (at most
// 3, none over 600 lines: DESIGN §2); a split that only serves the limit is
// worse than the size. Only src/ is held to them
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
/** The most lines a file listed in {@linkcode EXCEPTIONS} may have. */
export const MAX_EXCEPTION_LINES = 600;
/** The most files {@linkcode EXCEPTIONS} may list. */
export const MAX_EXCEPTIONS = 3;

/** A file of src/ allowed past {@linkcode MAX_FILE_LINES}, and why. */
export interface Exception {
  /** Its path from the repository's root, e.g. `src/sync/_sql_kit.ts`. */
  readonly path: string;
  /** Why this concern needs more than 400 lines in one file. */
  readonly reason: string;
}

/** The files of src/ over 400 lines, each with why its concern stays whole. */
export const EXCEPTIONS: readonly Exception[] = [
  {
    path: "src/sync/jsonl_sink.ts",
    reason:
      "one JSONL copy under its one lock: taking it, the writes without lock() in line, a batch, a cycle's end and the side file's commit share the copy's private state (the lock held, what was committed, the sink's last look); split, each part would hand it to the others",
  },
  {
    path: "src/client/_send.ts",
    reason:
      "one API request's life on the one object the attempt loop drives: its token (taken again after a rate wait), slot, attempts, renewal, redirects, retries and error share that object's state (the token held, the slot's ticket, the target, the last failure); split, each part would hand it to the others",
  },
];

/**
 * What is wrong with a list of exceptions, given each listed file's lines
 * (`undefined`: no such file): more than {@linkcode MAX_EXCEPTIONS}, one
 * without a reason, one that names no file or a file within the usual limit
 * (a stale entry would let the file grow back unseen).
 */
export function exceptionProblems(
  exceptions: readonly Exception[],
  linesOf: (path: string) => number | undefined,
): string[] {
  const problems: string[] = [];
  if (exceptions.length > MAX_EXCEPTIONS) {
    problems.push(
      `${exceptions.length} exceptions: at most ${MAX_EXCEPTIONS}`,
    );
  }
  for (const { path, reason } of exceptions) {
    const lines = linesOf(path);
    if (reason.trim() === "") {
      problems.push(`${path}: an exception without a reason`);
    }
    if (lines === undefined) problems.push(`${path}: listed, but no such file`);
    else if (lines <= MAX_FILE_LINES) {
      problems.push(`${path}: listed, but ${lines} lines need no exception`);
    }
  }
  return problems;
}

/** Something over its limit: where, and how many lines. */
export interface Oversize {
  /** `path` for a file, `path:line name` for a function. */
  readonly where: string;
  /** Its lines. */
  readonly lines: number;
}

/** The lines of a text, as an editor numbers them. */
export function lineCount(text: string): number {
  return text.endsWith("\n")
    ? text.split("\n").length - 1
    : text.split("\n").length;
}

/**
 * The files and functions of one source text that are over their limits: a
 * file listed in `exceptions` may have up to {@linkcode MAX_EXCEPTION_LINES}.
 */
export async function oversized(
  path: string,
  text: string,
  exceptions: readonly Exception[] = EXCEPTIONS,
): Promise<Oversize[]> {
  const { default: ts } = await import("typescript");
  const found: Oversize[] = [];
  const fileLines = lineCount(text);
  const limit = exceptions.some((exception) => exception.path === path)
    ? MAX_EXCEPTION_LINES
    : MAX_FILE_LINES;
  if (fileLines > limit) found.push({ where: path, lines: fileLines });
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
  const lines = new Map<string, number>();
  for await (const path of sourceFiles("src")) {
    const text = await Deno.readTextFile(path);
    lines.set(path, lineCount(text));
    found.push(...await oversized(path, text));
  }
  for (const { where, lines } of found) console.error(`${lines}  ${where}`);
  const problems = exceptionProblems(EXCEPTIONS, (path) => lines.get(path));
  for (const problem of problems) console.error(problem);
  if (found.length > 0 || problems.length > 0) {
    console.error(
      `shape: ${found.length} over the limits (files ${MAX_FILE_LINES} lines, ${MAX_EXCEPTION_LINES} for the ${EXCEPTIONS.length} listed exceptions; functions ${MAX_FUNCTION_LINES}), ${problems.length} problems with the exceptions`,
    );
    Deno.exit(1);
  }
  console.log(
    `shape: ${lines.size} files of src, none over ${MAX_FILE_LINES} lines (${EXCEPTIONS.length} listed exceptions, at most ${MAX_EXCEPTION_LINES}), no function over ${MAX_FUNCTION_LINES}`,
  );
}
