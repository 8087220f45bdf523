// Issue 48, every entry type-checks for its users: a checkout user maps
// every export path to its file in their own deno.json (README › Install's
// import map, here pointing at this repository) and imports every entry;
// `deno check` passes under Deno's default compiler options, which most
// users keep, and under this project's strict set (`deno check` of the
// repository itself sees only the latter). `tsc --strict` over dist/'s
// declarations is npm_install_test.ts's.
// Needs --allow-run=deno, --allow-read=deno.json,.test-tmp,
// --allow-write=.test-tmp and --allow-sys=loadavg.

import { equal } from "node:assert/strict";
import { textOf } from "./_cli_process.ts";
import { cpuBoundTest } from "./_scaled_deadline.ts";
import { Command } from "../_processes.ts";

const config = JSON.parse(await Deno.readTextFile("deno.json")) as {
  name: string;
  exports: Record<string, string>;
  imports: Record<string, string>;
  compilerOptions: Record<string, unknown>;
};
const CHECKOUT = ".test-tmp/consumer-checkout";

/** README › Install's import map, from the checkout folder to this repository. */
function importMap(): Record<string, string> {
  const imports: Record<string, string> = {};
  for (const [path, file] of Object.entries(config.exports)) {
    const specifier = path === "."
      ? config.name
      : `${config.name}/${path.slice(2)}`;
    imports[specifier] = `../../${file.replace(/^\.\//, "")}`;
  }
  // ./otel's peer, which its users add beside it.
  imports["@opentelemetry/api"] = config.imports["@opentelemetry/api"]!;
  return imports;
}

/** The user's module: every entry, by the names the map gives. */
function consumer(imports: Record<string, string>): string {
  const names = Object.keys(imports).filter((name) =>
    name.startsWith(config.name)
  );
  return `${
    names.map((name, i) => `import * as m${i} from "${name}";`).join("\n")
  }\nexport const all = [${names.map((_, i) => `m${i}`).join(", ")}];\n`;
}

/** `deno check` of the consumer under the config file `file`. */
async function check(file: string) {
  const { code, stdout, stderr } = textOf(
    await new Command("deno", {
      args: ["check", "--quiet", `--config=${file}`, "main.ts"],
      cwd: CHECKOUT,
    }).output(),
  );
  return { code, out: stdout + stderr };
}

cpuBoundTest(
  "README › Install: a checkout user's deno check of every entry passes under Deno's default compiler options and under the project's strict set",
  async () => {
    await Deno.mkdir(CHECKOUT, { recursive: true });
    const imports = importMap();
    equal(Object.keys(imports).length, Object.keys(config.exports).length + 1);
    await Deno.writeTextFile(`${CHECKOUT}/main.ts`, consumer(imports));
    const strict = config.compilerOptions;
    for (
      const option of [
        "strict",
        "exactOptionalPropertyTypes",
        "noUncheckedIndexedAccess",
      ]
    ) {
      equal(strict[option], true, option);
    }
    const configs = {
      "default.json": { imports, lock: false },
      "strict.json": { imports, lock: false, compilerOptions: strict },
    };
    for (const [file, json] of Object.entries(configs)) {
      await Deno.writeTextFile(`${CHECKOUT}/${file}`, JSON.stringify(json));
      const checked = await check(file);
      equal(checked.code, 0, `${file}: ${checked.out}`);
    }
  },
);
