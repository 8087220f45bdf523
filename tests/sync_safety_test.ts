// Sinks that cannot lose data (issue 36): each test is named after the
// promise it keeps, and failed on 0.3's sinks. The fake in process, real
// files under .test-tmp, no mocks of fetch.

import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import {
  createJsonlSink,
  createSqliteSink,
  SyncError,
  type SyncErrorReason,
  syncList,
  type SyncSink,
} from "../src/sync/mod.ts";
import { openFile, readText, replaceFile } from "../src/sync/_files.ts";
import { freshTarget, inProcess, listOf } from "./_sync_fake.ts";

const byDate = { id: "transactionID", sortBy: "creationDate" } as const;
const fresh = (name: string) => freshTarget("sync-safety", name);

/** Rejects with a SyncError of `reason` (naming `path`, if given). */
async function refused(
  promise: Promise<unknown>,
  reason: SyncErrorReason,
  path?: string,
): Promise<void> {
  await rejects(promise, (error: unknown) => {
    ok(error instanceof SyncError, String(error));
    equal(error.reason, reason, error.message);
    if (path !== undefined) equal(error.path, path);
    return true;
  });
}

/** Every file beside `path` a sink may keep, with its bytes. */
async function snapshot(path: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  const dir = path.slice(0, path.lastIndexOf("/"));
  for await (const entry of Deno.readDir(dir)) {
    const name = `${dir}/${entry.name}`;
    if (!name.startsWith(path)) continue;
    files[entry.name] = entry.isSymlink
      ? `-> ${await Deno.readLink(name)}`
      : await Deno.readTextFile(name);
  }
  return files;
}

function jsonlIds(text: string): string[] {
  return text.split("\n").filter((line) => line !== "").map((line) =>
    JSON.parse(line).transactionID
  );
}

Deno.test("JSONL sink: a file it did not make is refused and left byte for byte", async () => {
  const path = await fresh("own.jsonl");
  const own = Array.from({ length: 500 }, (_, i) => `{"mine":${i}}\n`).join("");
  await Deno.writeTextFile(path, own);
  const fake = inProcess({ items: { transactions: 30 } });
  const before = await snapshot(path);
  await refused(
    syncList(fake.client, "transactions", {
      ...byDate,
      sink: createJsonlSink(path),
    }),
    "sink-mismatch",
  );
  deepStrictEqual(await snapshot(path), before);
  equal(fake.listRequests, 0, "refused before any request");
});

Deno.test("JSONL sink: a damaged, foreign or mismatched side file is refused and the copy left byte for byte", async () => {
  const fake = inProcess({ items: { transactions: 40 } });
  const damages: [string, (path: string) => Promise<void>][] = [
    ["{}", (p) => Deno.writeTextFile(`${p}.checkpoint.json`, "{}")],
    ["null", (p) => Deno.writeTextFile(`${p}.checkpoint.json`, "null")],
    ["garbage", (p) => Deno.writeTextFile(`${p}.checkpoint.json`, '{"ch')],
    ["another version", async (p) => {
      const side = JSON.parse(await Deno.readTextFile(`${p}.checkpoint.json`));
      side.format = "partner-api-jsonl/9";
      await Deno.writeTextFile(`${p}.checkpoint.json`, JSON.stringify(side));
    }],
    ["a changed last line", async (p) => {
      const text = await Deno.readTextFile(p);
      await Deno.writeTextFile(
        p,
        text.replace(/"amount":[^,}]*/g, '"amount":0'),
      );
    }],
    ["a copy cut short", async (p) => {
      const text = await Deno.readTextFile(p);
      await Deno.writeTextFile(p, text.slice(0, text.length / 2));
    }],
    [
      "a copy without its side file",
      (p) => Deno.remove(`${p}.checkpoint.json`),
    ],
  ];
  for (const [name, damage] of damages) {
    const path = await fresh("damaged.jsonl");
    await syncList(fake.client, "transactions", {
      ...byDate,
      sink: createJsonlSink(path),
    });
    await damage(path);
    const before = await snapshot(path);
    await rejects(
      syncList(fake.client, "transactions", {
        ...byDate,
        sink: createJsonlSink(path),
      }),
      (error: SyncError) => error.reason === "sink-mismatch",
      name,
    );
    deepStrictEqual(await snapshot(path), before, name);
  }
});

Deno.test("JSONL sink: two syncList runs at once on one copy never interleave: every item once", async () => {
  const path = await fresh("two.jsonl");
  const fake = inProcess({ items: { transactions: 600 } });
  const run = () =>
    syncList(fake.client, "transactions", {
      ...byDate,
      limit: 25,
      maxLimit: 50,
      sink: createJsonlSink(path),
    });
  const results = await Promise.all([run(), run()]);
  equal(results[0]!.written + results[1]!.written, 600);
  const ids = jsonlIds(await Deno.readTextFile(path));
  equal(ids.length, 600);
  equal(new Set(ids).size, 600);
});

/** A direct write's checkpoint of the list "things" of `{ n }` items, complete up to `n`. */
function numbersAt(n: number) {
  const edge = { value: n, id: String(n) };
  return {
    ...{ version: 1 as const, path: "things", sortBy: "n", id: "n" },
    ...{ query: {}, edge, offset: n, full: false, complete: true },
  };
}

/** The context of a sweep window that begins and ends cycle 1, removing what it lacks. */
const wholeCycle = (keyOf: (item: unknown) => { value: string; id: string }) =>
  ({
    cycle: 1,
    phase: "sweep",
    changes: false,
    keyOf,
    beginsCycle: true,
    endsCycle: { deletes: "remove", maxDeletes: 1 },
  }) as const;

