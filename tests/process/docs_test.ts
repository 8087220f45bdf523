// JSR readiness: every entry point has a module doc with an example, and
// every exported symbol has JSDoc with at least one @example (run by
// `deno test --doc`). Needs --allow-run=deno and --allow-read=deno.json.

import { deepStrictEqual } from "node:assert/strict";
import { Command, processTest } from "../_processes.ts";

interface DocNode {
  module_doc?: { tags?: { kind: string }[] };
  symbols?: {
    name: string;
    declarations: {
      kind?: string;
      jsDoc?: { tags?: { kind: string }[] };
    }[];
  }[];
}

const exports: Record<string, string> =
  JSON.parse(await Deno.readTextFile("deno.json")).exports;

processTest(
  "every entry point and exported symbol has an @example",
  async () => {
    const output = await new Command("deno", {
      args: ["doc", "--json", ...Object.values(exports)],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const { nodes } = JSON.parse(new TextDecoder().decode(output.stdout)) as {
      nodes: Record<string, DocNode>;
    };
    const hasExample = (tags: { kind: string }[] | undefined) =>
      tags?.some((tag) => tag.kind === "example") ?? false;
    // A re-export shows as a reference when another entry point (mod.ts)
    // carries the declaration itself: it counts if that one has an example.
    const documented = new Set<string>();
    const references = new Set<string>();
    const missing: string[] = [];
    for (const [module, node] of Object.entries(nodes)) {
      if (!hasExample(node.module_doc?.tags)) missing.push(`module ${module}`);
      for (const symbol of node.symbols ?? []) {
        if (symbol.declarations.some((d) => hasExample(d.jsDoc?.tags))) {
          documented.add(symbol.name);
        } else if (symbol.declarations.every((d) => d.kind === "reference")) {
          references.add(symbol.name);
        } else missing.push(symbol.name);
      }
    }
    missing.push(...[...references].filter((name) => !documented.has(name)));
    deepStrictEqual(missing, []);
  },
);
