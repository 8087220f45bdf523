// The SQLite and JSONL sinks: items and checkpoint commit together, a
// resumed run cuts a JSONL file back to what its checkpoint covers, a full
// run rewrites it, and bad table names are refused.

import { DatabaseSync } from "node:sqlite";
import { rejects } from "node:assert/strict";
import {
  createJsonlSink,
  createPostgresSink,
  createSqliteSink,
  SyncError,
  syncList,
  type SyncOptions,
} from "../src/sync/mod.ts";
import { freshTarget, inProcess, listOf } from "./_sync_fake.ts";
import { checkpointAt } from "./sync_fixtures.ts";
import { withFakeTimers } from "./_helpers.ts";
import { STALE_AFTER, waitForLock } from "../src/sync/_lease.ts";
import { systemNow } from "./_system_clock.ts";

function equal<T>(actual: T, expected: T, message = "values differ"): void {
  if (actual !== expected) {
    throw new Error(`${message}: ${actual} !== ${expected}`);
  }
}

const byDate = { id: "transactionID", sortBy: "creationDate" } as const;

const fresh = (name: string) => freshTarget("sync-sinks", name);

/** Syncs the fake's transactions into the JSONL file `path`. */
function syncJsonl(
  fake: ReturnType<typeof inProcess>,
  path: string,
  more: Omit<SyncOptions<unknown>, "id" | "sink"> = {},
) {
  return syncList(fake.client, "transactions", {
    ...byDate,
    ...more,
    sink: createJsonlSink(path),
  });
}

function jsonlIds(text: string): string[] {
  return text.split("\n").filter((line) => line !== "").map((line) =>
    JSON.parse(line).transactionID
  );
}

Deno.test("SQLite sink: a file copy, reopened, holds every item once and its checkpoint", async () => {
  const path = await fresh("copy.db");
  const fake = inProcess({ items: { transactions: 250 } });
  {
    using sink = createSqliteSink(path, { table: "transactions" });
    await syncList(fake.client, "transactions", {
      ...byDate,
      sink,
      limit: 40,
      maxLimit: 60,
    });
  }
  fake.service.insertTransactions(7);
  {
    using sink = createSqliteSink(path, { table: "transactions" });
    const result = await syncList(fake.client, "transactions", {
      ...byDate,
      sink,
    });
    equal(result.written, 7);
  }
  const database = new DatabaseSync(path);
  const row = database.prepare(
    'SELECT count(*) AS n, count(DISTINCT id) AS d FROM "transactions"',
  ).get() as { n: number; d: number };
  database.close();
  equal(row.n, 257);
  equal(row.d, 257);
});

Deno.test("SQLite sink: a failing write commits nothing of its batch", async () => {
  const database = new DatabaseSync(":memory:");
  const sink = createSqliteSink<{ id: string }>(database, { table: "items" });
  const checkpoint = {
    version: 1 as const,
    path: "items",
    sortBy: "id",
    id: "id",
    query: {},
    edge: { value: "b", id: "b" },
    offset: 2,
    full: false,
    complete: false,
  };
  await (await sink.lock!())[Symbol.asyncDispose](); // creates the tables
  database.exec(
    "CREATE TRIGGER refuse BEFORE INSERT ON \"items\" WHEN NEW.id = 'b' BEGIN SELECT RAISE(ABORT, 'no'); END",
  );
  let failed = false;
  await sink.write([{ id: "a" }, { id: "b" }], checkpoint, ["a", "b"]).catch(
    () => failed = true,
  );
  equal(failed, true);
  const rows = database.prepare('SELECT count(*) AS n FROM "items"').get() as {
    n: number;
  };
  equal(rows.n, 0);
  equal(await sink.load(), undefined);
  database.close();
});

Deno.test("SQLite sink on a DatabaseSync of the caller's: a write inside the caller's open transaction leaves it theirs to end (their ROLLBACK undoes the copy with their own rows), and close() ends none", async () => {
  const database = new DatabaseSync(":memory:");
  database.exec("CREATE TABLE mine (a INTEGER)");
  const sink = createSqliteSink<{ id: string }>(database, { table: "items" });
  await (await sink.lock!())[Symbol.asyncDispose](); // creates the tables
  database.exec("BEGIN");
  database.exec("INSERT INTO mine VALUES (1)");
  const edge = { value: "b", id: "b" };
  const checkpoint = {
    ...checkpointAt("items", 2),
    sortBy: "id",
    id: "id",
    edge,
  };
  await sink.write([{ id: "a" }, { id: "b" }], checkpoint, ["a", "b"]);
  equal(database.isTransaction, true, "the caller's transaction is open");
  sink.close();
  equal(database.isTransaction, true, "still open after close()");
  database.exec("ROLLBACK");
  const count = (table: string) =>
    (database.prepare(`SELECT count(*) AS n FROM ${table}`).get() as {
      n: number;
    }).n;
  equal(count("mine"), 0);
  equal(count('"items"'), 0);
  database.close();
});

