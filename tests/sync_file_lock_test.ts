// The JSONL sink's lock file under a race for its stale lock (issue 36's
// "six runs racing for one stale lock", in one process): one holder at a
// time, and no holder ever finds its fresh lock gone. Taking over by
// renaming the lock away and back, a run that judged it stale a moment too
// late moved the new holder's lock for a while, and the holder stopped with
// "lock-lost" (CI, 2026-11-25). And a dead run's lock dated an hour ahead
// (the wall clock stepped back after it died), JSONL and SQLite: taken over
// once seen unchanged for 5 s on the steady clock, where before it was
// waited for without limit (issue 46).

import { equal, ok, rejects } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { takeFileLock } from "../src/sync/_file_lock.ts";
import {
  createJsonlSink,
  createSqliteSink,
  SyncError,
} from "../src/sync/mod.ts";

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

const HOUR = 3_600_000;

/** A clock 1 s later at each reading: the 5 s a dead lock is waited out pass in a few looks. */
function hurriedClock(): () => number {
  let time = Date.now();
  return () => time += 1_000;
}

Deno.test("a dead run's JSONL lock dated an hour ahead is taken over once seen unchanged for 5 s (issue 46)", async () => {
  await Deno.mkdir(DIR, { recursive: true });
  const path = `${DIR}/ahead.lock`;
  await Deno.writeTextFile(path, JSON.stringify({ owner: "dead", pid: 1 }));
  const ahead = new Date(Date.now() + HOUR);
  await Deno.utime(path, ahead, ahead);
  let waited = 0;
  const lock = await takeFileLock(path, {
    wait: 3_000,
    onWait: () => waited++,
  }, hurriedClock());
  const owner = JSON.parse(await Deno.readTextFile(path)).owner;
  await lock[Symbol.asyncDispose]();
  equal(owner, lock.token);
  equal(waited, 1);
});

Deno.test("a dead run's SQLite lease dated an hour ahead is taken over once seen unchanged for 5 s (issue 46)", async () => {
  const database = new DatabaseSync(":memory:");
  const table = "ahead";
  {
    await using _ = await createSqliteSink(database, { table }).lock!();
  }
  database.exec(
    `INSERT INTO partner_api_sync_lease VALUES ('${table}', 'dead', ${
      Date.now() + HOUR
    })`,
  );
  let waited = 0;
  const sink = createSqliteSink(database, {
    table,
    lockWait: 3_000,
    onLockWait: () => waited++,
    now: hurriedClock(),
  });
  const taken = await sink.lock!();
  const holder = database.prepare("SELECT owner FROM partner_api_sync_lease")
    .get() as { owner: string };
  await taken[Symbol.asyncDispose]();
  database.close();
  ok(holder.owner !== "dead");
  equal(waited, 1);
});

Deno.test("a JSONL lock is stamped by its run's clock as it is made: a second run on a clock an hour ahead of the file system's waits for it, as on SQLite", async () => {
  await Deno.mkdir(DIR, { recursive: true });
  const path = `${DIR}/clock-ahead.jsonl`;
  await Deno.remove(`${path}.lock`).catch(() => {});
  const now = () => Date.now() + HOUR;
  const first = await createJsonlSink(path, { now }).lock!();
  try {
    const second = createJsonlSink(path, { now, lockWait: 0 }).lock!();
    await rejects(second, (error: unknown) => {
      ok(error instanceof SyncError, String(error));
      equal(error.reason, "locked");
      return true;
    });
  } finally {
    await first[Symbol.asyncDispose]();
  }
});

Deno.test("a JSONL run taking over a dead run's lock removes the side file that run was writing when it died, and no other run's, nor a file an owner not shaped as a token names (attack r196a F1: killed runs left one each, for good; review r200 R3: an owner 'x/../victim' named a file outside the copy's)", async () => {
  const folder = `${DIR}/litter`, path = `${folder}/copy.jsonl`;
  const side = `${path}.checkpoint.json`;
  const [dead, alive] = [1, 2].map((pid) =>
    `${pid}.${crypto.randomUUID()}`
  ) as [
    string,
    string,
  ];
  const takeOver = async (owner: string) => {
    await Deno.writeTextFile(`${path}.lock`, JSON.stringify({ owner, pid: 1 }));
    const sink = createJsonlSink(path, {
      lockWait: 30_000,
      now: hurriedClock(),
    });
    await (await sink.lock!())[Symbol.asyncDispose]();
  };
  await Deno.mkdir(`${side}.x`, { recursive: true });
  for (const name of [`${side}.${dead}.tmp`, `${side}.${alive}.tmp`]) {
    await Deno.writeTextFile(name, "{");
  }
  await Deno.writeTextFile(`${folder}/victim.tmp`, "{");
  await takeOver("x/../victim");
  await takeOver(dead);
  const left = [...Deno.readDirSync(folder)].map(({ name }) => name).sort();
  const names = [
    `copy.jsonl.checkpoint.json.${alive}.tmp`,
    "copy.jsonl.checkpoint.json.x",
    "victim.tmp",
  ];
  equal(left.join(" "), names.sort().join(" "));
  await Deno.remove(folder, { recursive: true });
});