/** A run's sink holding `path`'s lock, paused (Ctrl-Z) past the stale time, and the sink of a run that took it over. */
async function takenOver(path: string) {
  const paused = createJsonlSink(path);
  const lock = await paused.lock!();
  await paused.load();
  // Paused past the stale time: its lock stops being refreshed.
  const past = new Date(Date.now() - 60_000);
  await Deno.utime(`${path}.lock`, past, past);
  const cron = createJsonlSink(path);
  const cronLock = await cron.lock!();
  await cron.load();
  return { paused, lock, cron, cronLock };
}

Deno.test("JSONL sink: a run whose lock was taken over while it was paused stops before writing, and its release leaves the new holder's lock", async () => {
  const path = await fresh("paused.jsonl");
  const checkpoint = { ...numbersAt(1), complete: false };
  const { paused, lock, cron, cronLock } = await takenOver(path);
  await cron.write([{ n: 1 }], checkpoint, ["1"]);
  const before = await snapshot(path);
  await refused(paused.write([{ n: 2 }], checkpoint, ["2"]), "lock-lost");
  await lock[Symbol.asyncDispose]();
  deepStrictEqual(await snapshot(path), before, "nothing written, lock kept");
  await cronLock[Symbol.asyncDispose]();
  equal(await Deno.readTextFile(path), '{"n":1}\n');
});

Deno.test("JSONL sink: a run paused mid-cycle, whose lock a cron run took over and whose cycle that run completed, stops with 'lock-lost' at its next write, not with a file error on the rewrite the cron run renamed away", async () => {
  const path = await fresh("paused-cycle.jsonl");
  const checkpoint = numbersAt(2);
  const keyOf = (item: unknown) => {
    const n = String((item as { n: number }).n);
    return { value: n, id: n };
  };
  const sweep = { cycle: 1, phase: "sweep", changes: false, keyOf } as const;
  const ends = {
    ...sweep,
    endsCycle: { deletes: "remove", maxDeletes: 1 },
  } as const;
  const items = [{ n: 1 }, { n: 2 }], ids = ["1", "2"];
  await createJsonlSink(path).write(items, checkpoint, ids);
  const paused = createJsonlSink(path);
  const lock = await paused.lock!();
  await paused.load();
  await paused.write(items.slice(0, 1), checkpoint, ids, {
    ...sweep,
    beginsCycle: true,
  });
  const past = new Date(Date.now() - 60_000);
  await Deno.utime(`${path}.lock`, past, past);
  const cron = createJsonlSink(path);
  const cronLock = await cron.lock!();
  await cron.load();
  await cron.write(items.slice(1), checkpoint, ids.slice(1), ends);
  const before = await snapshot(path);
  const next = paused.write(items.slice(1), checkpoint, ids.slice(1), sweep);
  await refused(next, "lock-lost");
  await lock[Symbol.asyncDispose]();
  deepStrictEqual(await snapshot(path), before, "nothing written, lock kept");
  await cronLock[Symbol.asyncDispose]();
});

Deno.test("JSONL sink: a run paused while another took the copy over and rewrote it stops with 'lock-lost' at its next read of the copy's rows, not a 'sink-mismatch' telling the user to replace a sound copy (r219a F1: 'line 3868 … is not JSON: the copy was changed')", async () => {
  const path = await fresh("paused-read.jsonl");
  const keyOf = (item: unknown) => {
    const n = String((item as { n: number }).n);
    return { value: n, id: n };
  };
  const items = [1, 2, 3].map((n) => ({ n })), ids = ["1", "2", "3"];
  await createJsonlSink(path).write(items, numbersAt(3), ids);
  const { paused, lock, cron, cronLock } = await takenOver(path);
  // A whole cycle in one window: the copy renamed over, its lines longer.
  const longer = items.map(({ n }) => ({ n, note: "x".repeat(20) }));
  await cron.write(longer, numbersAt(3), ids, wholeCycle(keyOf));
  await refused(Array.fromAsync(paused.liveRows!(2, keyOf)), "lock-lost");
  await refused(paused.holds!(["1"], keyOf), "lock-lost");
  await lock[Symbol.asyncDispose]();
  await cronLock[Symbol.asyncDispose]();
});

