// The JSONL sink against the SQL sinks' behaviour and its own files: the
// cycle's guard, its counts, its side and rewrite files. Real files under
// .test-tmp, the fake list in process.

import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import {
  createJsonlSink,
  createSqliteSink,
  SyncError,
  type SyncErrorReason,
  syncList,
  type SyncSink,
  type SyncWriteContext,
} from "../src/sync/mod.ts";
import { replaceFile } from "../src/sync/_files.ts";
import { EMPTY, endAfter } from "../src/sync/_jsonl_state.ts";
import { changedLines } from "../src/sync/_jsonl_cycle.ts";
import fc from "fast-check";
import {
  counts,
  freshTarget,
  inProcess,
  listOf,
  type Thing,
  things,
} from "./_sync_fake.ts";

/** A path for a JSONL copy, with no copy (nor rewrite) there. */
async function fresh(name: string): Promise<string> {
  const path = await freshTarget("sync-jsonl", name);
  await Deno.remove(`${path}.rewrite`).catch(() => {});
  return path;
}

/** A direct write's checkpoint (the sink stores it as it is). */
const CHECKPOINT = {
  version: 1 as const,
  path: "things",
  sortBy: "thingID",
  id: "thingID",
  query: {},
  edge: null,
  offset: 0,
  full: false,
  complete: true,
};

/** Rejects with a SyncError of `reason` naming `path`: never a bare SyntaxError, nor a success. */
async function refused(
  promise: Promise<unknown>,
  reason: SyncErrorReason,
  path: string,
): Promise<void> {
  await rejects(promise, (error: unknown) => {
    ok(error instanceof SyncError, String(error));
    equal(error.reason, reason, error.message);
    equal(error.path, path);
    return true;
  });
}

Deno.test("JSONL sink: a cycle's end weighs maxDeletes against the copy's live lines, the head's lines since the cycle began included, as SQLite does", async () => {
  const path = await fresh("held.jsonl");
  const sinks: [string, () => SyncSink<Thing>][] = [
    ["SQLite", () => createSqliteSink(":memory:", { table: "things" })],
    ["JSONL", () => createJsonlSink(path)],
  ];
  for (const [name, make] of sinks) {
    const list = things(1000, { step: 10 });
    const service = listOf(() => list, { maxLimit: 100 });
    const sink = make();
    const options = { id: "thingID", sink, limit: 100, maxLimit: 100 };
    await syncList(service.client, "things", { ...options, sweep: 0 });
    await syncList(service.client, "things", { ...options, sweep: 1 }); // the cycle begins
    list.push(
      ...things(1000).map((t) => ({ thingID: `u${t.thingID}` })),
    );
    list.splice(500, 150); // 7.5 % of the 2,000 the copy holds
    const result = await syncList(service.client, "things", {
      ...options,
      sweep: 100,
      maxDeletes: 0.1,
    });
    equal(result.deleted, 150, name);
    (sink as { close?: () => void }).close?.();
  }
  const lines = (await Deno.readTextFile(path)).split("\n").filter(Boolean);
  equal(lines.length, 1850);
});

/** Two 8-letter notes whose lines for `id` have one 32-bit FNV-1a (a birthday search): what 0.4's digest took for one. */
function collidingNotes(id: string): [string, string] {
  const fnv = (text: string) => {
    let hash = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) {
      hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
    }
    return hash;
  };
  const seen = new Map<number, string>();
  for (let i = 0;; i++) {
    const note = i.toString(36).padStart(8, "0");
    const hash = fnv(JSON.stringify({ thingID: id, note }));
    const other = seen.get(hash);
    if (other !== undefined) return [other, note];
    seen.set(hash, note);
  }
}

Deno.test("JSONL sink: a cycle that removes rows under the guard writes the items its windows read as they are now, and counts them updated, as SQLite does (newcomer r185b N1: the rows its end kept were written again as they were, after the window's new lines, so no update ever landed while the list lost items)", async () => {
  for (const kind of ["jsonl", "sqlite"]) {
    let list = things(100);
    const service = listOf(() => list);
    const path = await fresh(`kept-updates.${kind}`);
    const database = new DatabaseSync(":memory:");
    using sqlite = createSqliteSink<Thing>(database, { table: "things" });
    const sink = kind === "jsonl" ? createJsonlSink<Thing>(path) : sqlite;
    const options = { id: "thingID", sink, sweep: Infinity };
    await syncList(service.client, "things", options);
    // One gone, four changed: one cycle, one window, the guard on.
    list = list.filter((_, i) => i !== 50).map((t, i) =>
      i % 30 === 1 ? { ...t, note: "changed" } : t
    );
    const result = await syncList(service.client, "things", options);
    deepStrictEqual(counts(result), [0, 4, 1], kind); // inserted, updated, deleted
    const copy = kind === "jsonl"
      ? (await Deno.readTextFile(path)).trim().split("\n").map((l) =>
        JSON.parse(l)
      )
      : database.prepare('SELECT item FROM "things" ORDER BY id').all()
        .map((row) => JSON.parse(String(row.item)));
    deepStrictEqual(copy, list, kind);
  }
});

Deno.test("JSONL sink: a cycle counts a changed line as updated even where a 32-bit digest and the length would take it for the same", async () => {
  const path = await fresh("digest.jsonl");
  const [before, after] = collidingNotes("t0050");
  const list = Array.from({ length: 100 }, (_, i) => ({
    thingID: `t${String(i).padStart(4, "0")}`,
    note: "00000000",
  }));
  list[50] = { thingID: "t0050", note: before };
  const service = listOf(() => list, { maxLimit: 100 });
  const options = { id: "thingID", sink: createJsonlSink(path) };
  await syncList(service.client, "things", options);
  list[50] = { thingID: "t0050", note: after };
  const result = await syncList(service.client, "things", {
    ...options,
    sweep: Infinity,
  });
  deepStrictEqual(counts(result), [0, 1, 0]);
  ok((await Deno.readTextFile(path)).includes(after));
});