Deno.test('SQLite sink after close(): every step rejects with SyncError ("file"), and a lease it held goes with it, so the next run takes the copy at once', async () => {
  const path = await fresh("closed.db");
  const sink = createSqliteSink(path, { table: "items", lockWait: 0 });
  const lock = await sink.lock!();
  sink.close();
  const step = (run: () => Promise<unknown>) =>
    run().then(() => undefined, (error) => error);
  for (
    const failed of [
      await step(() => sink.load()),
      await step(() => sink.write([], checkpointAt("items", 0), [])),
      await step(() => sink.lock!()),
    ]
  ) {
    equal(failed instanceof SyncError && failed.reason, "file");
    equal((failed as SyncError).path, path);
  }
  await lock[Symbol.asyncDispose](); // after close(): nothing left to release
  using next = createSqliteSink(path, { table: "items", lockWait: 0 });
  await (await next.lock!())[Symbol.asyncDispose](); // not "locked"
  const memory = createSqliteSink(":memory:", { table: "items" });
  memory.close();
  const failed = await step(() => memory.load());
  equal(failed instanceof SyncError && failed.reason, "file");
});

Deno.test("syncList ends after its signal while a sink's write hangs (a database that stopped answering), at most as long as a lock stays fresh, and lets go of the lock only once that write settles; one that ends at once has let go first", async () => {
  const fake = inProcess({ items: { transactions: 3 } });
  let writing!: () => void;
  let finish!: () => void;
  const writeAsked = new Promise<void>((resolve) => writing = resolve);
  let released = 0;
  let hang = true;
  const sink = {
    load: () => Promise.resolve(undefined),
    write: () => {
      writing();
      if (!hang) return Promise.resolve();
      return new Promise<void>((resolve) => finish = resolve);
    },
    lock: () =>
      Promise.resolve({
        [Symbol.asyncDispose]: () => Promise.resolve(void released++),
      }),
  };
  const reason = new Error("stop");
  const started = (signal: AbortSignal) =>
    syncList(fake.client, "transactions", { ...byDate, sink, signal });
  await withFakeTimers(async (timers) => {
    const controller = new AbortController();
    const run = started(controller.signal).catch((error) => error);
    await writeAsked;
    controller.abort(reason);
    await timers.tickAsync(STALE_AFTER);
    equal(await run, reason);
    equal(released, 0, "the lock is kept while the write is in flight");
    finish();
    await timers.tickAsync(0);
    equal(released, 1, "released once the write settled");
  });
  hang = false;
  const controller = new AbortController();
  const run = started(controller.signal).catch((error) => error);
  controller.abort(reason);
  equal(await run, reason);
  equal(released, 2, "released before the run settled");
});

Deno.test('SQLite: while another connection holds the database\'s write lock, a run waits for it without blocking the thread, stops at its signal, and gives up after lockWait with SyncError "locked" (it blocked 10 s at a time, Ctrl-C unheard, then threw a plain Error)', async () => {
  const fake = inProcess({ items: { transactions: 30 } });
  const path = await fresh("held.db");
  let wrote = () => {};
  const run = (
    options: {
      lockWait?: number;
      signal?: AbortSignal;
      onLockWait?: (holder: string) => void;
    },
  ) => {
    const { signal, ...lock } = options;
    const sink = createSqliteSink(path, { table: "transactions", ...lock });
    const write: typeof sink.write = (...batch) => {
      wrote();
      return sink.write(...batch);
    };
    return syncList(fake.client, "transactions", {
      ...byDate,
      sink: { ...sink, write },
      ...(signal && { signal }),
    }).finally(() => sink.close());
  };
  await run({});
  fake.service.insertTransactions(3);
  const other = new DatabaseSync(path);
  // Taken once the run holds its lease, before its first write.
  const holdOnList = () => {
    const first = fake.listRequests + 1;
    fake.beforeList = (n) =>
      void (n === first && other.exec("BEGIN IMMEDIATE"));
  };
  holdOnList();
  const heard: string[] = [];
  const onLockWait = (holder: string) => heard.push(holder);
  const refused = await run({ lockWait: 0, onLockWait }).catch((e) => e);
  equal(refused instanceof SyncError && refused.reason, "locked", `${refused}`);
  equal(heard.length, 1, "the wait is heard (the CLI said nothing)");
  // The run let go of its lease while the other held the write lock: the row is left, stale in 5 s; gone here.
  const letGo = () => {
    other.exec("ROLLBACK");
    other.exec("DELETE FROM partner_api_sync_lease");
  };
  letGo();
  holdOnList();
  const writing = new Promise<void>((resolve) => wrote = resolve);
  await withFakeTimers(async (timers) => {
    const controller = new AbortController();
    const reason = new Error("stop");
    const waiting = run({ signal: controller.signal }).catch((error) => error);
    await writing;
    for (let turn = 0; turn < 10; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
      await timers.tickAsync(100); // waits on timers: a thread blocked in SQLite would not get here
    }
    controller.abort(reason);
    let settled: unknown = "pending";
    waiting.then((outcome) => settled = outcome);
    // A lease refresh under way tries again on timers for up to half a second.
    for (let turn = 0; turn < 10 && settled === "pending"; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
      await timers.tickAsync(100);
    }
    equal(settled, reason);
  });
  letGo();
  fake.beforeList = undefined;
  // On a DatabaseSync of the caller's, inside their own transaction, the lease cannot wait on timers: typed, at once.
  const theirs = new DatabaseSync(path);
  theirs.exec("BEGIN");
  theirs.prepare("SELECT count(*) FROM transactions").get();
  other.exec("BEGIN IMMEDIATE");
  const sink = createSqliteSink(theirs, { table: "transactions" });
  const locked = await sink.lock!().catch((error) => error);
  equal(locked instanceof SyncError && locked.reason, "locked", `${locked}`);
  theirs.exec("ROLLBACK");
  theirs.close();
  other.exec("ROLLBACK");
  other.close();
  equal((await run({})).inserted, 3);
});

