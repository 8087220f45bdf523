// `deno task check`: every ```ts `@example` in the JSDoc of mod.ts and src/
// is a check that can fail on the module's behaviour. Each must have a
// title, import a value (not only types) from an entry a user imports
// ("@partner-api/client" or one of its subpaths), and call an assertion of
// "node:assert" (or "node:assert/strict"). An example that only builds a
// literal of an interface and tests the literal passes whatever the module
// does. A ```ts ignore block (one that needs a real Redis) is allowed beside
// a runnable example in the same comment. Needs --allow-read=mod.ts,src.
// `--list` prints every example with its verdict.

/** One ```ts block of an `@example` tag. */
interface Example {
  readonly where: string;
  readonly title: string;
  /** Whether a ```ts block follows the tag. */
  readonly typescript: boolean;
  readonly ignored: boolean;
  readonly code: string;
  /** Which comment it is in, to find a runnable sibling of an ignored one. */
  readonly comment: string;
}

const examples: Example[] = [];
for (const file of ["mod.ts", ...await sourceFiles("src")]) {
  examples.push(...examplesIn(file, await Deno.readTextFile(file)));
}
const failures: string[] = [];
for (const example of examples) {
  const fault = faultOf(example);
  if (Deno.args.includes("--list")) {
    console.log(`${fault ?? "ok"}\t${example.where}\t${example.title}`);
  }
  if (fault !== undefined) {
    failures.push(`${example.where} "${example.title}": ${fault}`);
  }
}
if (failures.length > 0) {
  console.error(failures.join("\n"));
  console.error(`doc examples: ${failures.length} of ${examples.length} fail`);
  Deno.exit(1);
}
console.log(`doc examples: ${examples.length}, each asserts: ok`);

/** What is wrong with `example`, or `undefined`. */
function faultOf(example: Example): string | undefined {
  if (example.title === "") return "no title";
  if (!example.typescript) return "no ```ts block after the tag";
  if (example.ignored) {
    const runnable = examples.some((other) =>
      other.comment === example.comment && !other.ignored
    );
    return runnable ? undefined : "ignored, with no runnable example beside it";
  }
  const imports = [
    ...example.code.matchAll(
      /^import\s+(type\s+)?([^;]*?)\s+from\s+"([^"]+)";/gm,
    ),
  ];
  const values = (clause: string) =>
    clause.replace(/^\{|\}$/g, "").split(",").map((name) => name.trim())
      .filter((name) => name !== "" && !name.startsWith("type "));
  const fromEntry = imports.some(([, type, clause, from]) =>
    /^@partner-api\/client(\/|$)/.test(from!) && type === undefined &&
    values(clause!).length > 0
  );
  if (!fromEntry) return "imports no value from @partner-api/client";
  const asserts = imports
    .filter(([, type, , from]) =>
      /^node:assert(\/strict)?$/.test(from!) && !type
    )
    .flatMap(([, , clause]) => values(clause!));
  const called = asserts.some((name) =>
    new RegExp(`(^|[^\\w.])${name}(\\.\\w+)?\\(`).test(example.code)
  );
  return called ? undefined : "calls no assertion of node:assert";
}

/** The ```ts blocks under `@example` tags of the JSDoc comments in `text`. */
function examplesIn(file: string, text: string): Example[] {
  const found: Example[] = [];
  for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const lines = comment[0].split("\n").map((line) =>
      line.replace(/^\s*\*? ?/, "")
    );
    const line = text.slice(0, comment.index).split("\n").length;
    lines.forEach((tag, at) => {
      const title = /^@example\b(.*)$/.exec(tag)?.[1]?.trim();
      if (title === undefined) return;
      const fence = /^```(\S*)\s*(.*)$/.exec(lines[at + 1] ?? "");
      const end = lines.indexOf("```", at + 2);
      found.push({
        where: `${file}:${line + at}`,
        title,
        typescript: fence !== null && ["ts", "typescript"].includes(fence[1]!),
        ignored: /\bignore\b/.test(fence?.[2] ?? ""),
        code: lines.slice(at + 2, end).join("\n"),
        comment: `${file}:${line}`,
      });
    });
  }
  return found;
}

/** The .ts files under `dir` but tests, sorted. */
async function sourceFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) files.push(...await sourceFiles(path));
    else if (path.endsWith(".ts") && !path.endsWith("_test.ts")) {
      files.push(path);
    }
  }
  return files.sort();
}