Deno.test("JSONL sink: a side file it cannot replace fails with SyncError 'file' naming it (cannot rename <temporary> to <side file>), and leaves no temporary file behind", async () => {
  const path = await fresh("stuck.jsonl");
  const side = `${path}.checkpoint.json`;
  // A rename over a folder that holds a file fails as one over a side file the run may not write does (chattr +i,
  // --deny-write=<side file>), after the temporary file was written.
  await Deno.mkdir(`${side}/inside`, { recursive: true });
  await Deno.remove(`${side}.run.tmp`).catch(() => {}); // left by a failed run of 0.4
  await rejects(replaceFile(side, "{}", "run"), (error: unknown) => {
    ok(error instanceof SyncError, String(error));
    equal(error.reason, "file");
    equal(error.path, side);
    const says = `Cannot sync: cannot rename ${side}.run.tmp to ${side} (`;
    ok(error.message.startsWith(says), error.message);
    return true;
  });
  const folder = path.slice(0, path.lastIndexOf("/"));
  const left = [...Deno.readDirSync(folder)].map((entry) => entry.name);
  deepStrictEqual(left.filter((name) => name.endsWith(".tmp")), []);
  await Deno.remove(side, { recursive: true });
});

Deno.test("JSONL sink: a cycle's .rewrite removed between runs costs the cycle's progress, not the copy: the next run begins it again and it completes, nothing lost; a .rewrite cut short is refused with advice that works", async () => {
  const path = await fresh("rewrite-gone.jsonl");
  const list = things(500);
  const service = listOf(() => list, { maxLimit: 100 });
  const options = { id: "thingID", sweep: 1, limit: 50, maxLimit: 100 };
  const run = () =>
    syncList(service.client, "things", {
      ...options,
      sink: createJsonlSink(path),
    });
  await run();
  await run(); // the cycle begins: its first window in the rewrite
  ok((await Deno.stat(`${path}.rewrite`)).size > 0);
  await Deno.writeTextFile(`${path}.rewrite`, "{}\n");
  await rejects(createJsonlSink(path).load(), (error: unknown) => {
    ok(error instanceof SyncError && error.reason === "sink-mismatch");
    ok(error.message.includes(`: remove ${path}.rewrite (`), error.message);
    return true;
  });
  await Deno.remove(`${path}.rewrite`);
  let deleted = 0, verified = false;
  for (let runs = 0; runs < 10 && !verified; runs++) {
    const result = await run();
    deleted += result.deleted;
    verified = result.verifiedAt !== undefined;
  }
  ok(verified, "the cycle completes");
  equal(deleted, 0);
  const ids = (await Deno.readTextFile(path)).split("\n").filter(Boolean)
    .map((line) => JSON.parse(line).thingID);
  deepStrictEqual(ids, list.map((thing) => thing.thingID));
});

Deno.test('JSONL sink: a path that is a folder is refused as one ("file", as a folder where any file of a copy belongs), with or without a side file beside it', async () => {
  const path = await fresh("folder.jsonl");
  await Deno.remove(path, { recursive: true }).catch(() => {});
  await Deno.mkdir(path);
  const service = listOf(() => things(3));
  const options = { id: "thingID", sink: createJsonlSink(path) };
  for (const side of [false, true]) {
    if (side) await Deno.writeTextFile(`${path}.checkpoint.json`, "{}");
    await rejects(syncList(service.client, "things", options), (error) => {
      ok(error instanceof SyncError && error.reason === "file");
      equal(error.path, path);
      ok(error.message.includes(`${path} is a folder`), error.message);
      ok(!error.message.includes("bytes"), error.message);
      return true;
    });
  }
  await Deno.remove(path);
  await Deno.remove(`${path}.checkpoint.json`);
});

Deno.test("JSONL sink: changes: true is refused (TypeError, option 'changes') before any request or file, as deletes: 'mark' is: a JSONL file keeps no change table", async () => {
  const path = await fresh("changes.jsonl");
  const service = listOf(() => things(3));
  const sink = createJsonlSink(path);
  for (const refused of [{ changes: true }, { deletes: "mark" as const }]) {
    await rejects(
      syncList(service.client, "things", { id: "thingID", sink, ...refused }),
      (error: unknown) => {
        ok(error instanceof TypeError, String(error));
        equal((error as { option?: string }).option, Object.keys(refused)[0]);
        return true;
      },
    );
  }
  equal(service.requests, 0);
  await rejects(Deno.stat(path));
  const result = await syncList(service.client, "things", {
    id: "thingID",
    sink,
    changes: false,
  });
  equal(result.inserted, 3);
});

Deno.test("JSONL sink: a copy removed, cut or replaced by another process after a run's look fails that run at its first write (SyncError naming it; a removed one is not created again), never written past its end as a hole of NUL bytes; the next run is refused 'sink-mismatch'", async () => {
  const faults: [string, SyncErrorReason, (path: string) => void][] = [
    ["removed", "file", (path) => Deno.removeSync(path)],
    ["cut", "file", (path) => Deno.truncateSync(path, 10)],
    ["replaced", "sink-mismatch", (path) => {
      const size = Deno.statSync(path).size;
      Deno.writeTextFileSync(path, `${"x".repeat(size - 1)}\n`);
    }],
  ];
  for (const [name, reason, fault] of faults) {
    const path = await fresh(`midrun-${name}.jsonl`);
    const list = things(100);
    let faultAt = Infinity;
    const service = listOf(() => list, {
      maxLimit: 50,
      answer: (page, n) => {
        if (n === faultAt) fault(path);
        return page;
      },
    });
    const run = () =>
      syncList(service.client, "things", {
        id: "thingID",
        sink: createJsonlSink(path),
      });
    await run();
    list.push(...things(600).slice(100));
    faultAt = service.requests + 1; // the run's first window, after its load
    await refused(run(), reason, path);
    // A removed copy is not made again, empty, by the write that found it gone.
    const there = await Deno.lstat(path).then(() => true, () => false);
    equal(there, name !== "removed", `${name}: a file at the copy's path`);
    const left = await Deno.readFile(path).catch(() => new Uint8Array());
    ok(left.length <= 2_500 && !left.includes(0), `${name}: ${left.length}`);
    faultAt = Infinity;
    await refused(run(), "sink-mismatch", path);
  }
});

