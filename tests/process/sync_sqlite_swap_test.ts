// Issue 45: "no byte of a file outside the copy's own files changes under a
// racing link swap". SQLite opens its database itself, resolving links, after
// every look the sink can make: another process swaps a symbolic link to an
// outside file in as the database, and a plain file back, again and again,
// while runs sync into it. Before the check of where SQLite opened the file,
// a run wrote the outside file whole (0 → 40,960 bytes within 300 runs).

import { equal, ok } from "node:assert/strict";
import { createSqliteSink, SyncError, syncList } from "../../src/sync/mod.ts";
import { freshTarget, listOf, things } from "../_sync_fake.ts";
import { Command, processTest } from "../_processes.ts";

/** Swaps a link to `outside` in at `path`, and a plain file back, until killed. */
const SWAPPER = `
const [path, outside] = Deno.args;
for (;;) {
  try { Deno.symlinkSync(outside, path + ".l"); } catch { /* left there */ }
  try { Deno.renameSync(path + ".l", path); } catch { /* gone */ }
  try {
    Deno.writeFileSync(path + ".r", new Uint8Array(), { mode: 0o600 });
    Deno.renameSync(path + ".r", path);
  } catch { /* gone */ }
}`;

processTest(
  "SQLite sink: a link swapped in as the database while SQLite opens it (a racing swap, 300 runs) is refused, and the outside file keeps every byte",
  async () => {
    const outside = await freshTarget("sync-sqlite-swap", "outside.db");
    await Deno.writeFile(outside, new Uint8Array(), { mode: 0o600 });
    const path = await freshTarget("sync-sqlite-swap", "copy.db");
    const swapper = new Command("deno", {
      args: ["eval", SWAPPER, path, Deno.realPathSync(outside)],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const service = listOf(() => things(50));
    let refusals = 0;
    try {
      // 300 runs, and more until the swap (a process starting) raced some.
      for (let run = 0; run < 300 || refusals < 10; run++) {
        try {
          using sink = createSqliteSink(path, { table: "things" });
          await syncList(service.client, "things", { id: "thingID", sink });
        } catch (error) {
          ok(error instanceof SyncError, String(error));
          if (error.reason === "link") refusals++;
        }
        equal((await Deno.stat(outside)).size, 0, `run ${run}`);
      }
    } finally {
      swapper.kill();
      await swapper.status;
    }
  },
);