Deno.test("SQLite on a DatabaseSync of the caller's, outside WAL: a commit a reader keeps out is rolled back, not left holding the lock (r40: the caller's connection stayed in the sink's transaction, and no other could read)", async () => {
  const path = await fresh("rollback-journal.db");
  const theirs = new DatabaseSync(path);
  const sink = createSqliteSink<{ id: string }>(theirs, { table: "items" });
  const checkpoint = { ...checkpointAt("items", 1), sortBy: "id", id: "id" };
  const edge = (id: string) => ({ ...checkpoint, edge: { value: id, id } });
  await sink.write([{ id: "a" }], edge("a"), ["a"]);
  const reader = new DatabaseSync(path);
  reader.exec("BEGIN");
  reader.prepare("SELECT count(*) FROM sqlite_master").get();
  const failed = await sink.write([{ id: "b" }], edge("b"), ["b"]).catch((
    error,
  ) => error);
  equal(failed instanceof SyncError && failed.reason, "locked", `${failed}`);
  equal(theirs.isTransaction, false, "rolled back");
  reader.exec("ROLLBACK");
  reader.close();
  equal((await sink.load())?.edge?.id, "a");
  sink.close();
  theirs.close();
});

Deno.test("syncList with a signal aborted already rejects with its reason and leaves the sink untouched: no table made", async () => {
  const fake = inProcess({ items: { transactions: 3 } });
  const path = await fresh("aborted.db");
  const signal = AbortSignal.abort(new Error("stop"));
  const sink = createSqliteSink(path, { table: "transactions" });
  const run = syncList(fake.client, "transactions", {
    ...byDate,
    sink,
    signal,
  });
  equal(await run.catch((error) => error), signal.reason);
  sink.close();
  const database = new DatabaseSync(path);
  const tables = database.prepare("SELECT count(*) AS n FROM sqlite_master");
  equal((tables.get() as { n: number }).n, 0);
  database.close();
});

Deno.test("JSONL sink: a batch cut off mid-line is cut back, and the rerun writes each item once", async () => {
  const path = await fresh("copy.jsonl");
  const fake = inProcess({ items: { transactions: 300 } });
  const options = { ...byDate, limit: 25, maxLimit: 50 };
  const controller = new AbortController();
  fake.beforeList = (n) => {
    if (n === 4) controller.abort(new Error("crash"));
  };
  await syncJsonl(fake, path, { ...options, signal: controller.signal }).catch(
    () => {},
  );
  fake.beforeList = undefined;
  // What a kill in the middle of a batch leaves: lines past the checkpoint.
  await Deno.writeTextFile(path, '{"transactionID":"tx_000001"}\n{"trans', {
    append: true,
  });
  await syncJsonl(fake, path, options);
  const ids = jsonlIds(await Deno.readTextFile(path));
  equal(ids.length, 300);
  equal(new Set(ids).size, 300);
});

Deno.test("JSONL sink: a completed sweep cycle rewrites the file, with items inserted behind the checkpoint and without deleted ones", async () => {
  const path = await fresh("full.jsonl");
  const fake = inProcess({ items: { transactions: 90 } });
  await syncJsonl(fake, path);
  fake.service.insert("transactions", {
    transactionID: "tx_000001_1",
    creationDate: "2025-01-01T00:00:00.000Z",
  });
  fake.service.remove("transactions", "tx_000002");
  await syncJsonl(fake, path, { sweep: Infinity });
  const ids = jsonlIds(await Deno.readTextFile(path));
  equal(ids.includes("tx_000002"), false);
  equal(ids.length, 90);
  equal(new Set(ids).size, 90);
  equal(ids.includes("tx_000001_1"), true);
});

Deno.test("JSONL sink: a file shorter than its checkpoint is refused, never padded", async () => {
  const path = await fresh("short.jsonl");
  const fake = inProcess({ items: { transactions: 20 } });
  await syncJsonl(fake, path);
  await Deno.writeTextFile(path, "");
  let refused = false;
  await createJsonlSink(path).load().catch(() => refused = true);
  equal(refused, true);
});