/** The lines of a JSONL file, without their ends. */
async function linesOf(path: string): Promise<string[]> {
  return (await Deno.readTextFile(path)).split("\n").slice(0, -1);
}

/** Writes `lines` over `path` as another process would: same file, new content. */
async function replaceLines(path: string, lines: string[]): Promise<string> {
  const text = lines.map((line) => `${line}\n`).join("");
  await Deno.writeTextFile(path, text);
  return text;
}

Deno.test("JSONL sink: a copy replaced between runs by lines of the same total length and the same last line, its first line another, is refused 'sink-mismatch' before any request and left byte for byte (only the length and the last line were checked: the run went on, 1 inserted and 1 deleted on a list that had not changed)", async () => {
  const list = things(100);
  const service = listOf(() => list);
  const replacements: [string, (lines: string[]) => string[]][] = [
    [
      "another-item",
      ([first, ...rest]) => [first!.replace('0"', '1"'), ...rest],
    ],
    ["reordered", (lines) => [...lines.slice(0, -1).reverse(), lines.at(-1)!]],
  ];
  for (const [name, replace] of replacements) {
    const path = await fresh(`same-length-${name}.jsonl`);
    const run = () =>
      syncList(service.client, "things", {
        id: "thingID",
        sweep: Infinity,
        sink: createJsonlSink(path),
      });
    await run();
    const lines = await linesOf(path);
    const text = await replaceLines(path, replace(lines));
    equal(text.length, lines.join("\n").length + 1, name);
    const requests = service.requests;
    const refusal = run();
    await refused(refusal, "sink-mismatch", path);
    // Refused before the copy was read: no progress to tell (a refused sweep's is: sync_guard_test.ts).
    equal((await refusal.catch((error) => error)).progress, undefined, name);
    equal(await Deno.readTextFile(path), text, name);
    equal(service.requests, requests, `${name}: no request`);
  }
});

Deno.test("JSONL sink: a side file written before the first line was fingerprinted still loads, its copy checked as before (length, last line); the next completed cycle records the first line, and a same-length replacement is then refused", async () => {
  const path = await fresh("side-without-first.jsonl");
  const service = listOf(() => things(100));
  const run = (sweep: number) =>
    syncList(service.client, "things", {
      id: "thingID",
      sweep,
      sink: createJsonlSink(path),
    });
  await run(Infinity);
  const side = `${path}.checkpoint.json`;
  const record = JSON.parse(await Deno.readTextFile(side));
  ok(record.end.first, "the first line recorded");
  delete record.end.first; // as the previous version wrote it
  await Deno.writeTextFile(side, JSON.stringify(record));
  const [first, ...rest] = await linesOf(path);
  // No existing copy is refused for what its record lacks: this one loads.
  await replaceLines(path, [first!.replace('0"', '1"'), ...rest]);
  deepStrictEqual(counts(await run(0)), [0, 0, 0]);
  await replaceLines(path, [first!, ...rest]);
  deepStrictEqual(counts(await run(Infinity)), [0, 0, 0]);
  ok(JSON.parse(await Deno.readTextFile(side)).end.first, "recorded again");
  const text = await replaceLines(path, [first!.replace('0"', '1"'), ...rest]);
  await refused(run(0), "sink-mismatch", path);
  equal(await Deno.readTextFile(path), text);
});

Deno.test("JSONL sink: a copy cut by another process while a sweep cycle is under way fails the cycle's end ('sink-mismatch', naming it) before the rewrite replaces it: the head's lines since the cycle began are not lost", async () => {
  const path = await fresh("cycle-cut.jsonl");
  const sink = createJsonlSink<Thing>(path);
  const list = things(20), old = list.slice(0, 10), ids = [] as string[];
  const head = { cycle: 1, phase: "head", changes: false } as const;
  const sweep = { ...head, phase: "sweep" } as const;
  await sink.write(old, CHECKPOINT, ids, head);
  await sink.write(old, CHECKPOINT, ids, { ...sweep, beginsCycle: true });
  const cycleBegan = (await Deno.stat(path)).size;
  await sink.write(list.slice(10), CHECKPOINT, ids, head);
  await Deno.truncate(path, cycleBegan);
  const ends: SyncWriteContext = {
    ...sweep,
    endsCycle: { deletes: "remove", maxDeletes: Infinity },
  };
  await refused(sink.write([], CHECKPOINT, ids, ends), "sink-mismatch", path);
  equal((await Deno.stat(path)).size, cycleBegan, "not replaced");
  await Deno.remove(`${path}.rewrite`);
});

Deno.test("JSONL sink: a copy with a line that is not JSON (changed between runs, its last line intact) is refused 'sink-mismatch' naming the copy, by the window guard and by a cycle's end, never a bare SyntaxError; the copy left byte for byte", async () => {
  const service = listOf(() => things(100));
  const damage = async (path: string) => {
    const file = await Deno.open(path, { write: true });
    await file.write(new TextEncoder().encode("x".repeat(10)));
    file.close();
    return await Deno.readTextFile(path);
  };
  for (const sweep of [3, Infinity]) {
    const path = await fresh(`damaged-line-${sweep}.jsonl`);
    const options = { id: "thingID", sink: createJsonlSink(path) };
    await syncList(service.client, "things", { ...options, sweep: Infinity });
    const before = await damage(path);
    const sync = syncList(service.client, "things", { ...options, sweep });
    await refused(sync, "sink-mismatch", path);
    equal(await Deno.readTextFile(path), before, `sweep ${sweep}`);
  }
  // A cycle's end reads the copy's lines too: a direct write, without the guard.
  const path = await fresh("damaged-line-end.jsonl");
  const sink = createJsonlSink<Thing>(path);
  const list = things(10), ids = [] as string[];
  const context = { cycle: 1, phase: "sweep", changes: false } as const;
  await sink.write(list, CHECKPOINT, ids, { ...context, phase: "head" });
  await sink.write(list, CHECKPOINT, ids, { ...context, beginsCycle: true });
  await damage(path);
  const ends: SyncWriteContext = {
    ...context,
    endsCycle: { deletes: "remove", maxDeletes: Infinity },
    keyOf: (item) => ({
      value: (item as Thing).thingID,
      id: (item as Thing).thingID,
    }),
  };
  await refused(sink.write([], CHECKPOINT, ids, ends), "sink-mismatch", path);
  await Deno.remove(`${path}.rewrite`);
});