Deno.test("JSONL sink: a run whose lock another took over, rewriting the copy, while this run read the copy for its cycle's end stops with 'lock-lost', not 'sink-mismatch' (r220a F2: 'line 17790 … is not JSON: the copy was changed'); with a lock that cannot be read instead (a folder there), no takeover is told: the read's own error stays (r221a F2: EMFILE told as 'lock-lost', its cause dropped)", async () => {
  const lockThen: [string, (lock: string) => void, SyncErrorReason][] = [
    ["taken over", (lock) => {
      Deno.writeTextFileSync(lock, JSON.stringify({ owner: "cron", pid: 1 }));
    }, "lock-lost"],
    ["unreadable", (lock) => {
      Deno.removeSync(lock);
      Deno.mkdirSync(lock);
    }, "sink-mismatch"],
  ];
  for (const [name, change, reason] of lockThen) {
    const path = await fresh(`paused-end-${name}.jsonl`);
    const pad = "p".repeat(90); // past 1 MiB: the end reads the copy a part at a time
    const items = Array.from({ length: 12_000 }, (_, i) => ({ n: i + 1, pad }));
    const ids = items.map(({ n }) => String(n));
    await createJsonlSink(path).write(items, numbersAt(12_000), ids);
    const paused = createJsonlSink(path);
    const lock = await paused.lock!();
    await paused.load();
    let armed = true;
    const keyOf = (item: unknown) => {
      const { n, pad: read } = item as { n: number; pad?: string };
      if (armed && read === pad) {
        // The first line of the copy the end reads: paused here, the lock changed, the copy rewritten longer.
        armed = false;
        change(`${path}.lock`);
        const longer = items.map((it) =>
          `${JSON.stringify({ ...it, pad: `${pad}q` })}\n`
        );
        Deno.writeTextFileSync(path, longer.join(""));
      }
      return { value: String(n), id: String(n) };
    };
    const window = [{ n: 1 }, { n: 2 }];
    const context = wholeCycle(keyOf);
    const write = paused.write(window, numbersAt(12_000), ["1", "2"], context);
    await refused(write, reason);
    equal(armed, false, `${name}: changed while the end read the copy`);
    await lock[Symbol.asyncDispose]();
  }
});

Deno.test("SQLite sink: a run whose lease was taken over while it was paused stops before writing", async () => {
  const path = await fresh("paused.db");
  const fake = inProcess({ items: { transactions: 10 } });
  using paused = createSqliteSink(path, { table: "transactions" });
  const lock = await paused.lock!();
  await paused.load();
  const database = new DatabaseSync(path);
  database.exec(`UPDATE partner_api_sync_lease SET refreshed_at = 0`);
  {
    using cron = createSqliteSink(path, { table: "transactions" });
    await syncList(fake.client, "transactions", { ...byDate, sink: cron });
  }
  const checkpoint = (await createSqliteSink(database, {
    table: "transactions",
  }).load())!;
  await refused(
    paused.write([{ transactionID: "x" }], checkpoint, ["x"]),
    "lock-lost",
  );
  await lock[Symbol.asyncDispose]();
  const row = database.prepare('SELECT count(*) AS n FROM "transactions"')
    .get() as { n: number };
  database.close();
  equal(row.n, 10);
});

/** `database`, whose first `prepare` of SQL matching `at` runs `meanwhile` first. */
function interleaved(
  database: DatabaseSync,
  at: RegExp,
  meanwhile: () => void,
): DatabaseSync {
  let pending = true;
  return new Proxy(database, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      if (key !== "prepare") return value.bind(target);
      return (sql: string) => {
        if (pending && at.test(sql)) [pending] = [false, meanwhile()];
        return target.prepare(sql);
      };
    },
  });
}

Deno.test("SQLite sink: a second run reading the copy while the first commits a batch is refused 'locked', never 'sink-mismatch'", async () => {
  const path = await fresh("read-mid-commit.db");
  const items = Array.from({ length: 30 }, (_, i) => ({ n: `${1000 + i}` }));
  using first = createSqliteSink(path, { table: "things" });
  await syncList(listOf(() => items).client, "things", {
    id: "n",
    sink: first,
  });
  const lease = await first.lock!();
  // The first run's next batch, committed between the second's count of the rows and its read of the checkpoint.
  const committer = new DatabaseSync(path);
  const batch = () =>
    committer.exec(
      `BEGIN IMMEDIATE; INSERT INTO things (id, item) VALUES ('0999', '{"n":"0999"}');
      UPDATE partner_api_sync SET rows = rows + 1; COMMIT`,
    );
  const database = new DatabaseSync(path);
  const second = createSqliteSink(
    interleaved(database, /^SELECT target, checkpoint/, batch),
    { table: "things", lockWait: 0 },
  );
  await refused(second.lock!(), "locked");
  await lease[Symbol.asyncDispose]();
  equal((await second.load())?.offset, 30, "the copy is sound");
  committer.close();
  database.close();
});

Deno.test("SQLite sink: a table of the user's own is refused, and the database file is left byte for byte", async () => {
  const path = await fresh("own.db");
  const database = new DatabaseSync(path);
  database.exec(
    "CREATE TABLE transactions (id TEXT PRIMARY KEY, note TEXT); INSERT INTO transactions VALUES ('a', 'mine')",
  );
  database.close();
  const before = await Deno.readFile(path);
  const fake = inProcess({ items: { transactions: 5 } });
  {
    using sink = createSqliteSink(path, { table: "transactions" });
    await refused(
      syncList(fake.client, "transactions", { ...byDate, sink }),
      "sink-mismatch",
    );
  }
  deepStrictEqual(await Deno.readFile(path), before);
});

Deno.test("SQLite sink: table names SQLite folds to one share one checkpoint, so another list into it is refused", async () => {
  const fake = inProcess({ items: { transactions: 5, organizations: 5 } });
  const database = new DatabaseSync(":memory:");
  await syncList(fake.client, "organizations", {
    id: "organizationID",
    sink: createSqliteSink(database, { table: "Transactions" }),
  });
  await rejects(
    syncList(fake.client, "transactions", {
      ...byDate,
      sink: createSqliteSink(database, { table: "transactions" }),
    }),
    (error: TypeError & { option?: string }) => error.option === "sink",
  );
  const rows = database.prepare('SELECT count(*) AS n FROM "transactions"')
    .get() as { n: number };
  database.close();
  equal(rows.n, 5, "the organizations stay");
});