/** The `option` of the TypeError `make` throws. */
function optionOf(make: () => unknown): unknown {
  try {
    make();
  } catch (error) {
    return (error as TypeError & { option: string }).option;
  }
  return undefined;
}

Deno.test("sinks refuse a table name that is not a plain identifier or is one of their own tables", () => {
  const query = () => Promise.resolve({ rows: [] });
  for (
    const make of [
      () => createSqliteSink(":memory:", { table: 'x"; DROP TABLE y; --' }),
      () => createSqliteSink(":memory:", { table: "partner_api_sync_stage" }),
      () => createSqliteSink(":memory:", { table: "Partner_Api_Sync" }),
      () => createSqliteSink(":memory:", { table: "partner_api_sync_seen" }),
      () => createPostgresSink({ query, table: "partner_api_sync_lease" }),
      () => createPostgresSink({ query, table: "t".repeat(64) }),
      () =>
        createPostgresSink({
          query: () => Promise.resolve({ rows: [] }),
          table: "a b",
        }),
    ]
  ) equal(optionOf(make), "table");
  const noQuery = () =>
    createPostgresSink({ query: undefined as never, table: "a" });
  equal(optionOf(noQuery), "query");
  createPostgresSink({ query, table: "t".repeat(63) });
  createSqliteSink(":memory:", { table: "partner_api_synchronisations" })
    .close();
});

Deno.test("PostgreSQL sink: changes: true with a table name leaving no room for '_changes' in 63 bytes is refused (TypeError, option 'changes') before any list request or statement", async () => {
  const sent: string[] = [];
  const query = (text: string) => (sent.push(text), Promise.resolve([]));
  const service = listOf(() => [{ thingID: "1" }]);
  for (const [length, refused] of [[56, true], [55, false]] as const) {
    const sink = createPostgresSink({ query, table: "t".repeat(length) });
    equal(sink.keepsChanges, !refused);
    if (!refused) continue;
    await rejects(
      syncList(service.client, "things", {
        id: "thingID",
        sink,
        changes: true,
      }),
      (error: unknown) =>
        error instanceof TypeError &&
        (error as TypeError & { option?: string }).option === "changes",
    );
  }
  equal(service.requests, 0);
  equal(sent.length, 0);
});

Deno.test("sinks refuse a path, database or clock of the wrong kind when made, before any request", () => {
  const cases: [() => unknown, string][] = [
    [() => createJsonlSink(""), "path"],
    [() => createJsonlSink(".test-tmp/x.jsonl", { now: "x" as never }), "now"],
    [() => createSqliteSink(5 as never, { table: "t" }), "database"],
    [
      () => createSqliteSink(":memory:", { table: "t", now: 1 as never }),
      "now",
    ],
    [
      () =>
        createSqliteSink(":memory:", { table: "t", onLockWait: 1 as never }),
      "onLockWait",
    ],
    [
      () =>
        createPostgresSink({
          query: () => Promise.resolve([]),
          table: "t",
          now: 1 as never,
        }),
      "now",
    ],
  ];
  for (const [make, option] of cases) equal(optionOf(make), option);
});

Deno.test("SQLite sink: on a large table a run's batches may share a transaction, each with its checkpoint; another run of this process is told the table is held, and the release commits", async () => {
  const path = await fresh("grouped.db");
  const checkpoint = (n: number) => checkpointAt("numbers", n);
  const ids = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => String(from + i + 1));
  using sink = createSqliteSink<{ n: number }>(path, { table: "numbers" });
  const lease = await sink.lock!();
  const first = ids(0, 20_000);
  await sink.write(
    first.map((id) => ({ n: Number(id) })),
    checkpoint(20_000),
    first,
  );
  // From here on the table is large: this batch may wait for the next.
  const second = ids(20_000, 20_010);
  await sink.write(
    second.map((id) => ({ n: Number(id) })),
    checkpoint(20_010),
    second,
  );
  // A second run's sink in this same process asks for the lease without a
  // busy wait: told the table is held, not stopped by a locked database.
  using other = createSqliteSink(path, { table: "numbers", lockWait: 0 });
  const refused = await other.lock!().then(
    () => undefined,
    (error) => error,
  );
  equal(refused instanceof SyncError, true, String(refused));
  equal((refused as SyncError).reason, "locked");
  equal((refused as SyncError).message.includes("(another run)"), false);
  // It names the holder's process (DESIGN: the CLI waits naming its holder).
  equal(
    (refused as SyncError).message.includes(`held by pid ${Deno.pid}`),
    true,
  );
  await lease[Symbol.asyncDispose]();
  const reader = new DatabaseSync(path);
  const rows = reader.prepare('SELECT count(*) AS n FROM "numbers"').get() as {
    n: number;
  };
  const saved = reader.prepare(
    "SELECT checkpoint FROM partner_api_sync WHERE target = 'numbers'",
  ).get() as { checkpoint: string };
  reader.close();
  equal(rows.n, 20_010);
  equal(JSON.parse(saved.checkpoint).offset, 20_010);
});

