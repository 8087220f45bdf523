// Issue 37, friction 5: an offline reference. `deno task doc` writes the
// HTML reference of every entry (`deno doc --html`), here into .test-tmp.

import { ok } from "node:assert/strict";
import { Command, processTest } from "../_processes.ts";

processTest(
  "deno task doc writes an HTML page for every entry and symbol",
  async () => {
    const out = ".test-tmp/reference";
    await Deno.remove(out, { recursive: true }).catch(() => {});
    const task = JSON.parse(await Deno.readTextFile("deno.json")).tasks.doc;
    // As the task runs it, into `out`: its last command (the first installs the packages).
    const args = task.split(" && ").at(-1).split(" ").slice(1);
    const result = await new Command("deno", { args: [...args, out] }).output();
    ok(result.success, new TextDecoder().decode(result.stderr));
    const exports = Object.keys(
      JSON.parse(await Deno.readTextFile("deno.json")).exports,
    );
    const index = await Deno.readTextFile(`${out}/index.html`);
    for (const entry of exports) {
      const name = entry === "." ? "partner-api" : entry.slice(2);
      ok(index.includes(name), `the index names ${entry}`);
    }
    for (
      const page of [
        "client/~/createClient.html",
        "client/~/PartnerClient.pages.html",
        "errors/~/TokenRequestError.prototype.hint.html",
        "testing/~/startFakePartnerApi.html",
      ]
    ) {
      ok((await Deno.stat(`${out}/${page}`)).isFile, page);
    }
  },
);