Deno.test("a service that ignores 'page' ends the sync with 'repeated-page' within a few requests", async () => {
  const items = Array.from({ length: 300 }, (_, i) => ({
    thingID: `t${String(i).padStart(4, "0")}`,
  }));
  const service = listOf(() => items, { ignorePage: true });
  await refused(
    syncList(service.client, "things", {
      id: "thingID",
      sink: createSqliteSink(":memory:", { table: "things" }),
      limit: 50,
      maxLimit: 100,
    }),
    "repeated-page",
  );
  ok(service.requests <= 5, `${service.requests} requests`);
});

Deno.test("a service that cuts pages below 'limit' without a 400 still gets its whole list copied", async () => {
  const fake = inProcess({
    items: { transactions: 500 },
    maxLimit: 40,
    beyondMaxLimit: "cut",
  });
  using sink = createSqliteSink(":memory:", { table: "transactions" });
  const result = await syncList(fake.client, "transactions", {
    ...byDate,
    sink,
    limit: 50,
  });
  equal(result.written, 500);
});

Deno.test("every sink stores NUL, lone surrogates and long strings; a page's repeated id keeps its last occurrence; 7 and '7' are one id; ids SQLite cannot key are skipped and reported", async () => {
  const items = [
    { id: 1, text: "a\u0000b" },
    { id: 2, text: "lone \ud800 high" },
    { id: 3, text: "x".repeat(200_000) },
    { id: 4, text: "first" },
    { id: 4, text: "last" },
    { id: 7, text: "number" },
    { id: "7", text: "string" },
    { id: "8\udc00", text: "an id with a lone surrogate" },
  ];
  const service = listOf(() => items);
  const path = await fresh("odd.jsonl");
  const jsonl = await syncList(service.client, "things", {
    id: (item: { id: string | number }) => String(item.id),
    sink: createJsonlSink(path),
  });
  equal(jsonl.skipped, 0);
  const lines = (await Deno.readTextFile(path)).trimEnd().split("\n");
  deepStrictEqual(
    lines.map((line) => JSON.parse(line)),
    items.filter((_, i) => i !== 3 && i !== 5),
  );
  const database = new DatabaseSync(":memory:");
  const events: unknown[] = [];
  const sqlite = await syncList(service.client, "things", {
    id: (item: { id: string | number }) => String(item.id),
    sink: createSqliteSink(database, { table: "things" }),
    onEvent: (event) => events.push(event),
  });
  equal(sqlite.skipped, 1);
  deepStrictEqual(sqlite.skippedIds, ["8\udc00"]);
  deepStrictEqual(events, [{ type: "sync.skipped", ids: ["8\udc00"] }]);
  const rows = database.prepare('SELECT id, item FROM "things" ORDER BY id')
    .all() as { id: string; item: string }[];
  database.close();
  deepStrictEqual(
    rows.map((row) => [row.id, JSON.parse(row.item).text]),
    [
      ["1", "a\u0000b"],
      ["2", "lone \ud800 high"],
      ["3", "x".repeat(200_000)],
      ["4", "last"],
      ["7", "string"],
    ],
  );
});

Deno.test("every file sink skips and reports an item JSON cannot hold (a BigInt, a toJSON giving nothing): its line or row stays as it was through whole sweeps, the counts exact", async () => {
  type Thing = { id: string; v: number };
  const things: Thing[] = Array.from({ length: 6 }, (_, i) => ({
    id: `t${i}`,
    v: 0,
  }));
  const service = listOf(() => things);
  let odd: "bigint" | "nothing" | undefined;
  const items = (body: unknown) =>
    (body as Thing[]).map((item) =>
      item.id !== "t3" || odd === undefined
        ? item
        : odd === "bigint"
        ? { ...item, big: 1n }
        : { ...item, toJSON: () => undefined }
    );
  const path = await fresh("unstorable.jsonl");
  const database = new DatabaseSync(":memory:");
  const sinks: [string, SyncSink<Thing>, () => Promise<Thing[]>][] = [
    ["jsonl", createJsonlSink(path), async () => {
      const lines = (await Deno.readTextFile(path)).trimEnd().split("\n");
      const last = new Map(
        lines.map((line) => JSON.parse(line)).map((item) => [item.id, item]),
      );
      return [...last.values()].sort((a, b) => a.id < b.id ? -1 : 1);
    }],
    ["sqlite", createSqliteSink(database, { table: "things" }), () => {
      const rows = database.prepare('SELECT item FROM "things" ORDER BY id')
        .all();
      return Promise.resolve(rows.map((row) => JSON.parse(`${row.item}`)));
    }],
  ];
  for (const [name, sink, copy] of sinks) {
    const options = { id: "id", sink, items, sweep: Infinity };
    [odd, things[3]!.v, things[4]!.v] = [undefined, 0, 0];
    equal((await syncList(service.client, "things", options)).inserted, 6);
    things[3]!.v = things[4]!.v = 1;
    for (odd of ["bigint", "nothing"] as const) {
      const run = await syncList(service.client, "things", options);
      deepStrictEqual(run.skippedIds, ["t3"], `${name} ${odd}`);
      const counts = [run.inserted, run.updated, run.deleted].join();
      equal(counts, odd === "bigint" ? "0,1,0" : "0,0,0", `${name} ${odd}`);
      deepStrictEqual((await copy()).map((item) => item.v), [0, 0, 0, 0, 1, 0]);
    }
    odd = undefined;
    const run = await syncList(service.client, "things", options);
    equal(
      [run.skipped, run.inserted, run.updated, run.deleted].join(),
      "0,0,1,0",
    );
    deepStrictEqual((await copy()).map((item) => item.v), [0, 0, 0, 1, 1, 0]);
  }
  database.close();
});