Deno.test("SQLite sink: an item skipped in a sweep cycle is still in the list: its row stays live (not removed or marked), with no delete change row", async () => {
  for (const deletes of ["remove", "mark"] as const) {
    const database = new DatabaseSync(":memory:");
    const sink = createSqliteSink<unknown>(database, { table: "items" });
    const sweep = {
      edge: null,
      offset: 0,
      upTo: { value: "3", id: "3" },
      cycle: 1,
      startedAt: 0,
    };
    const at = { ...checkpointAt("items", 3), sweep };
    const ids = ["1", "2", "3"];
    const context = { cycle: 1, phase: "sweep" as const, changes: true };
    await sink.write([{ n: 1 }, { n: 2 }, { n: 3 }], at, ids, {
      ...context,
      phase: "head",
    });
    // A BigInt has no JSON: the item skipped in the cycle's first batch, its end in the next.
    const first = await sink.write([{ n: 1 }, { n: 2n }], at, ids.slice(0, 2), {
      ...context,
      cycle: 2,
      beginsCycle: true,
    });
    const end = await sink.write([{ n: 3 }], at, ["3"], {
      ...context,
      cycle: 2,
      endsCycle: { deletes, maxDeletes: 1 },
    });
    equal(first?.skippedIds?.join(), "2");
    equal(end?.deleted, 0, deletes);
    const rows = database.prepare(
      'SELECT count(*) AS n FROM "items" WHERE deleted_at IS NULL',
    ).get() as { n: number };
    equal(rows.n, 3, deletes);
    const gone = database.prepare(
      `SELECT count(*) AS n FROM "items_changes" WHERE change = 'delete'`,
    ).get() as { n: number };
    equal(gone.n, 0, deletes);
    equal((await sink.load())?.offset, 3); // the copy passes its checks
    database.close();
  }
});

Deno.test("SQLite sink: an id holding a NUL (node:sqlite reads text back cut at it) is skipped and reported, and every later run goes on with exact counts", async () => {
  for (const changes of [false, true]) {
    const items = Array.from({ length: 100 }, (_, i) => ({
      id: `t${String(i).padStart(3, "0")}${i === 50 ? "\u0000x" : ""}`,
      v: 0,
    }));
    const service = listOf(() => items, { maxLimit: 25 });
    const database = new DatabaseSync(":memory:");
    const sink = createSqliteSink(database, { table: "things" });
    const options = { id: "id", sink, sweep: Infinity, changes, limit: 25 };
    for (let run = 1; run <= 3; run++) {
      if (run === 3) items[50]!.v = 1;
      items[run]!.v = run; // one plain update a run from the second on
      const result = await syncList(service.client, "things", options);
      equal(result.skippedIds.join(), "t050\u0000x", `run ${run}`);
      const counts = [result.inserted, result.updated, result.deleted];
      equal(counts.join(), run === 1 ? "99,0,0" : "0,1,0", `run ${run}`);
    }
    const rows = database.prepare('SELECT count(*) AS n FROM "things"')
      .get() as { n: number };
    equal(rows.n, 99);
    database.close();
  }
});

Deno.test("SQLite sink: a change table made for a copy that holds rows begins with an insert of each live row, so replaying it from its start gives the copy, with a consumer's column added, also once dropped and made again", async () => {
  const items = Array.from(
    { length: 40 },
    (_, i) => ({ id: `t${i + 10}`, v: i }),
  );
  const service = listOf(() => items, { maxLimit: 25 });
  const database = new DatabaseSync(":memory:");
  const sink = createSqliteSink(database, { table: "things" });
  const options = { id: "id", sink, sweep: Infinity, limit: 25 };
  await syncList(service.client, "things", options); // no change table yet
  const replay = () => {
    const rows = database.prepare(
      'SELECT id, change, item FROM "things_changes" ORDER BY seq',
    ).all();
    const copy = new Map<unknown, unknown>();
    for (const { id, change, item } of rows) {
      if (change === "delete") copy.delete(id);
      else copy.set(id, item);
    }
    return JSON.stringify([...copy].sort());
  };
  const live = () =>
    JSON.stringify(
      database.prepare('SELECT id, item FROM "things" ORDER BY id').all()
        .map(({ id, item }) => [id, item]),
    );
  for (const round of [1, 2, 3]) {
    items.splice(round, 1);
    items[round]!.v += 100;
    items.push({ id: `t${90 + round}`, v: 0 });
    await syncList(service.client, "things", { ...options, changes: true });
    equal(replay(), live(), `round ${round}`);
    database.exec(
      [
        'ALTER TABLE "things_changes" ADD COLUMN applied INTEGER', // a consumer's
        'DROP TABLE "things_changes"', // docs/sync.md: drop it to stop
        "",
      ][round - 1]!,
    );
  }
  database.close();
});