Deno.test("a cycle's end keeps as changed exactly the old lines whose last new text differs, however its reads of the old copy are split into spans (a read each line cost most of a 100,000-line cycle's end)", () => {
  const cases = fc.record({
    lines: fc.array(fc.string({ maxLength: 12 }), {
      minLength: 1,
      maxLength: 40,
    })
      .map((lines) => lines.map((line) => line.replaceAll("\n", " "))),
    pairs: fc.array(fc.tuple(fc.nat(), fc.boolean(), fc.string())),
    span: fc.integer({ min: 0, max: 200 }),
  });
  fc.assert(fc.property(cases, ({ lines, pairs, span }) => {
    const bytes = new TextEncoder().encode(lines.map((l) => `${l}\n`).join(""));
    const ends = [...bytes.keys()].filter((i) => bytes[i] === 0x0a);
    const last = new Map<number, string>();
    const given = pairs.map(([at, same, text]): [number, string] => {
      const line = at % lines.length;
      last.set(line, same ? lines[line]! : text);
      return [line, last.get(line)!];
    });
    const expected = [...last].filter(([i, text]) => lines[i] !== text);
    const changed = new Set<number>();
    const read = (start: number, end: number) => bytes.subarray(start, end);
    changedLines(given, ends, changed, read, span);
    deepStrictEqual([...changed].sort(), expected.map(([i]) => i).sort());
  }));
});

/** A fake of `transactions` items, options copying them by date into the JSONL file `name`, and the ids it holds. */
async function byDate(
  name: string,
  transactions: number,
  sizes: { limit?: number; maxLimit: number },
) {
  const fake = inProcess({ items: { transactions } });
  const path = await fresh(`${name}.jsonl`);
  const sink = createJsonlSink(path);
  const options = {
    id: "transactionID",
    sortBy: "creationDate",
    sink,
    ...sizes,
  };
  const ids = async (): Promise<string[]> =>
    (await Deno.readTextFile(path)).trim().split("\n").map((line) =>
      JSON.parse(line).transactionID
    );
  return { fake, options, ids };
}

Deno.test("JSONL sink: a new item the head appends twice in one cycle (its date moved past the end again) is held once when the cycle ends, which counts no run's inserts below 0 (it reported -1)", async () => {
  const { fake, options, ids } = await byDate("appended-twice", 300, {
    maxLimit: 100,
  });
  const counts: number[][] = [];
  const run = async (sweep: number) => {
    const result = await syncList(fake.client, "transactions", {
      ...options,
      sweep,
    });
    counts.push([result.inserted, result.updated, result.deleted]);
  };
  await run(Infinity);
  await run(1); // a cycle under way
  const item = { transactionID: "tx_new", creationDate: "2990-01-01" };
  fake.service.insert("transactions", item);
  await run(0); // the head appends it
  fake.service.update("transactions", "tx_new", { creationDate: "2991-01-01" });
  await run(0); // and again
  await run(10); // the cycle ends
  ok(counts.flat().every((n) => n >= 0), JSON.stringify(counts));
  const held = await ids();
  deepStrictEqual([held.length, new Set(held).size], [301, 301]);
});

Deno.test("JSONL sink: items ahead of the sweep's cursor whose dates move past the copy's end are no deletes to the guard: their old lines are seen in the lines the head appended (20 of 170 lines refused the cycle at the default maxDeletes; SQLite let it through)", async () => {
  const { fake, options, ids } = await byDate("moved-ahead", 150, {
    limit: 25,
    maxLimit: 25,
  });
  await syncList(fake.client, "transactions", options);
  await syncList(fake.client, "transactions", { ...options, sweep: 1 });
  const list = await Array.fromAsync(
    fake.client.list<{ transactionID: string }>("transactions", {
      sortBy: "creationDate",
      limit: 1000,
    }),
  );
  for (let i = 0; i < 20; i++) {
    fake.service.update("transactions", list[60 + i]!.transactionID, {
      creationDate: `2990-01-01T00:00:${String(i).padStart(2, "0")}Z`,
    });
  }
  for (let run = 0; run < 12; run++) { // the cycle ends within them, never refused
    await syncList(fake.client, "transactions", { ...options, sweep: 1 });
  }
  const held = await ids();
  deepStrictEqual([held.length, new Set(held).size], [150, 150]);
});

Deno.test("JSONL sink: an item whose sort value moved has a line of each place until a cycle rewrites it, and is one row: 300 items weigh 300 in the window guard (360 named a share too small to confirm) and in the cycle's record (360 on record widened the day's share)", async () => {
  const { list, service, move: moveOne } = movingList();
  const path = await fresh("moved");
  const sink = createJsonlSink<Moving>(path);
  let clock = Date.UTC(2026, 10, 28);
  const options = { id: "thingID", sortBy: "ts", maxLimit: 50, sink };
  const run = (more: { sweep?: number; maxDeletes?: number } = {}) =>
    syncList(service.client, "things", {
      ...options,
      now: () => clock,
      ...more,
    });
  const move = (every: number) => {
    list.items.forEach((item, i) => i % every === 0 && moveOne(item));
    clock += 60_000;
  };
  await run();
  list.items = list.items.filter((_, i) => i % 15 !== 1); // 20 gone
  // Moved while a cycle is under way: the head's lines follow the cycle's start.
  await run({ sweep: 1 });
  move(5);
  await run({ sweep: 0 });
  equal((await run({ sweep: 100 })).deleted, 20);
  deepStrictEqual((await sink.load())?.deletions?.map((d) => d.held), [300]);
  // Moved before the cycle: the guard's refusal names the share of 280 that confirms.
  move(7);
  await run({ sweep: 0 });
  list.items = list.items.filter((_, i) => i % 3 !== 1);
  const error = await run({ sweep: Infinity }).catch((error) => error);
  equal(error.reason, "too-many-deletes");
  const gone = 280 - list.items.length;
  equal(error.maxDeletesNeeded, Math.ceil((gone + 20) * 100 / 300) / 100);
  await run({ sweep: Infinity, maxDeletes: error.maxDeletesNeeded });
  const lines = (await Deno.readTextFile(path)).trim().split("\n");
  deepStrictEqual(
    lines.map((line) => JSON.parse(line).thingID).sort(),
    list.items.map((item) => item.thingID).sort(),
  );
});