/** A JSONL and a SQLite copy of `things`, each read back as its items by id. */
async function twoCopies(name: string) {
  const path = await fresh(`${name}.jsonl`);
  const database = new DatabaseSync(":memory:");
  const jsonl = async () => {
    const text = await Deno.readTextFile(path);
    const rows = text.trimEnd().split("\n").map((line) => JSON.parse(line));
    return new Map(rows.map((row) => [String(row.id), row]));
  };
  const sqlite = () => {
    const rows = database.prepare('SELECT item FROM "things"').all();
    const items = rows.map((row) => JSON.parse(`${row.item}`));
    return Promise.resolve(
      new Map(items.map((item) => [String(item.id), item])),
    );
  };
  return [
    { name: "jsonl", sink: () => createJsonlSink(path), items: jsonl },
    {
      name: "sqlite",
      sink: () => createSqliteSink(database, { table: "things" }),
      items: sqlite,
    },
  ];
}

Deno.test("a skipped item stays as the copy last had it through a cycle of small sweeps, moved to the end (met only by the head) or met again after an update the cycle read, in JSONL as in SQLite", async () => {
  type Thing = { id: string; s: number; v: number };
  for (const scene of ["moved past the end", "met twice"] as const) {
    for (
      const copy of await twoCopies(`skipped-${scene.replaceAll(" ", "-")}`)
    ) {
      const things: Thing[] = Array.from(
        { length: 100 },
        (_, i) => ({ id: `t${i}`, s: i * 10, v: 0 }),
      );
      const bad = new Set<string>();
      const service = listOf(() => [...things].sort((a, b) => a.s - b.s), {
        maxLimit: 25, // windows of 25: a cycle takes several runs
      });
      const items = (body: unknown) =>
        (body as Thing[]).map((item) =>
          bad.has(item.id) ? { ...item, big: 1n } : item
        );
      const run = (sweep: number) =>
        syncList(service.client, "things", {
          id: "id",
          sortBy: "s",
          sink: copy.sink(),
          items,
          sweep,
          limit: 25,
        });
      await run(0);
      // The cycle about to begin reads it in its first window, updated; then it turns unstorable ahead of the cursor.
      if (scene === "met twice") things[0]!.v = 2;
      await run(1); // a cycle begins
      if (scene === "moved past the end") {
        // Unstorable now, and past the copy's end: only the head meets it.
        bad.add("t80");
        things[80]!.s = 5_000;
      } else {
        bad.add("t0");
        things[0]!.s = 455;
      }
      let deleted = 0;
      for (let i = 0; i < 12; i++) deleted += (await run(1)).deleted;
      equal(deleted, 0, `${scene}, ${copy.name}`);
      const held = await copy.items();
      equal(held.size, 100, `${scene}, ${copy.name}`);
      if (scene === "met twice") equal(held.get("t0")?.v, 2, copy.name);
    }
  }
});

Deno.test("JSONL sink: an item whose toJSON gives null, a text or an object without its id is skipped and reported, by the sweep as by the head, never written as a line no run can read back", async () => {
  const things = Array.from({ length: 6 }, (_, i) => ({ id: `t${i}`, v: 0 }));
  let odd: unknown;
  const service = listOf(() => things);
  const items = (body: unknown) =>
    (body as typeof things).map((item) =>
      ["t3", "t6"].includes(item.id) && odd !== undefined
        ? { ...item, toJSON: () => odd }
        : item
    );
  const path = await fresh("tojson.jsonl");
  const options = { id: "id", sink: createJsonlSink(path), items };
  await syncList(service.client, "things", { ...options, sweep: Infinity });
  for (odd of [null, "text", { other: 1 }]) {
    things[3]!.v++;
    const run = await syncList(service.client, "things", {
      ...options,
      sweep: Infinity,
    });
    deepStrictEqual(run.skippedIds, ["t3"], JSON.stringify(odd));
  }
  things.push({ id: "t6", v: 0 }); // new: met by the head alone
  const head = await syncList(service.client, "things", {
    ...options,
    sweep: 0,
  });
  deepStrictEqual(head.skippedIds, ["t6"]);
  odd = undefined;
  const run = await syncList(service.client, "things", {
    ...options,
    sweep: Infinity,
  });
  equal([run.inserted, run.updated, run.deleted].join(), "1,1,0");
  const lines = (await Deno.readTextFile(path)).trimEnd().split("\n");
  equal(lines.length, 7);
  equal(JSON.parse(lines.find((line) => line.includes('"t3"'))!).v, 3);
});

