// A SQLite copy named by a relative path goes on when the program changes its
// working folder mid-run: the sink looks its file up where it opened it (the
// check that the file was not removed or replaced took the path as relative).
// In a process of its own: the working folder is the whole process's.

import { equal } from "node:assert/strict";
import { Command, processTest } from "../_processes.ts";

const SCRIPT = `
import { createSqliteSink, syncList } from "${new URL(
  "../../src/sync/mod.ts",
  import.meta.url,
)}";
import { listOf, things } from "${new URL(
  "../_sync_fake.ts",
  import.meta.url,
)}";
const items = things(300);
let moveAt = Infinity;
const service = listOf(() => items, {
  answer: (page, n) => (n === moveAt && Deno.chdir(".."), page),
});
const options = { id: "thingID", maxLimit: 100 };
{
  using sink = createSqliteSink("copy.db", { table: "things" });
  await syncList(service.client, "things", { ...options, sink });
}
using sink = createSqliteSink("copy.db", { table: "things" });
moveAt = service.requests + 2;
const run = await syncList(service.client, "things", { ...options, sink, sweep: Infinity });
console.log(JSON.stringify([run.inserted, run.updated, run.deleted]));
`;

processTest(
  "a SQLite copy by a relative path: the run goes on when the working folder changes mid-run",
  async () => {
    const folder = ".test-tmp/sync-chdir/run";
    await Deno.remove(folder, { recursive: true }).catch(() => {});
    await Deno.mkdir(folder, { recursive: true });
    const output = await new Command("deno", {
      args: ["eval", "--quiet", "--config", "../../../deno.json", SCRIPT],
      cwd: folder,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    equal(new TextDecoder().decode(output.stdout).trim(), "[0,0,0]", stderr);
  },
);