Deno.test("JSONL sink: a cycle end its guard refused leaves its window's lines past the rewrite's committed end; when the refusal's record then fails, the same sink's next runs go on (every one failed 'lock-lost', a day later too)", async () => {
  const inner = createJsonlSink<Thing>(await fresh("refused-unrecorded"));
  let items = things(300), failing = false, refusedEnd = false;
  const service = listOf(() => items);
  const sink: SyncSink<Thing> = {
    load: () => inner.load(),
    lock: (run) => inner.lock!(run),
    liveRows: (...args) => inner.liveRows!(...args),
    async write(...args) {
      if (failing && refusedEnd) throw new Error("disk full");
      return await inner.write(...args).catch((error) => {
        refusedEnd ||= args[3]?.endsCycle !== undefined;
        throw error;
      });
    },
  };
  let clock = Date.UTC(2026, 10, 28);
  const options = { id: "thingID", maxLimit: 50, sink, now: () => clock };
  await syncList(service.client, "things", options);
  [clock, items] = [clock + 3_600_000, items.filter((_, i) => i % 12 !== 5)];
  await syncList(service.client, "things", { ...options, sweep: Infinity });
  [clock, items] = [clock + 3_600_000, items.filter((_, i) => i % 30 !== 7)];
  failing = true;
  for (let run = 0; run < 10 && !refusedEnd; run++) {
    await syncList(service.client, "things", { ...options, sweep: 2 })
      .catch(() => {});
  }
  ok(refusedEnd);
  failing = false;
  for (let run = 0; run < 3; run++) {
    clock += 3_600_000;
    await syncList(service.client, "things", { ...options, sweep: 2 })
      .catch((error: SyncError) => equal(error.reason, "too-many-deletes"));
  }
});

Deno.test("JSONL sink: an item the head brings again, its sort value moved, counts as updated, as the SQL sinks count it (60 moved counted as 60 inserted)", async () => {
  const reports: string[] = [];
  for (const kind of ["jsonl", "sqlite"]) {
    const { list, service, move } = movingList();
    using database = new DatabaseSync(":memory:");
    const sink = kind === "jsonl"
      ? createJsonlSink<Moving>(await fresh("moved-counts"))
      : createSqliteSink<Moving>(database, { table: "t" });
    const options = { id: "thingID", sortBy: "ts", maxLimit: 50, sink };
    const run = async (sweep: number) =>
      counts(await syncList(service.client, "things", { ...options, sweep }));
    await run(0);
    list.items.forEach((item, i) => i % 5 === 0 && move(item));
    list.items.push(move({ thingID: "t9999", ts: 0 }));
    reports.push(JSON.stringify([await run(0), await run(Infinity)]));
  }
  equal(reports[0], JSON.stringify([[1, 60, 0], [0, 0, 0]]));
  equal(reports[0], reports[1]);
});

Deno.test("JSONL sink: a run killed once its ending window was appended to the rewrite, whose window then brings no line, leaves no run failing 'lock-lost' (a write of no bytes took the committed end for the size it left; every run failed, as did a long-lived sink after another run's killed batch)", async () => {
  const path = await fresh("killed-at-end");
  let items = things(300), killAtEnd = false;
  const service = listOf(() => items);
  let clock = Date.UTC(2026, 10, 28);
  const lived = createJsonlSink<Thing>(path); // one sink across runs, as a service keeps it
  const run = (sweep: number, inner = createJsonlSink<Thing>(path)) => {
    const sink: SyncSink<Thing> = {
      load: () => inner.load(),
      lock: (run) => inner.lock!(run),
      async write(items, checkpoint, ids, context) {
        if (!killAtEnd || context?.endsCycle === undefined) {
          return await inner.write(items, checkpoint, ids, context);
        }
        // The lines appended, then the process gone before its commit.
        const lines = items.map((item) => `${JSON.stringify(item)}\n`);
        await Deno.writeTextFile(`${path}.rewrite`, lines.join(""), {
          append: true,
        });
        throw new Error("killed");
      },
    };
    clock += 3_600_000;
    return syncList(service.client, "things", {
      id: "thingID",
      maxLimit: 50,
      sink,
      now: () => clock,
      sweep,
    });
  };
  await run(0, lived);
  await run(2);
  items = [...items, ...things(302).slice(300)];
  killAtEnd = true;
  await rejects(run(10));
  killAtEnd = false;
  items = items.slice(0, 280); // the ending window's items gone, the 2 new too
  await run(10);
  await run(10, lived);
  await run(Infinity, lived);
  deepStrictEqual(
    (await Deno.readTextFile(path)).trim().split("\n").length,
    items.length,
  );
});

type Moving = { thingID: string; ts: number };

/** 300 items served by `ts`, a sort value a test moves past every other (`move`). */
function movingList() {
  const list = {
    items: Array.from({ length: 300 }, (_, i): Moving => ({
      thingID: `t${String(i).padStart(4, "0")}`,
      ts: 1_000 + i,
    })),
    top: 2_000,
  };
  const service = listOf(() => [...list.items].sort((a, b) => a.ts - b.ts));
  const move = (item: Moving) => (item.ts = list.top += 10, item);
  return { list, service, move };
}

Deno.test("JSONL sink: an item the head brings twice in one run (moved while the head reads) counts as inserted once, then updated, as SQLite counts it (inserted twice)", async () => {
  const reports: string[] = [];
  for (const kind of ["jsonl", "sqlite"]) {
    const { list, move } = movingList();
    let requests = 0;
    const service = listOf(() => [...list.items].sort((a, b) => a.ts - b.ts), {
      before: () => void (++requests === 3 && move(list.items[0]!)),
    });
    using database = new DatabaseSync(":memory:");
    const sink = kind === "jsonl"
      ? createJsonlSink<Moving>(await fresh("moved-twice"))
      : createSqliteSink<Moving>(database, { table: "t" });
    const options = { id: "thingID", sortBy: "ts", maxLimit: 25, limit: 10 };
    const result = await syncList(service.client, "things", {
      ...options,
      sink,
      sweep: 0,
    });
    reports.push(JSON.stringify(counts(result)));
  }
  deepStrictEqual(reports, [JSON.stringify([300, 1, 0]), reports[0]]);
});

