// A copy's lock file that cannot be opened for a while (made immutable: root
// writes through any mode) is not another run's: its refresh is skipped, and
// the run keeps its lock. Before, the first refresh that could not open the
// file marked the lock lost for good, and the run stopped with "lock-lost"
// (review r222a F4 of r221a F2's change: a lock is lost only once its file is
// gone or names another run).

import { ok } from "node:assert/strict";
import { takeFileLock } from "../../src/sync/_file_lock.ts";
import { REFRESH_EVERY } from "../../src/sync/_lease.ts";
import { freshTarget } from "../_sync_fake.ts";
import { chattr, processTest } from "../_processes.ts";

processTest(
  "a lock file that cannot be opened past a refresh stays this run's lock once it can again",
  async () => {
    const path = `${await freshTarget("sync-lock-refresh", "copy.jsonl")}.lock`;
    await chattr("-i", path);
    await Deno.remove(path).catch(() => {});
    const lock = await takeFileLock(path, { wait: 0 });
    try {
      if (!await chattr("+i", path)) {
        console.log("skipped: chattr cannot make a file immutable here");
        return;
      }
      try {
        // Real time: the refresh is the lock's own timer, past one of them.
        await new Promise((done) => setTimeout(done, REFRESH_EVERY * 1.5));
      } finally {
        ok(await chattr("-i", path));
      }
      await lock.assertHeld(); // threw SyncError "lock-lost"
    } finally {
      await lock[Symbol.asyncDispose]();
    }
  },
);