Deno.test("JSONL sink: items of a class are written when their JSON reads back as their key (a toJSON that keeps the fields), skipped and reported when it does not (getters JSON leaves out, an array's own fields)", async () => {
  type Raw = { id: string; s: number };
  class Kept {
    constructor(readonly raw: Raw) {}
    toJSON() {
      return { ...this.raw, kind: "kept" };
    }
    get id() {
      return this.raw.id;
    }
    get s() {
      return this.raw.s;
    }
  }
  class Getters {
    readonly #raw: Raw;
    constructor(raw: Raw) {
      this.#raw = raw;
    }
    get id() {
      return this.#raw.id;
    }
    get s() {
      return this.#raw.s;
    }
  }
  const things = Array.from({ length: 4 }, (_, i) => ({ id: `t${i}`, s: i }));
  for (const Item of [Kept, Getters]) {
    const service = listOf(() => things);
    const items = (body: unknown) =>
      (body as Raw[]).map((raw) => new Item(raw));
    const path = await fresh(`class-${Item.name}.jsonl`);
    const options = {
      id: "id",
      sortBy: "s",
      sink: createJsonlSink(path),
      items,
    };
    for (const sweep of [0, Infinity, Infinity]) {
      const run = await syncList(service.client, "things", {
        ...options,
        sweep,
      });
      equal(run.skipped, Item === Kept ? 0 : 4, Item.name);
    }
    const text = await Deno.readTextFile(path).catch(() => "");
    equal(text.split("\n").filter(Boolean).length, Item === Kept ? 4 : 0);
  }
  // An array with the fields as its own: JSON keeps the elements alone.
  const service = listOf(() => things);
  const items = (body: unknown) =>
    (body as Raw[]).map((raw) => Object.assign([raw.id], raw));
  const path = await fresh("class-array.jsonl");
  const options = { id: "id", sortBy: "s", sink: createJsonlSink(path), items };
  for (const sweep of [0, Infinity]) {
    equal(
      (await syncList(service.client, "things", { ...options, sweep })).skipped,
      4,
    );
  }
});

Deno.test("JSONL sink: a plain object whose JSON loses its key (a non-enumerable id, an id read from a nested Date or Map, a nested toJSON) is skipped and reported, and the copy goes on: it was written, and every later cycle failed", async () => {
  type Raw = { id: string; s: number };
  const things = Array.from({ length: 4 }, (_, i) => ({ id: `t${i}`, s: i }));
  const cases: [
    string,
    (raw: Raw) => unknown,
    string | ((x: never) => string),
  ][] = [
    [
      "hidden",
      (raw) => Object.defineProperty({ s: raw.s }, "id", { value: raw.id }),
      "id",
    ],
    [
      "date",
      (raw) => ({ ...raw, at: new Date(raw.s) }),
      (x: { at: Date; id: string }) => `${x.at.toISOString()}-${x.id}`,
    ],
    [
      "map",
      (raw) => ({ s: raw.s, ref: new Map([["uid", raw.id]]) }),
      (x: { ref: Map<string, string> }) => x.ref.get("uid")!,
    ],
    [
      "nested",
      (raw) => ({ s: raw.s, org: { id: raw.id, toJSON: () => "hidden" } }),
      (x: { org: { id: string } }) => x.org.id,
    ],
  ];
  for (const [name, make, id] of cases) {
    const service = listOf(() => things);
    const items = (body: unknown) => (body as Raw[]).map(make);
    const path = await fresh(`plain-${name}.jsonl`);
    const options = { id, sortBy: "s", sink: createJsonlSink(path), items };
    for (const sweep of [0, Infinity, Infinity]) {
      const run = await syncList(service.client, "things", {
        ...options,
        sweep,
      } as never);
      equal(run.skipped, 4, name);
    }
  }
});

// The files of a copy (issue 45): a handle is checked to be the path's own
// file before anything is written through it, and every file failure is a
// SyncError naming the file.

/** A file outside the copy's files, and its bytes. */
async function outsideFile(name: string): Promise<[string, string]> {
  const path = await fresh(`outside-${name}`);
  const bytes = "another user's 0600 file\n";
  await Deno.writeTextFile(path, bytes, { mode: 0o600 });
  return [path, bytes];
}

Deno.test("a hard link to another file, planted as a copy's file, is refused before a byte is written", async () => {
  const [outside, bytes] = await outsideFile("hard");
  const path = await fresh("hard.jsonl");
  await Deno.link(outside, path);
  await refused(openFile(path, "write"), "link", path);
  equal(await Deno.readTextFile(outside), bytes);
});

Deno.test("SQLite sink: a hard link to another file, planted as the database or its journal, is refused before a byte is written", async () => {
  const items = Array.from({ length: 30 }, (_, i) => ({ n: `${1000 + i}` }));
  const service = listOf(() => items);
  for (const suffix of ["", "-wal", "-shm", "-journal"]) {
    // Empty, as another user may plant it: a new database, or a journal to fill.
    const outside = await fresh(`outside-sqlite${suffix}`);
    await Deno.writeTextFile(outside, "", { mode: 0o600 });
    const path = await fresh(`hard${suffix}.db`);
    const sync = async () => {
      using sink = createSqliteSink(path, { table: "things" });
      return await syncList(service.client, "things", { id: "n", sink });
    };
    await sync();
    await Deno.remove(`${path}${suffix}`).catch(() => {});
    await Deno.link(outside, `${path}${suffix}`);
    await refused(sync(), "link", `${path}${suffix}`);
    equal(await Deno.readTextFile(outside), "", suffix);
  }
});

Deno.test("SQLite sink: a hard link planted at a new copy's journal is refused before the copy's file is made (r182 F3: an empty 0600 file stayed behind)", async () => {
  for (const suffix of ["-wal", "-shm", "-journal"]) {
    const [outside, bytes] = await outsideFile(`new-sqlite${suffix}`);
    const path = await fresh(`new-linked${suffix}.db`);
    await Deno.remove(`${path}${suffix}`).catch(() => {}); // an earlier test run's
    await Deno.link(outside, `${path}${suffix}`);
    await refused(
      Promise.resolve().then(() => createSqliteSink(path, { table: "t" })),
      "link",
      `${path}${suffix}`,
    );
    await rejects(Deno.lstat(path), Deno.errors.NotFound, suffix);
    equal(await Deno.readTextFile(outside), bytes, suffix);
  }
});