Deno.test("a file's end after whole lines: no bytes leave it as it was (an end whose last line starts at its length is damaged); the first write records the first line, later ones keep it", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);
  deepStrictEqual(endAfter(EMPTY, bytes("")), EMPTY);
  const once = endAfter(EMPTY, bytes('{"a":1}\n{"a":22}\n'));
  equal(once.length, 17);
  equal(once.first?.end, 8);
  equal(once.last?.start, 8);
  const twice = endAfter(once, bytes('{"a":333}\n'));
  deepStrictEqual([twice.length, twice.first, twice.last?.start], [
    27,
    once.first,
    17,
  ]);
  deepStrictEqual(endAfter(twice, bytes("")), twice);
});

Deno.test("JSONL sink: the lock lock() returns, released while a write under it is under way, is let go once that write ends (the rest of the write went on with no lock held)", async () => {
  const path = await fresh("released-mid-write.jsonl");
  const sink = createJsonlSink(path);
  const items = things(20_000);
  const lock = await sink.lock!();
  let written = false;
  const writing = sink.write(items, CHECKPOINT, items.map((t) => t.thingID))
    .then(() => written = true);
  // Released twice: the second waits for the first (it let the lock go at once: r96 F4).
  const releases = [0, 1].map(() => lock[Symbol.asyncDispose]());
  await Promise.race(releases);
  ok(written, "the write ended before the lock was let go");
  await Promise.all(releases);
  await writing;
  equal((await linesOf(path)).length, 20_000);
});

Deno.test("JSONL sink: a direct write on the sink of an ended run writes as one without lock() (it failed 'lock-lost', naming a run that took the copy over, when none had: r91 F2)", async () => {
  const path = await fresh("write-after-run.jsonl");
  const service = listOf(() => things(5));
  const sink = createJsonlSink(path);
  await syncList(service.client, "things", { id: "thingID", sink });
  const [next] = things(6).slice(5);
  const checkpoint = { ...CHECKPOINT, edge: { value: "6", id: "6" } };
  await sink.write([next], checkpoint, [next!.thingID]);
  const lines = (await Deno.readTextFile(path)).split("\n").filter(Boolean);
  equal(lines.length, 6);
});

Deno.test("JSONL sink: a write without lock() takes the copy's lock for itself and writes from the copy as it then stands: on a sink whose look came before another run, it cut that run's committed lines (r92 F1), and is now refused rather than put back that run's checkpoint (r93 F2); during another run it waits for it (r92 F2); writes of one sink at once go one after another (they shared one write's lock and lost lines: r93 F1)", async () => {
  const path = await fresh("write-without-lock.jsonl");
  const list = things(50);
  const service = listOf(() => list);
  const run = (sink: SyncSink<Thing>) =>
    syncList(service.client, "things", { id: "thingID", sink });
  const early = createJsonlSink<Thing>(path);
  await run(early);
  const checkpoint = (await early.load())!;
  list.push(...things(55).slice(50));
  await run(createJsonlSink(path)); // another run commits 5 lines
  const extra = { thingID: "u1" };
  // Refused: it would put back the older checkpoint (r93 F2); from a look again, written.
  await refused(
    early.write([extra], checkpoint, [extra.thingID]),
    "sink-mismatch",
    path,
  );
  await refused( // a retry too: the refused write's own look is no look of the sink's (r94 F2)
    early.write([extra], checkpoint, [extra.thingID]),
    "sink-mismatch",
    path,
  );
  const again = (await early.load())!;
  await early.write([extra], again, [extra.thingID]);
  const ids = () =>
    Deno.readTextFile(path).then((text) =>
      text.split("\n").filter(Boolean).map((line) => JSON.parse(line).thingID)
    );
  deepStrictEqual(await ids(), [...list, extra].map((thing) => thing.thingID));
  const holder = createJsonlSink<Thing>(path);
  const held = await holder.lock!();
  const order: string[] = [];
  const writing = createJsonlSink<Thing>(path).write(
    [{ thingID: "u2" }],
    checkpoint,
    ["u2"],
  ).then(() => order.push("written"));
  await new Promise((resolve) => setTimeout(resolve, 50));
  order.push("released");
  await held[Symbol.asyncDispose]();
  await writing;
  deepStrictEqual(order, ["released", "written"]);
  const sink = createJsonlSink<Thing>(path);
  await sink.load();
  const many = things(20).map((thing) => ({ thingID: `w${thing.thingID}` }));
  await Promise.all(many.map(async (thing) => {
    const current = (await sink.load())!;
    await sink.write([thing], current, [thing.thingID]);
  }));
  const written = new Set(await ids());
  ok(many.every((thing) => written.has(thing.thingID)));
  // Under the sink's own lock, its write commits at once, whatever write of it waits in line (r94 F1).
  const own = createJsonlSink<Thing>(path, { lockWait: 0 });
  const current = (await own.load())!;
  const queued = own.write([{ thingID: "x1" }], current, ["x1"]);
  const mine = await own.lock!();
  await own.write([{ thingID: "x2" }], current, ["x2"]);
  await mine[Symbol.asyncDispose]();
  await refused(queued, "locked", `${path}.lock`); // it waited for the lock its own sink held (lockWait 0)
  ok((await ids()).includes("x2"));
  // A write in line is judged by the look its turn began with: neither its sink's own lock() writing meanwhile (r100
  // F2; r95 F1 found the refusal blaming another run) nor a load() during its wait lets it save its older checkpoint
  // over the newer one (r100 F1: the lines it was given from were written again). Whichever of the write and lock()
  // takes the lock first, the newer checkpoint stands.
  const patient = createJsonlSink<Thing>(path);
  const look = (await patient.load())!;
  const waiting = patient.write([{ thingID: "x3" }], look, ["x3"])
    .catch((error: SyncError) => equal(error.reason, "sink-mismatch"));
  const held2 = await patient.lock!();
  const moved = { ...look, offset: look.offset + 1 };
  await patient.write([{ thingID: "x4" }], moved, ["x4"]);
  await held2[Symbol.asyncDispose]();
  await waiting;
  const reader = createJsonlSink<Thing>(path);
  equal((await reader.load())!.offset, moved.offset);
  const held3 = await reader.lock!();
  const behind = patient.write([{ thingID: "x5" }], moved, ["x5"]);
  const ahead = { ...moved, offset: moved.offset + 1 };
  await reader.write([{ thingID: "x6" }], ahead, ["x6"]);
  await patient.load(); // during the wait: the copy as it is now, not what x5 was given from
  await held3[Symbol.asyncDispose]();
  await refused(behind, "sink-mismatch", path);
  equal((await reader.load())!.offset, ahead.offset);
  // Two writes in line, the sink's load() during the first's wait: neither is written (the second took the load for
  // its look, and put its older checkpoint back over the other run's: r101 F1).
  const held4 = await reader.lock!();
  const line = (await patient.load())!;
  const first = patient.write([{ thingID: "x7" }], line, ["x7"]);
  const second = patient.write([{ thingID: "x8" }], line, ["x8"]);
  const newest = { ...ahead, offset: ahead.offset + 1 };
  await reader.write([{ thingID: "x9" }], newest, ["x9"]);
  await patient.load();
  await held4[Symbol.asyncDispose]();
  await refused(first, "sink-mismatch", path);
  await refused(second, "sink-mismatch", path);
  equal((await reader.load())!.offset, newest.offset);
  const seen = await ids();
  ok(seen.filter((id) => id === "x3").length <= 1);
  ok(!seen.some((id) => ["x5", "x7", "x8"].includes(id)));
  // A look that found no copy is a look: a run that made one since refuses the write (r94 F3).
  const other = await fresh("write-without-lock-new.jsonl");
  const empty = createJsonlSink<Thing>(other);
  equal(await empty.load(), undefined);
  await syncList(service.client, "things", {
    id: "thingID",
    sink: createJsonlSink(other),
  });
  await refused(
    empty.write([extra], checkpoint, ["u1"]),
    "sink-mismatch",
    other,
  );
});

