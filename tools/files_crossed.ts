// `deno task files-crossed`: how many files of src/ a path through the
// module runs code in, counted from V8's own coverage, not read from the
// imports. A measure, not a goal (issue 48): docs/architecture.md prints the
// figures with the day they were measured, and no check reads them.
//
// Each path runs twice in a fresh process (tools/_files_crossed_scenario.ts,
// against an in-memory fetch, so no fake service is counted): once up to the
// call (imports, options, a warm-up) and once with the call. A file is
// crossed when some function of it ran more often in the second run.
//
// Needs --allow-run=deno, --allow-read=.test-tmp,tools and
// --allow-write=.test-tmp.

const DIR = ".test-tmp/files_crossed";
const SCENARIO = new URL("./_files_crossed_scenario.ts", import.meta.url);
const PATHS = [
  "cold getToken",
  "client.fetch",
  "first list page",
  "one syncList window",
] as const;

type PathName = typeof PATHS[number];

async function main(): Promise<void> {
  console.log(
    `files of src/ each path runs code in, ${
      new Date().toISOString().slice(0, 10)
    }:`,
  );
  for (const path of PATHS) {
    const files = await filesCrossed(path);
    console.log(`${path}: ${files.length} files`);
    for (const file of files) console.log(`  ${file}`);
  }
}

/** The src/ files whose functions ran more with the call than without. */
async function filesCrossed(path: PathName): Promise<string[]> {
  const before = await functionCounts(path, "before");
  const after = await functionCounts(path, "with");
  const crossed = new Set<string>();
  for (const [key, count] of after) {
    if (count > (before.get(key) ?? 0)) crossed.add(key.split("#")[0]!);
  }
  return [...crossed].sort();
}

/** Calls per function (`file#offset`) of src/, one run of the scenario. */
async function functionCounts(
  path: PathName,
  phase: "before" | "with",
): Promise<Map<string, number>> {
  const dir = `${DIR}/${path.replaceAll(/\W+/g, "_")}_${phase}`;
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  const { success, stderr } = await new Deno.Command("deno", {
    args: [
      "run",
      `--coverage=${dir}`,
      "--allow-net=127.0.0.1",
      SCENARIO.href,
      path,
      phase,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!success) throw new Error(new TextDecoder().decode(stderr));
  const counts = new Map<string, number>();
  for await (const entry of Deno.readDir(dir)) {
    const report = JSON.parse(await Deno.readTextFile(`${dir}/${entry.name}`));
    const file = srcFile(report.url);
    if (file === undefined) continue;
    for (const fn of report.functions) {
      // The module's own top level runs once at import: not a call.
      if (fn.functionName === "" && fn.ranges[0].startOffset === 0) continue;
      counts.set(`${file}#${fn.ranges[0].startOffset}`, fn.ranges[0].count);
    }
  }
  return counts;
}

function srcFile(url: string): string | undefined {
  const match = /\/(src\/.+\.ts)$/.exec(url);
  return match?.[1];
}

await main();