Deno.test("JSONL sink: a hard link to another file, planted as the copy's .lock, .lock.takeover or .rewrite (files only runs make), is refused, naming it, and the file is left as it was", async () => {
  const items = Array.from({ length: 30 }, (_, i) => ({ n: `${1000 + i}` }));
  const service = listOf(() => items);
  for (const suffix of [".lock", ".lock.takeover", ".rewrite"]) {
    const [outside, bytes] = await outsideFile(`jsonl${suffix}`);
    const path = await fresh(`hard${suffix}.jsonl`);
    await Deno.remove(`${path}${suffix}`).catch(() => {}); // an earlier test run's
    const sink = createJsonlSink(path);
    const sync = () =>
      syncList(service.client, "things", { id: "n", sink, sweep: Infinity });
    await sync();
    if (suffix === ".lock.takeover") {
      // A stale lock: the run takes it over through the guard file.
      await Deno.writeTextFile(`${path}.lock`, '{"owner":"gone","pid":1}');
      const past = new Date(Date.now() - 60_000);
      await Deno.utime(`${path}.lock`, past, past);
    }
    await Deno.link(outside, `${path}${suffix}`);
    await refused(sync(), "link", `${path}${suffix}`);
    equal(await Deno.readTextFile(outside), bytes, suffix);
  }
});

Deno.test("a folder where a copy's lock, rewrite or SQLite journal belongs is a SyncError 'file' naming it, not the database, nor 'link' (a folder's nlink is not a hard link's)", async () => {
  const items = Array.from({ length: 30 }, (_, i) => ({ n: `${1000 + i}` }));
  const service = listOf(() => items);
  const sinks: [string, string[], (path: string) => SyncSink<unknown>][] = [
    ["jsonl", [".lock", ".rewrite"], (path) => createJsonlSink(path)],
    [
      "db",
      ["-wal", "-shm", "-journal"],
      (path) => createSqliteSink(path, { table: "things" }),
    ],
  ];
  for (const [kind, suffixes, make] of sinks) {
    for (const suffix of suffixes) {
      const path = await fresh(`folder${suffix}.${kind}`);
      await Deno.remove(`${path}${suffix}`, { recursive: true }).catch(
        () => {},
      );
      await Deno.remove(`${path}.rewrite`).catch(() => {}); // an earlier test run's
      const sync = async () => {
        const sink = make(path);
        try {
          const options = { id: "n", sink, sweep: Infinity };
          return await syncList(service.client, "things", options);
        } finally {
          (sink as Partial<Disposable>)[Symbol.dispose]?.();
        }
      };
      await sync();
      await Deno.mkdir(`${path}${suffix}`);
      await refused(sync(), "file", `${path}${suffix}`);
      await Deno.remove(`${path}${suffix}`);
    }
  }
});

Deno.test("every file failure is a SyncError naming the file: a missing file or folder, a file already there", async () => {
  const path = await fresh("plain.jsonl");
  await Deno.writeTextFile(path, "{}\n");
  await refused(openFile(path, "create"), "file", path);
  const gone = ".test-tmp/sync-files/no-such-folder/copy.jsonl";
  await refused(openFile(gone, "write"), "file", gone);
  await refused(openFile(gone, "create"), "file", gone);
  await refused(replaceFile(gone, "{}", "run"), "file", `${gone}.run.tmp`);
  equal(await readText(gone), undefined, "a missing file reads as none");
});

Deno.test("a copy in a missing folder is a SyncError naming it, from the SQLite sink as from the JSONL one", async () => {
  const gone = ".test-tmp/sync-files/missing/dir";
  const db = `${gone}/copy.db`;
  const opened = Promise.resolve().then(() =>
    createSqliteSink(db, { table: "transactions" })
  );
  await refused(opened, "file", db);
  const fake = inProcess({ items: { transactions: 3 } });
  const jsonl = `${gone}/copy.jsonl`;
  const sink = createJsonlSink(jsonl);
  const options = { id: "transactionID", sink };
  await rejects(syncList(fake.client, "transactions", options), (error) => {
    ok(error instanceof SyncError, String(error));
    equal(error.reason, "file");
    ok(error.path?.startsWith(jsonl), error.path);
    return true;
  });
});

Deno.test("SQLite sink: a copy whose folder is removed during a run fails it with SyncError 'file' naming the database, not a success written to a deleted file", async () => {
  const path = await freshTarget("sync-safety-gone", "copy.db");
  const folder = path.slice(0, path.lastIndexOf("/"));
  const items = Array.from({ length: 300 }, (_, i) => ({ n: `${1000 + i}` }));
  let removeAt = Infinity;
  const service = listOf(() => items, {
    answer: (page, n) => {
      if (n === removeAt) Deno.removeSync(folder, { recursive: true });
      return page;
    },
  });
  const options = { id: "n", maxLimit: 100 };
  {
    using sink = createSqliteSink(path, { table: "things" });
    await syncList(service.client, "things", { ...options, sink });
  }
  using sink = createSqliteSink(path, { table: "things" });
  removeAt = service.requests + 2;
  await rejects(
    syncList(service.client, "things", { ...options, sink, sweep: Infinity }),
    (error: SyncError) =>
      error instanceof SyncError && error.reason === "file" &&
      error.path === path,
  );
});