Deno.test("JSONL sink: a load() of the sink while it writes never puts an older state back, and writes in line follow only the writes of their own look: polled during 200 writes under lock() it cut committed lines, and without lock() it refused the sink's own writes (r102 F3, F4); a write of no look ahead let the write behind it, built on a later load(), save its older checkpoint (F1); one built on a write ahead that failed was written, counting items never written (F2)", async () => {
  const path = await fresh("load-while-writing.jsonl");
  const ids = async () =>
    (await linesOf(path)).map((line) => JSON.parse(line).thingID as string);
  const at = (offset: number) => ({ ...CHECKPOINT, offset });
  const sink = createJsonlSink<Thing>(path);
  let polling = true, refusedWrites = 0;
  const poll = async () => {
    while (polling) await sink.load();
  };
  const writeAll = async (from: number) => {
    for (let i = from; i < from + 100; i++) {
      await sink.write([{ thingID: `w${i}` }], at(i + 1), [`w${i}`])
        .catch(() => refusedWrites++);
    }
  };
  const held = await sink.lock!();
  let poller = poll();
  await writeAll(0);
  polling = false;
  await poller;
  await held[Symbol.asyncDispose]();
  [polling, poller] = [true, poll()];
  await sink.load();
  await writeAll(100);
  polling = false;
  await poller;
  equal(refusedWrites, 0);
  deepStrictEqual(
    await ids(),
    Array.from({ length: 200 }, (_, i) => `w${i}`),
  );
  // F1: a write of a sink with no look yet, then a load(), then a write built on it; another run commits meanwhile:
  // both refused (the first is judged from its call: r105 F3 found the second of a pipeline so left unchecked).
  const other = createJsonlSink<Thing>(path);
  const fresh2 = createJsonlSink<Thing>(path);
  const held2 = await other.lock!();
  const blind = fresh2.write([{ thingID: "a" }], at(500), ["a"]);
  const seen = (await fresh2.load())!;
  const built = fresh2.write([{ thingID: "b" }], at(seen.offset + 1), ["b"]);
  await other.write([{ thingID: "o" }], at(300), ["o"]);
  await held2[Symbol.asyncDispose]();
  await refused(blind, "sink-mismatch", path);
  await refused(built, "sink-mismatch", path);
  equal((await other.load())!.offset, 300);
  // F2: the first of two writes in line fails (a checkpoint the side file cannot hold); the second, built on it, too.
  const quick = createJsonlSink<Thing>(path);
  const look = (await quick.load())!;
  const unstorable = { ...at(301), offset: 301n } as unknown as typeof look;
  const first = quick.write([{ thingID: "c1" }], unstorable, ["c1"]);
  const second = quick.write([{ thingID: "c2" }], at(302), ["c2"]);
  await rejects(first, TypeError);
  await refused(second, "sink-mismatch", path);
  // Called once they failed, before a load(), a write may be built on them too (it was written, counting their items:
  // r104 F4): refused; after a load(), a write from it goes on.
  await refused(
    quick.write([{ thingID: "c3" }], at(303), ["c3"]),
    "sink-mismatch",
    path,
  );
  equal((await quick.load())!.offset, 300);
  await quick.write([{ thingID: "c1" }], { ...look, offset: 301 }, ["c1"]);
  equal((await other.load())!.offset, 301);
  deepStrictEqual((await ids()).slice(-2), ["o", "c1"]);
  // A pipeline A, B, C (each built on the one before) with a load() polled between the calls of A and B, while A waits:
  // all three written (B was refused, and C, called once A was written, saved a checkpoint counting B's items: r104 F1,
  // F2); with another run's commit during the wait, which the poll saw, none (B was written over it: r104 F3).
  for (const otherRun of [false, true]) {
    const from = (await quick.load())!;
    const held4 = await other.lock!();
    if (otherRun) await other.write([{ thingID: "p" }], at(700), ["p"]);
    const a = quick.write([{ thingID: "d1" }], at(from.offset + 1), ["d1"]);
    await quick.load();
    const b = quick.write([{ thingID: "d2" }], at(from.offset + 2), ["d2"]);
    await held4[Symbol.asyncDispose]();
    if (otherRun) {
      await refused(a, "sink-mismatch", path);
      await refused(b, "sink-mismatch", path);
      equal((await other.load())!.offset, 700);
      continue;
    }
    await a;
    await quick.write([{ thingID: "d3" }], at(from.offset + 3), ["d3"]);
    await b;
    deepStrictEqual((await ids()).slice(-3), ["d1", "d2", "d3"]);
    equal((await other.load())!.offset, from.offset + 3);
  }
});

