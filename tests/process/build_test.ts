// README › Install (On Node and Bun without JSR): `deno task build` as
// written, then what a Node TypeScript user does with dist/: tsc --strict
// with @types/node (no Deno types) over a file that imports every entry but
// the Deno-only ./kv. And the build's own check that no bundle holds a
// `using`, which Node 20 and 22 cannot parse, on a sample.
// Needs --allow-run=deno,node, --allow-read=deno.json,
// --allow-write=.test-tmp and --allow-sys=loadavg.

import { deepStrictEqual, equal, match, ok } from "node:assert/strict";
import { textOf } from "./_cli_process.ts";
import { cpuBoundTest } from "./_scaled_deadline.ts";
import { Command } from "../_processes.ts";

const { exports, imports } = JSON.parse(
  await Deno.readTextFile("deno.json"),
) as { exports: Record<string, string>; imports: Record<string, string> };
const names = Object.keys(exports).map((path) =>
  path === "." ? "partner-api" : path.slice(2)
);
// ./kv takes a `Deno.Kv`: a Deno-only entry, like its bundle.
const forNode = names.filter((name) => name !== "kv");

/** Runs `command`; its exit code, and stdout and stderr as one text. */
async function run(command: string, args: string[]) {
  const { code, stdout, stderr } = textOf(
    await new Command(command, { args, stdout: "piped", stderr: "piped" })
      .output(),
  );
  return { code, out: stdout + stderr };
}

/** tsc --strict, as a Node project would run it, on one file. */
function tsc(file: string) {
  return run("deno", [
    "run",
    "--allow-read",
    "--allow-env",
    `${imports.typescript}/tsc`,
    "--strict",
    "--noEmit",
    ...["--module", "nodenext", "--moduleResolution", "nodenext"],
    ...["--target", "es2022", "--types", "node"],
    file,
  ]);
}

// Every entry, and a use of the names a Node user reaches for first.
const consumer = `${
  forNode.map((name, i) => `import * as m${i} from "../../dist/${name}.mjs";`)
    .join("\n")
}
import { createClient } from "../../dist/partner-api.mjs";
import { createFakePartnerService } from "../../dist/testing.mjs";
import { openTelemetry } from "../../dist/otel.mjs";
import { syncList } from "../../dist/sync.mjs";

const service = createFakePartnerService();
const client = createClient({
  environment: service.environmentAt("http://127.0.0.1:1", "http://127.0.0.1:2"),
  ...service.credentials,
  onEvent: openTelemetry(),
});
const left: number | undefined = client.tokenProvider.quota?.buckets[0]?.remaining;
export const used = [left, syncList, ${
  forNode.map((_, i) => `m${i}`).join(", ")
}];
`;

// Two tests, under a deadline that scales with the load (the build and
// both type-checks in one took up to 59 s on a busy machine); the second
// uses the first's dist/.
cpuBoundTest(
  "README › Install: `deno task build` writes .mjs and .d.ts for every entry, and the README's Node line loads the root",
  async () => {
    const build = await run("deno", ["task", "build"]);
    equal(build.code, 0, build.out);
    for (const name of names) {
      await Deno.stat(`dist/${name}.mjs`);
      await Deno.stat(`dist/${name}.d.ts`);
    }

    // The README's own Node line, as written.
    const node = await run("node", [
      "-e",
      'import("./dist/partner-api.mjs").then((m) => console.log(Object.keys(m).length))',
    ]);
    equal(node.code, 0, node.out);
    ok(Number(node.out.trim()) > 10, node.out);
  },
);

cpuBoundTest(
  "README › Install: a Node TypeScript consumer of dist/ type-checks with tsc --strict, and a wrong call is caught",
  async () => {
    await Deno.mkdir(".test-tmp/node-consumer", { recursive: true });
    await Deno.writeTextFile(
      ".test-tmp/node-consumer/package.json",
      '{ "type": "module" }\n',
    );
    await Deno.writeTextFile(".test-tmp/node-consumer/main.ts", consumer);
    const good = await tsc(".test-tmp/node-consumer/main.ts");
    deepStrictEqual([good.code, good.out], [0, ""]);

    await Deno.writeTextFile(
      ".test-tmp/node-consumer/wrong.ts",
      `import { createClient } from "../../dist/partner-api.mjs";
createClient({ environment: "https://partner.example/api/", clientId: 1 });
`,
    );
    const wrong = await tsc(".test-tmp/node-consumer/wrong.ts");
    equal(wrong.code, 2, wrong.out);
    match(wrong.out, /wrong\.ts\(2,\d+\): error TS2322/);
  },
);

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
    const { lowered, ...verdicts } = JSON.parse(checked.out);
    deepStrictEqual(verdicts, {
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