Deno.test("JSONL sink: a copy removed during a run fails it with SyncError 'file' naming it, not 'lock-lost' (no other run took it), and is not created again", async () => {
  const path = await fresh("removed-midrun.jsonl");
  const items = Array.from({ length: 300 }, (_, i) => ({ n: `${1000 + i}` }));
  let removeAt = Infinity;
  const service = listOf(() => items, {
    answer: (page, n) => {
      if (n === removeAt) Deno.removeSync(path);
      return page;
    },
  });
  const options = { id: "n", maxLimit: 100, sink: createJsonlSink(path) };
  await syncList(service.client, "things", options);
  items.push(...Array.from({ length: 300 }, (_, i) => ({ n: `${2000 + i}` })));
  removeAt = service.requests + 2; // the head's second window
  await refused(syncList(service.client, "things", options), "file", path);
  // Not made again, empty, by the write that found it gone.
  equal(await Deno.lstat(path).then(() => "there", () => "gone"), "gone");
});

Deno.test("SQLite sink: a table of yours where it would keep the copy or its changes is refused before anything is created, altered or written", async () => {
  const service = listOf(() => [{ id: "a" }, { id: "b" }]);
  for (
    const tables of [
      "CREATE TABLE things (name TEXT, price INTEGER)",
      "CREATE TABLE things (id INTEGER PRIMARY KEY, note TEXT)",
      "CREATE TABLE things (id TEXT, item TEXT)",
      "CREATE TABLE things (id TEXT PRIMARY KEY, item TEXT, deleted_at INTEGER)",
      "CREATE TABLE things_changes (note TEXT); INSERT INTO things_changes VALUES ('mine')",
      "CREATE TABLE things_changes (seq INTEGER PRIMARY KEY, id TEXT, change TEXT, at TEXT, note TEXT); INSERT INTO things_changes VALUES (1, 'x', 'mine', 'then', 'mine')",
    ]
  ) {
    const database = new DatabaseSync(":memory:");
    database.exec(tables);
    // Every table's schema and rows.
    const all = () =>
      JSON.stringify(
        database.prepare(
          "SELECT name, sql FROM sqlite_master WHERE type = 'table'",
        ).all().map((
          table,
        ) => [table, database.prepare(`SELECT * FROM "${table.name}"`).all()]),
      );
    const before = all();
    const sink = createSqliteSink(database, { table: "things" });
    await refused(
      syncList(service.client, "things", { id: "id", sink, changes: true }),
      "sink-mismatch",
    );
    equal(all(), before, tables);
    database.close();
  }
});

Deno.test("SQLite sink: every failure of its file is a SyncError 'file' naming it: a folder, read-only, full; a file that is not a database, of one byte too, is a copy it did not make ('sink-mismatch', as a JSONL file of other lines)", async () => {
  const items = Array.from({ length: 300 }, (_, i) => ({ n: `${1000 + i}` }));
  const service = listOf(() => items, { maxLimit: 100 });
  const sync = (sink: SyncSink<unknown>) =>
    syncList(service.client, "things", { id: "n", sink, sweep: Infinity });
  const opened = async (path: string) => {
    using sink = createSqliteSink(path, { table: "things" });
    return await sync(sink);
  };
  const garbage = await fresh("garbage.db");
  await Deno.writeTextFile(garbage, "my notes, not a database\n".repeat(200));
  await refused(opened(garbage), "sink-mismatch", garbage);
  // Of one byte, SQLite takes it for an empty database (outside review r138 F1: a database was written over it).
  const short = await fresh("short.db");
  await Deno.writeTextFile(short, "x");
  await refused(opened(short), "sink-mismatch", short);
  equal(await Deno.readTextFile(short), "x");
  // Given open alike (outside review r140 F1: written over).
  const handle = new DatabaseSync(short);
  const absoluteShort = await Deno.realPath(short);
  await refused(
    sync(createSqliteSink(handle, { table: "things" })),
    "sink-mismatch",
    absoluteShort,
  );
  handle.close();
  equal(await Deno.readTextFile(short), "x");
  // Emptied beside its log (SQLite writes the header first): SQLite would drop the log and its rows (r140 F2).
  const emptied = await fresh("emptied.db");
  await opened(emptied);
  const other = await fresh("emptied-log.db");
  const log = new DatabaseSync(other);
  log.exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0");
  log.exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  await Deno.copyFile(`${other}-wal`, `${emptied}-wal`);
  log.close();
  await Deno.writeFile(emptied, new Uint8Array());
  await refused(opened(emptied), "sink-mismatch", emptied);
  equal((await Deno.stat(`${emptied}-wal`)).size > 0, true);
  const folder = await fresh("folder.db");
  await Deno.mkdir(folder);
  await refused(opened(folder), "file", folder);
  // A database given open: named as SQLite names it.
  const path = await fresh("given.db");
  await opened(path);
  items.push({ n: "2000" });
  const absolute = await Deno.realPath(path);
  const readOnly = new DatabaseSync(path, { readOnly: true });
  await refused(
    sync(createSqliteSink(readOnly, { table: "things" })),
    "file",
    absolute,
  );
  readOnly.close();
  const full = new DatabaseSync(path);
  full.exec("PRAGMA max_page_count = 1"); // no page more: SQLITE_FULL
  items.push(...Array.from({ length: 500 }, (_, i) => ({ n: `${3000 + i}` })));
  await refused(
    sync(createSqliteSink(full, { table: "things" })),
    "file",
    absolute,
  );
  full.close();
});