Deno.test("JSONL sink: writes without lock() of a sink never loaded are judged from their call: the second of a pipeline, another run committing after the first, is refused (r105 F3: it was written over that run's checkpoint); a write called after one that failed under lock(), before a load(), is refused (r105 F6: it counted the failed one's items)", async () => {
  const path = await fresh("never-loaded-pipeline.jsonl");
  const at = (offset: number) => ({ ...CHECKPOINT, offset });
  const lockPath = `${path}.lock`;
  let waitingForLock!: () => void;
  const waiting = new Promise<void>((resolve) => waitingForLock = resolve);
  const sink = createJsonlSink<Thing>(path, {
    onLockWait: () => waitingForLock(),
  });
  const other = createJsonlSink<Thing>(path);
  const first = sink.write([{ thingID: "x1" }], at(1), ["x1"]);
  // Once the first is written, before the second's turn: a lock file in the way, then the other run's own.
  first.then(() =>
    Deno.writeTextFileSync(lockPath, JSON.stringify({ owner: "x", pid: 1 }), {
      createNew: true,
    })
  );
  const second = sink.write([{ thingID: "x2" }], at(2), ["x2"]);
  await first;
  await waiting;
  Deno.removeSync(lockPath);
  const held = await other.lock!();
  await other.write([{ thingID: "y" }], at(9), ["y"]);
  await held[Symbol.asyncDispose]();
  await refused(second, "sink-mismatch", path);
  equal((await other.load())!.offset, 9);
  // A write under lock() fails (a checkpoint the side file cannot hold); after the release, one built on it is refused.
  const look = (await sink.load())!;
  const mine = await sink.lock!();
  const unstorable = { ...look, offset: 10n } as unknown as typeof look;
  await rejects(sink.write([{ thingID: "u1" }], unstorable, ["u1"]), TypeError);
  await mine[Symbol.asyncDispose]();
  await refused(
    sink.write([{ thingID: "u2" }], at(11), ["u2"]),
    "sink-mismatch",
    path,
  );
  equal((await other.load())!.offset, 9);
  // Retried under the lock and awaited, a write without lock() after the release, built on the retry, is written (it
  // was refused: r106 F2).
  await sink.load();
  const again = await sink.lock!();
  // A sweep's write refused before a line is written: a folder where its rewrite goes.
  Deno.mkdirSync(`${path}.rewrite`);
  const keyOf = (item: unknown) => {
    const id = (item as Thing).thingID;
    return { value: id, id };
  };
  const sweep = { phase: "sweep", cycle: 1, keyOf, changes: false } as const;
  const u1 = [{ thingID: "u1" }];
  await refused(
    sink.write(u1, at(10), ["u1"], sweep),
    "file",
    `${path}.rewrite`,
  );
  Deno.removeSync(`${path}.rewrite`);
  await sink.write(u1, at(10), ["u1"]);
  await again[Symbol.asyncDispose]();
  await sink.write([{ thingID: "u2" }], at(11), ["u2"]);
  equal((await other.load())!.offset, 11);
  // A sink whose only look was a lock() taken and let go: a write called, then another run's commit before its turn,
  // is refused (the change was dated after that look, before the call: r106 F1).
  let waitedFor!: () => void;
  const waited = new Promise<void>((resolve) => waitedFor = resolve);
  const late = createJsonlSink<Thing>(path, { onLockWait: () => waitedFor() });
  await (await late.lock!())[Symbol.asyncDispose]();
  const held2 = await other.lock!();
  const write = late.write([{ thingID: "z" }], at(20), ["z"]);
  await waited;
  await other.write([{ thingID: "y2" }], at(12), ["y2"]);
  await held2[Symbol.asyncDispose]();
  await refused(write, "sink-mismatch", path);
  equal((await other.load())!.offset, 12);
});

Deno.test("JSONL sink: under one lock(), a write after one whose lines were appended but whose commit failed is refused as after any failed write (it may count their items), and a load() lets the next through (it failed 'lock-lost', naming a run that took the copy over, when none had: outside review r105 F7)", async () => {
  const path = await fresh("appended-unsaved");
  const sink = createJsonlSink<Thing>(path);
  const items = things(3), ids = items.map((item) => item.thingID);
  await using lock = await sink.lock!();
  await sink.write(items.slice(0, 1), CHECKPOINT, ids.slice(0, 1));
  // The side file's temporary name is taken: the commit fails once the lines are appended.
  const { token } = lock as unknown as { token: string };
  const taken = `${path}.checkpoint.json.${token}.tmp`;
  await Deno.mkdir(`${taken}/kept`, { recursive: true }); // not empty: the failed commit cannot remove it
  const second = [items.slice(1, 2), CHECKPOINT, ids.slice(1, 2)] as const;
  const third = [items.slice(2), CHECKPOINT, ids.slice(2)] as const;
  const [failed, after] = [sink.write(...second), sink.write(...third)];
  await rejects(failed);
  await Deno.remove(taken, { recursive: true });
  await refused(after, "sink-mismatch", path);
  await sink.load();
  await sink.write(items.slice(1), CHECKPOINT, ids.slice(1));
  const lines = (await Deno.readTextFile(path)).trim().split("\n");
  deepStrictEqual(lines.map((line) => JSON.parse(line).thingID), ids);
});