Deno.test("SQLite sink: a change table dropped during a run is made again with the copy's rows when the run asks for changes, else its recording stops at the next batch", async () => {
  const items = Array.from({ length: 50 }, (_, i) => ({ id: `t${i + 100}` }));
  let dropAt = 0;
  const database = new DatabaseSync(":memory:");
  const service = listOf(() => items, {
    maxLimit: 25,
    answer(page, n) {
      if (n === dropAt) database.exec('DROP TABLE "things_changes"');
      return page;
    },
  });
  const sink = createSqliteSink(database, { table: "things" });
  const options = { id: "id", sink, limit: 25, changes: true };
  await syncList(service.client, "things", options);
  const ids = (sql: string) =>
    database.prepare(sql).all().map((row) => row.id).sort().join();
  for (const changes of [true, false]) {
    items.push(
      ...items.map((_, i) => ({ id: `${changes ? "u" : "v"}${i + 100}` })),
    );
    dropAt = service.requests + 2; // the head's second window
    const run = await syncList(service.client, "things", {
      ...options,
      changes,
    });
    equal(run.inserted, items.length / 2);
    const kept = 'SELECT id FROM "things_changes"',
      live = 'SELECT id FROM "things"';
    if (changes) equal(ids(kept), ids(live)); // made again: the copy then, and what came after
  }
  const gone = database.prepare(
    "SELECT name FROM sqlite_master WHERE name = ?",
  );
  equal(gone.get("things_changes"), undefined);
  database.close();
});

Deno.test("SQLite sink: once <table>_changes exists, every run records into it, changes asked or not: a consumer reading it by seq misses nothing", async () => {
  const items = Array.from({ length: 60 }, (_, i) => ({
    id: `t${String(i).padStart(3, "0")}`,
    v: 0,
  }));
  const service = listOf(() => items, { maxLimit: 25 });
  const database = new DatabaseSync(":memory:");
  const sink = createSqliteSink(database, { table: "things" });
  const options = { id: "id", sink, sweep: Infinity, limit: 25 };
  await syncList(service.client, "things", { ...options, changes: true });
  const since = (seq: number) =>
    database.prepare(
      'SELECT id, change FROM "things_changes" WHERE seq > ? ORDER BY seq',
    ).all(seq).map((row) => `${row.change} ${row.id}`).sort().join();
  equal(since(0).split(",").length, 60);
  for (const changes of [undefined, false]) {
    const seq = (database.prepare('SELECT max(seq) AS n FROM "things_changes"')
      .get() as { n: number }).n;
    const added = `u${seq}`;
    const gone = items.splice(1, 1)[0]!.id;
    items[2]!.v++;
    items.push({ id: added, v: 0 });
    const result = await syncList(service.client, "things", {
      ...options,
      ...(changes === undefined ? {} : { changes }),
    });
    equal(
      [result.inserted, result.updated, result.deleted].join(),
      "1,1,1",
    );
    equal(
      since(seq),
      `delete ${gone},insert ${added},update ${items[2]!.id}`,
      String(changes),
    );
  }
  database.close();
});

for (const to of ["its last window", "past the copy's end"]) {
  Deno.test(`SQLite and JSONL sinks: an item a sweep staged (new to the copy) whose date then moves to ${to} is in the copy once, as the list has it now, counted inserted once; the next run goes on (SQLite applied the older staged item over it and recorded a row too many, refusing every later run; JSONL held it twice)`, async () => {
    for (const kind of ["sqlite", "jsonl"]) {
      const fake = inProcess({ items: { transactions: 300 } });
      const path = await fresh(`moved-staged-${to.length}.${kind}`);
      const db = kind === "sqlite" ? new DatabaseSync(path) : undefined;
      const sink = db
        ? createSqliteSink(db, { table: "transactions" })
        : createJsonlSink(path);
      const changes = kind === "sqlite"; // a JSONL copy keeps no change table
      const options = { ...byDate, sink, maxLimit: 100, changes };
      await syncList(fake.client, "transactions", options);
      const list = await Array.fromAsync(
        fake.client.list<{ creationDate: string }>("transactions", {
          sortBy: "creationDate",
          limit: 1000,
        }),
      );
      const last = list.at(-1)!;
      fake.service.insert("transactions", {
        transactionID: "tx_moved",
        creationDate: "2000-01-01T00:00:00.000Z",
      });
      await syncList(fake.client, "transactions", { ...options, sweep: 1 });
      const date = to === "its last window"
        ? new Date(Date.parse(String(last.creationDate)) - 1).toISOString()
        : "2999-01-01T00:00:00.000Z";
      fake.service.update("transactions", "tx_moved", { creationDate: date });
      const run = await syncList(fake.client, "transactions", {
        ...options,
        sweep: 10, // the cycle under way: Infinity would begin a fresh one
      });
      equal(run.inserted, 1, `${kind}: inserted`);
      equal(run.updated, 0, `${kind}: updated`);
      const items: { transactionID: string; creationDate: string }[] = db
        ? db.prepare('SELECT item FROM "transactions"').all().map((row) =>
          JSON.parse(String(row.item))
        )
        : (await Deno.readTextFile(path)).trim().split("\n").map((line) =>
          JSON.parse(line)
        );
      await syncList(fake.client, "transactions", { ...options, sweep: 0 }); // not refused
      const recorded = db?.prepare(
        `SELECT change FROM "transactions_changes" WHERE id = 'tx_moved'`,
      ).all().map((row) => row.change);
      db?.close();
      if (recorded) {
        equal(recorded.join(), "insert", `${kind}: its change rows`);
      }
      const moved = items.filter((item) => item.transactionID === "tx_moved");
      equal(items.length, 301, `${kind}: rows`);
      equal(moved.length, 1, `${kind}: copies of the moved item`);
      equal(moved[0]!.creationDate, date, `${kind}: its date`);
    }
  });
}

