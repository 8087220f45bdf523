// Every code block of the README is checked: TypeScript blocks run under
// `deno test --doc`; this test covers the rest. Needs
// --allow-read=README.md,docs,deno.json,examples.

import { deepStrictEqual, ok } from "node:assert/strict";
import { processTest } from "../_processes.ts";

// The README and its reference pages in docs/, read as one text.
const docs = [];
for await (const entry of Deno.readDir("docs")) {
  if (entry.name.endsWith(".md")) docs.push(`docs/${entry.name}`);
}
const readme = (await Promise.all(
  ["README.md", ...docs.sort()].map((file) => Deno.readTextFile(file)),
)).join("\n");
const tasks = Object.keys(
  JSON.parse(await Deno.readTextFile("deno.json")).tasks,
);

function blocks(info: RegExp): string[] {
  const found: string[] = [];
  for (const match of readme.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)) {
    if (info.test(match[1]!)) found.push(match[2]!);
  }
  return found;
}

processTest(
  "every `ts ignore` block of the README is a type-checked example",
  async () => {
    const ignored = blocks(/^ts ignore$/);
    const examples = await Promise.all(
      [
        "quick_start.ts",
        "live_and_nightly.ts",
        "redis_fleet.ts",
        "redis_rate_limit.ts",
      ].map(
        async (name) => {
          const example = await Deno.readTextFile(`examples/${name}`);
          return example.slice(example.indexOf("import "));
        },
      ),
    );
    // The quick start, live traffic first, and the Redis fleet and limiter
    // (they need a Redis server).
    deepStrictEqual(ignored, examples);
  },
);

processTest(
  "every shell command of the README names a task or file that exists",
  async () => {
    for (const block of blocks(/^sh$/)) {
      for (
        const [, task] of block.matchAll(/deno task (?:--\S+ )*([\w:-]+)/g)
      ) {
        ok(tasks.includes(task!), `deno task ${task}`);
      }
    }
    for (const [, file] of readme.matchAll(/`(examples\/[\w.]+\.ts)`/g)) {
      await Deno.stat(file!);
    }
  },
);

processTest("the README's sample output matches what the demo prints", () => {
  const [sample] = blocks(/^text$/);
  ok(sample?.includes("$ partner-api token"));
  ok(sample?.includes(", 1 token request ("));
});
