// The build's own check that no bundle holds a `using`, which Node 20 and
// 22 cannot parse, and its rewrite, on a sample. What `deno task build`
// writes, and what Node users do with dist/, is npm_install_test.ts's: one
// build for every test that reads dist/ (test files run side by side under
// `deno test --parallel`, and two builds writing dist/ at once would each
// read the other's half-written files).
// Needs --allow-run=deno,node, --allow-write=.test-tmp and
// --allow-sys=loadavg.

import { deepStrictEqual, equal } from "node:assert/strict";
import { textOf } from "./_cli_process.ts";
import { cpuBoundTest } from "./_scaled_deadline.ts";
import { Command } from "../_processes.ts";

/** Runs `command`; its exit code, and stdout and stderr as one text. */
async function run(command: string, args: string[]) {
  const { code, stdout, stderr } = textOf(
    await new Command(command, { args, stdout: "piped", stderr: "piped" })
      .output(),
  );
  return { code, out: stdout + stderr };
}

/**
 * Every kind of `using` declaration, and `using` where it declares nothing;
 * `main` logs the order in which the resources are disposed.
 */
const SAMPLE = `// using comment = "none";
const using = "using text"; // a name, and a string
export async function main(log) {
  {
    using a = resource("a", log);
    await using b = resource("b", log);
    for (using c of [resource("c", log)]) log.push("loop " + using);
    log.push("block end");
  }
  return log;
}
function resource(name, log) {
  return { [Symbol.dispose]: () => void log.push("dispose " + name) };
}
`;

cpuBoundTest(
  "the build fails on a bundle that holds a using declaration, and its rewrite for Node 20 leaves none and disposes in the same order",
  async () => {
    await Deno.mkdir(".test-tmp", { recursive: true });
    await Deno.writeTextFile(".test-tmp/using_sample.mjs", SAMPLE);
    const checked = await run("deno", [
      "run",
      "--allow-env",
      "--allow-read=.test-tmp",
      "tests/process/node20_syntax_script.ts",
      ".test-tmp/using_sample.mjs",
    ]);
    equal(checked.code, 0, checked.out);
    const { lowered, found, refused, foundAfter, refusedAfter } = JSON.parse(
      checked.out,
    );
    deepStrictEqual({ found, refused, foundAfter, refusedAfter }, {
      found: ["5:5", "6:5", "7:10"],
      refused: true,
      foundAfter: [],
      refusedAfter: false,
    });
    const { main } = await import(
      `data:text/javascript,${encodeURIComponent(SAMPLE)}`
    );
    const onDeno = await main([]);
    equal(onDeno.length, 5);
    const onNode = await run("node", [
      "--input-type=module",
      "-e",
      `${lowered}\nconsole.log(JSON.stringify(await main([])));`,
    ]);
    equal(onNode.code, 0, onNode.out);
    deepStrictEqual(JSON.parse(onNode.out), onDeno);
  },
);

cpuBoundTest(
  "the build removes an 'if (import.meta.main)' run without an else, keeps one with an else (its else would go) and every string or comment naming it, and fails on a chunk that still reads import.meta.main (r76 F4)",
  async () => {
    const sample = `export const text = "import.meta.main"; // import.meta.main
if (import.meta.main) await run();
if (import.meta.main) run(); else setup();
function run() {}
function setup() {}
`;
    await Deno.mkdir(".test-tmp", { recursive: true });
    await Deno.writeTextFile(".test-tmp/main_sample.mjs", sample);
    const checked = await run("deno", [
      "run",
      "--allow-env",
      "--allow-read=.test-tmp",
      "tests/process/node20_syntax_script.ts",
      ".test-tmp/main_sample.mjs",
    ]);
    equal(checked.code, 0, checked.out);
    const { withoutMain, mainRunLeft } = JSON.parse(checked.out);
    equal(
      withoutMain,
      sample.replace("if (import.meta.main) await run();", ""),
    );
    deepStrictEqual(mainRunLeft, [true, true]);
    const plain = sample.split("\n").filter((line) => !line.startsWith("if"))
      .join("\n");
    await Deno.writeTextFile(".test-tmp/main_sample.mjs", plain);
    const clean = await run("deno", [
      "run",
      "--allow-env",
      "--allow-read=.test-tmp",
      "tests/process/node20_syntax_script.ts",
      ".test-tmp/main_sample.mjs",
    ]);
    deepStrictEqual(JSON.parse(clean.out).mainRunLeft, [false, false]);
  },
);