Deno.test("SQLite sink on a copy an earlier version made: a column another run adds between this run's look and its ALTER is taken as added (r40 F1: two runs on an older copy, one failed with a plain 'duplicate column name')", async () => {
  const path = await fresh("older-copy.db");
  const older = new DatabaseSync(path);
  older.exec(
    `CREATE TABLE items (id TEXT PRIMARY KEY, item TEXT NOT NULL, deleted_at TEXT);
    CREATE TABLE partner_api_sync (target TEXT PRIMARY KEY, checkpoint TEXT NOT NULL, rows INTEGER, last TEXT)`,
  );
  const theirs = new DatabaseSync(path);
  // The other run's ALTER lands first, as when both looked while a third program held the write lock.
  const racing = replacing(theirs, "exec", (exec) => (sql) => {
    if (sql.startsWith("ALTER TABLE")) older.exec(sql);
    return exec(sql);
  });
  const sink = createSqliteSink(racing, { table: "items" });
  await (await sink.lock!())[Symbol.asyncDispose]();
  const columns = older.prepare("SELECT name FROM pragma_table_info('items')")
    .all().map((row) => row.name);
  equal(columns.join(), "id,item,deleted_at,partner_api_key");
  theirs.close();
  older.close();
});

Deno.test("SQLite: a lease refused because another connection holds the write lock names that connection, not another run (r40 F4)", async () => {
  const path = await fresh("take-held.db");
  const heard: string[] = [];
  const onLockWait = (holder: string) => heard.push(holder);
  using sink = createSqliteSink(path, {
    table: "items",
    lockWait: 0,
    onLockWait,
  });
  await (await sink.lock!())[Symbol.asyncDispose](); // the tables
  const other = new DatabaseSync(path);
  other.exec("BEGIN IMMEDIATE");
  const refused = await sink.lock!().catch((error) => error);
  other.exec("ROLLBACK");
  other.close();
  equal(refused instanceof SyncError && refused.reason, "locked", `${refused}`);
  equal(heard.length, 1);
  equal(/another connection/.test(heard[0]!), true, heard[0]);
});

