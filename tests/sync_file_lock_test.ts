// The JSONL sink's lock file under a race for its stale lock (issue 36's
// "six runs racing for one stale lock", in one process): one holder at a
// time, and no holder ever finds its fresh lock gone. Taking over by
// renaming the lock away and back, a run that judged it stale a moment too
// late moved the new holder's lock for a while, and the holder stopped with
// "lock-lost" (CI, 2026-11-25).

import { equal } from "node:assert/strict";
import { takeFileLock } from "../src/sync/_file_lock.ts";
import { SyncError } from "../src/sync/mod.ts";

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

Deno.test("a takeover racing the stale holder's own release fails, if at all, with a SyncError naming the file, never a bare ENOENT (issue 45)", async () => {
  await Deno.mkdir(DIR, { recursive: true });
  const raw: string[] = [];
  // 16 of 300 rounds met a bare ENOENT before (the takeover's unlink).
  for (let round = 0; round < 150; round++) {
    const path = `${DIR}/release-${round}.lock`;
    await Deno.remove(path).catch(() => {});
    const stale = await takeFileLock(path, { wait: 0 });
    const past = new Date(Date.now() - 60_000);
    await Deno.utime(path, past, past);
    const results = await Promise.allSettled([
      takeFileLock(path, { wait: 1000 }).then((lock) =>
        lock[Symbol.asyncDispose]()
      ),
      stale[Symbol.asyncDispose](),
    ]);
    for (const result of results) {
      if (result.status === "fulfilled") continue;
      if (!(result.reason instanceof SyncError)) {
        raw.push(String(result.reason));
      } else equal(result.reason.path?.startsWith(path), true);
    }
  }
  equal(raw.length, 0, raw.slice(0, 3).join("\n"));
});
