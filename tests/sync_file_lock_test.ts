// The JSONL sink's lock file under a race for its stale lock (issue 36's
// "six runs racing for one stale lock", in one process): one holder at a
// time, and no holder ever finds its fresh lock gone. Taking over by
// renaming the lock away and back, a run that judged it stale a moment too
// late moved the new holder's lock for a while, and the holder stopped with
// "lock-lost" (CI, 2026-11-25).

import { equal } from "node:assert/strict";
import { takeFileLock } from "../src/sync/_file_lock.ts";

const DIR = ".test-tmp/sync-file-lock";

Deno.test("racing runs take over one stale lock one at a time, and no holder ever loses its fresh lock", async () => {
  await Deno.mkdir(DIR, { recursive: true });
  for (let round = 0; round < 8; round++) {
    const path = `${DIR}/race-${round}.lock`;
    await Deno.writeTextFile(path, JSON.stringify({ owner: "gone", pid: 1 }));
    const past = new Date(Date.now() - 60_000);
    await Deno.utime(path, past, past);
    let holding = 0;
    let most = 0;
    let lost = 0;
    await Promise.all(Array.from({ length: 6 }, async () => {
      const lock = await takeFileLock(path, { wait: 60_000 });
      most = Math.max(most, ++holding);
      try {
        // Long enough for the others' takeovers to run beside it.
        for (let i = 0; i < 50; i++) await lock.assertHeld();
      } catch {
        lost++;
      } finally {
        holding--;
        await lock[Symbol.asyncDispose]();
      }
    }));
    equal(lost, 0, `round ${round}: a holder lost its lock`);
    equal(most, 1, `round ${round}: two runs held the lock at once`);
  }
});