/** `db` with its method `name` replaced by `make(db's own)`: a connection another program acts on between two steps. */
function replacing<K extends "exec" | "prepare">(
  db: DatabaseSync,
  name: K,
  make: (own: DatabaseSync[K]) => DatabaseSync[K],
): DatabaseSync {
  const replaced = make(db[name].bind(db) as DatabaseSync[K]);
  return new Proxy(db, {
    get(target, key) {
      if (key === name) return replaced;
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Starts `work`, which waits for a lock another holds: once `heard` tells the wait began (file reads done), still
 * waiting after 0.5 s of fake time, it ends with the reason of an abort.
 */
async function abortWhileWaiting(
  work: (signal: AbortSignal) => Promise<unknown>,
  heard: readonly string[],
) {
  await withFakeTimers(async (timers) => {
    const controller = new AbortController();
    const reason = new Error("stop");
    let settled: unknown = "pending";
    work(controller.signal).then((done) => settled = done, (e) => settled = e);
    // Bounded by the system's clock, not a count of turns: on a busy machine the file reads outlasted 10,000 turns.
    const turns = async (n: number, until: () => boolean) => {
      const start = systemNow();
      for (let turn = 0; turn < n && !until(); turn++) {
        if (systemNow() - start > 60_000) break;
        await new Promise((resolve) => setImmediate(resolve)); // file reads go on meanwhile
        await timers.tickAsync(100);
      }
    };
    await turns(Infinity, () => heard.length > 0 || settled !== "pending");
    await turns(5, () => settled !== "pending");
    equal(settled, "pending");
    controller.abort(reason);
    await turns(Infinity, () => settled !== "pending");
    equal(settled, reason);
  });
}

for (const journal of ["WAL", "DELETE"]) {
  Deno.test(`SQLite: making the tables of a new copy in a file in ${journal} mode while another connection holds the write lock waits on timers, heard by onLockWait, and the run's signal stops it with its reason (r40 F2: the thread blocked 10 s; r41 F1: a file in rollback-journal mode failed "locked" at once, the CLI's endless wait too)`, async () => {
    const fake = inProcess({ items: { transactions: 3 } });
    const path = await fresh(`tables-held-${journal}.db`);
    const other = new DatabaseSync(path);
    other.exec(`PRAGMA journal_mode = ${journal}; CREATE TABLE other (x)`);
    other.exec("BEGIN IMMEDIATE; INSERT INTO other VALUES (1)");
    const heard: string[] = [];
    const onLockWait = (holder: string) => heard.push(holder);
    const run = (signal?: AbortSignal) => {
      const sink = createSqliteSink(path, {
        table: "transactions",
        onLockWait,
      });
      const options = { ...byDate, sink, ...(signal && { signal }) };
      return syncList(fake.client, "transactions", options)
        .finally(() => sink.close());
    };
    await abortWhileWaiting(run, heard);
    equal(heard.length, 1);
    other.exec("ROLLBACK");
    other.close();
    equal((await run()).inserted, 3);
  });
}

Deno.test("SQLite: the keys another writer (0.4) left stale are cleared once the lease is taken, waiting on timers for another connection's write lock, stopped by the run's signal (r41 F2: it blocked the thread in SQLite from inside the lease's take)", async () => {
  const path = await fresh("stale-keys-held.db");
  const theirs = new DatabaseSync(path);
  const sink = createSqliteSink<{ id: string }>(theirs, { table: "items" });
  const checkpoint = { ...checkpointAt("items", 1), sortBy: "id", id: "id" };
  await sink.write([{ id: "a" }], checkpoint, ["a"]);
  const other = new DatabaseSync(path);
  other.exec("UPDATE partner_api_sync SET keyed = NULL"); // as 0.4 wrote it last
  // The other takes the write lock just as the lease is first taken.
  let raced = false;
  const racing = replacing(theirs, "prepare", (prepare) => (sql) => {
    const statement = prepare(sql);
    if (!sql.startsWith("INSERT INTO partner_api_sync_lease")) return statement;
    const get = (...args: never[]) => {
      const row = statement.get(...args);
      if (!other.isTransaction && !raced) other.exec("BEGIN IMMEDIATE");
      raced = true;
      return row;
    };
    return { get } as unknown as typeof statement;
  });
  const heard: string[] = [];
  const onLockWait = (holder: string) => heard.push(holder);
  const held = createSqliteSink(racing, { table: "items", onLockWait });
  await abortWhileWaiting((signal) => held.lock!({ signal }), heard);
  // The lease left under the other's lock goes stale in 5 s; gone here.
  other.exec("ROLLBACK; DELETE FROM partner_api_sync_lease");
  await (await held.lock!())[Symbol.asyncDispose]();
  const keyed =
    "SELECT count(*) AS n FROM items WHERE partner_api_key IS NOT NULL";
  equal(other.prepare(keyed).get()!.n, 0);
  other.close();
  theirs.close();
});

Deno.test("waitForLock tells onWait again when who holds the lock changes, and ignores what it throws or rejects with (r41 F4, F7, r42 G4: a run waiting on a program, then on a run, named only the first; a throwing listener failed the run)", async () => {
  const holders = ["another connection", "pid 42", "pid 42"];
  const heard: string[] = [];
  // A listener that throws, then one that rejects (an unhandled rejection would end the process).
  const onWait = (holder: string) => {
    heard.push(holder);
    if (heard.length > 1) return Promise.reject(new Error("its own failure"));
    throw new Error("a listener's own failure");
  };
  const waiting = waitForLock(
    "the copy",
    { wait: Infinity, onWait },
    () =>
      Promise.resolve(
        holders.length ? { holder: holders.shift()! } : { taken: 1 },
      ),
  );
  const taken = await withFakeTimers(async (timers) => {
    await timers.runAllAsync();
    return await waiting;
  });
  equal(taken, 1);
  equal(heard.join(), "another connection,pid 42");
});

for (const holds of ["a read transaction", "an exclusive lock"]) {
  Deno.test(`SQLite on a DatabaseSync of the caller's outside WAL: while another connection holds ${holds}, the lease is not taken, and the wait is heard (r42 G1: a commit a reader refused took nothing, yet lock() resolved and the first batch failed 'lock-lost'; r43 H1: under an exclusive lock the lease's reads ran in the caller's busy wait, refused at once, unheard)`, async () => {
    const path = await fresh(`take-refused-${holds.length}.db`);
    const theirs = new DatabaseSync(path);
    const heard: string[] = [];
    const onLockWait = (holder: string) => heard.push(holder);
    const sink = createSqliteSink<{ id: string }>(theirs, {
      table: "items",
      lockWait: 0,
      onLockWait,
    });
    await (await sink.lock!())[Symbol.asyncDispose](); // the tables
    const other = new DatabaseSync(path);
    other.exec(holds === "an exclusive lock" ? "BEGIN EXCLUSIVE" : "BEGIN");
    other.prepare("SELECT count(*) FROM partner_api_sync_lease").get();
    const refused = await sink.lock!().catch((error) => error);
    other.exec("ROLLBACK");
    other.close();
    equal(
      refused instanceof SyncError && refused.reason,
      "locked",
      `${refused}`,
    );
    equal(heard.length, 1);
    await (await sink.lock!())[Symbol.asyncDispose](); // taken once it is gone
    theirs.close();
  });
}
