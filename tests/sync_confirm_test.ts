// A cycle spread over runs removes only what the run ending it saw missing (attack r152 F1): an item missing when the
// sweep passed its place, and back before the run that ends the cycle, stays, on every sink that tells its rows.

import { equal, ok } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import {
  createJsonlSink,
  createSqliteSink,
  SyncError,
  syncList,
  type SyncOptions,
  type SyncSink,
  type SyncSource,
} from "../src/sync/mod.ts";
import {
  freshTarget,
  inProcess,
  listOf,
  type Thing,
  things,
} from "./_sync_fake.ts";

type Row = Record<string, string | number>;

/** A copy (of transactions, or the list whose id field is `idField`), sink `kind`: how to open it, which ids it holds live. */
async function copyOf(
  kind: "sqlite" | "jsonl",
  name: string,
  idField = "transactionID",
) {
  const path = await freshTarget(
    "sync-confirm",
    `${name}.${kind === "sqlite" ? "db" : "jsonl"}`,
  );
  const open = (): SyncSink<Row> & Partial<Disposable> =>
    kind === "sqlite"
      ? createSqliteSink<Row>(path, { table: "t" })
      : createJsonlSink<Row>(path);
  const held = async () => {
    if (kind === "jsonl") {
      const text = await Deno.readTextFile(path);
      return new Set(
        text.split("\n").filter(Boolean).map((line) =>
          JSON.parse(line)[idField] as string
        ),
      );
    }
    const db = new DatabaseSync(path);
    try {
      const rows = db.prepare("SELECT id FROM t WHERE deleted_at IS NULL")
        .all() as { id: string }[];
      return new Set(rows.map((row) => row.id));
    } finally {
      db.close();
    }
  };
  const deletes = () => {
    if (kind === "jsonl") return [];
    const db = new DatabaseSync(path);
    try {
      return (db.prepare("SELECT id FROM t_changes WHERE change = 'delete'")
        .all() as { id: string }[])
        .map((row) => row.id);
    } finally {
      db.close();
    }
  };
  return { open, held, deletes, changes: kind === "sqlite" };
}

/** Runs of `sweep` (pages of 50) from `client`'s list at `path` into `copy`, each with a sink of its own. */
function runsOf(
  copy: { open: () => SyncSink<Row> & Partial<Disposable> },
  client: SyncSource,
  path: string,
  options: Omit<SyncOptions<Row>, "sink" | "sweep" | "maxLimit">,
) {
  return async (sweep: number) => {
    const sink = copy.open();
    try {
      return await syncList(client, path, {
        ...options,
        maxLimit: 50,
        sink,
        sweep,
      });
    } finally {
      sink[Symbol.dispose]?.();
    }
  };
}

/**
 * A copy of 300 transactions (sink `kind`), then an item early in the pass's order missing while a `sweep: 1` run
 * passes its place, and back since: what the test's runs share, and the result of that run.
 */
async function blinked(
  kind: "sqlite" | "jsonl",
  name: string,
  sortDirection: "ASC" | "DESC",
  maxDeletes: number,
) {
  const fake = inProcess({ items: { transactions: 300 } });
  const copy = await copyOf(kind, name);
  const run = runsOf(copy, fake.client, "transactions", {
    id: "transactionID",
    sortBy: "creationDate",
    sortDirection,
    maxDeletes,
    changes: copy.changes,
  });
  await run(Infinity);
  const items: Row[] = [];
  const order = { sortBy: "creationDate", sortDirection };
  for await (const item of fake.client.list<Row>("transactions", order)) {
    items.push(item);
  }
  // Early in the pass's order: the first run of the next cycle passes it.
  const victim = items[10]!, id = String(victim.transactionID);
  ok(fake.service.remove("transactions", id));
  const first = await run(1);
  fake.service.insert("transactions", victim);
  return { fake, copy, run, id, first };
}

for (const kind of ["sqlite", "jsonl"] as const) {
  for (const sortDirection of ["ASC", "DESC"] as const) {
    for (const maxDeletes of [0.1, 1]) {
      Deno.test(`${kind} ${sortDirection}, maxDeletes ${maxDeletes}: an item missing when a spread sweep passed it, back since, stays through the cycle's end`, async () => {
        const { fake, copy, run, id, first } = await blinked(
          kind,
          `${sortDirection}-${maxDeletes}`,
          sortDirection,
          maxDeletes,
        );
        let cycles = 0;
        for (let runs = 0; runs < 20 && cycles === 0; runs++) {
          const before = first.verifiedAt;
          const result = await run(1);
          if (result.verifiedAt !== before) cycles++;
          ok((await copy.held()).has(id), `run ${runs}: ${id} removed`);
          equal(result.deleted, 0);
        }
        equal(cycles, 1); // the cycle ended
        equal(copy.deletes().length, 0);
        fake.service.close();
      });
    }
  }
}

for (const kind of ["sqlite", "jsonl"] as const) {
  Deno.test(`${kind}: another list answering those reads again is refused as in the sweep: none of its rows enters, nothing is removed, and the next runs go on (attack r154 F1: 40 foreign rows went in, the item that came back was removed, and every run after was refused)`, async () => {
    const { fake, copy, run, id } = await blinked(kind, "foreign", "ASC", 0.1);
    // Each run: once the sweep read a short page (the list's end), every full page after is another list's.
    let inRun = 0, pastEnd = false, refused = 0;
    fake.afterList = (page) => {
      inRun++;
      if (pastEnd && page.length === 50) {
        return page.map((item) => ({
          ...item,
          transactionID: `other_${item.transactionID}`,
        }));
      }
      if (inRun >= 2 && page.length < 50) pastEnd = true;
      return [...page];
    };
    for (let runs = 0; runs < 12; runs++) {
      [inRun, pastEnd] = [0, false];
      await run(1).catch((error) => {
        ok(error instanceof SyncError && error.reason === "too-many-deletes");
        refused++;
      });
    }
    ok(refused > 0);
    fake.afterList = undefined;
    for (let runs = 0; runs < 12; runs++) await run(1); // none refused
    const held = await copy.held();
    ok(held.has(id));
    equal([...held].filter((each) => each.startsWith("other_")).length, 0);
    equal(held.size, 300);
    equal(copy.deletes().length, 0);
    fake.service.close();
  });
}

for (const kind of ["sqlite", "jsonl"] as const) {
  for (const purged of [0, 300, "between"] as const) {
    Deno.test(`${kind}, ${purged} items purged (at the list's start, or 40 just before each): ten items back, far apart, each read again where the copy places it past the read before: none removed, about one request each (each was sought from where the last read ended, the first from the list's start: 33 requests past the sweep's, 6 of 10 removed on 10,000 items read 100 at a time; then placed by the copy's count alone, 6 of 10 removed once 300 it still counts were purged: attack r155 F1; 1 of 10 once 40 were purged just before each, 3 of 10 with 120 on 6,000 items: r156 G2)`, async () => {
      const fake = inProcess({ items: { transactions: 2000 } });
      const copy = await copyOf(kind, `far-apart-${purged}`);
      const run = runsOf(copy, fake.client, "transactions", {
        id: "transactionID",
        sortBy: "creationDate",
        changes: copy.changes,
      });
      const first = await run(Infinity);
      const items: Row[] = [];
      for await (const item of fake.client.list<Row>("transactions", {})) {
        items.push(item);
      }
      const back = Array.from({ length: 10 }, (_, k) => items[400 + 150 * k]!);
      const ids = back.map((item) => String(item.transactionID));
      for (const id of ids) ok(fake.service.remove("transactions", id));
      let ending, restored = false;
      for (let runs = 0; runs < 60 && ending === undefined; runs++) {
        const result = await run(1);
        if (result.verifiedAt !== first.verifiedAt) ending = result;
        // Back before the run that ends the cycle: the runs before passed them missing. The purged ones the cycle saw
        // before: the copy counts them before the items back until the next cycle.
        if (!restored && result.sweepLeft <= 1) {
          for (const item of back) fake.service.insert("transactions", item);
          const gone = purged === "between"
            ? back.flatMap((_, k) => items.slice(360 + 150 * k, 400 + 150 * k))
            : items.slice(0, purged);
          for (const item of gone) {
            fake.service.remove("transactions", String(item.transactionID));
          }
          restored = true;
        }
      }
      ok(restored && ending !== undefined);
      const held = await copy.held();
      equal(ids.filter((id) => !held.has(id)).length, 0);
      equal(copy.deletes().length, 0);
      if (purged === 0) {
        ok(
          ending.requests <= 2 + ids.length + 3,
          `${ending.requests} requests`,
        );
      }
      fake.service.close();
    });
  }
}

for (const kind of ["sqlite", "jsonl"] as const) {
  Deno.test(`${kind}: ties wider than a window (500 items of each sort value): ten items back, each read again from just before its own id, not before its sort value's first item: none removed, about one request each (attack r156 G1: each was sought back to its ties, 6 of 10 removed in 34 requests)`, async () => {
    const all = things(2000).map((thing, i) => ({
      ...thing,
      group: Math.floor(i / 500),
    }));
    const gone = new Set<string>();
    const list = listOf(() => all.filter((item) => !gone.has(item.thingID)));
    const copy = await copyOf(kind, "ties", "thingID");
    const run = runsOf(copy, list.client, "things", {
      id: "thingID",
      sortBy: "group",
      changes: copy.changes,
    });
    const first = await run(Infinity);
    const ids = Array.from(
      { length: 10 },
      (_, k) => all[100 + 190 * k]!.thingID,
    );
    for (const id of ids) gone.add(id);
    let ending;
    for (let runs = 0; runs < 60 && ending === undefined; runs++) {
      const result = await run(1);
      if (result.verifiedAt !== first.verifiedAt) ending = result;
      if (result.sweepLeft <= 1) gone.clear(); // back before the run that ends the cycle
    }
    ok(ending !== undefined && gone.size === 0);
    const held = await copy.held();
    equal(ids.filter((id) => !held.has(id)).length, 0);
    equal(copy.deletes().length, 0);
    ok(ending.requests <= 2 + ids.length + 3, `${ending.requests} requests`);
  });
}

/** A copy of 3,000 things (sink `kind`) read 50 at a time, and 50 of them missing from the list, 58 apart. */
async function fiftyFarApart(kind: "sqlite" | "jsonl", name: string) {
  const all = things(3000);
  const ids = Array.from({ length: 50 }, (_, k) => all[100 + 58 * k]!.thingID);
  const gone = new Set<string>();
  const list = listOf(() => all.filter((item) => !gone.has(item.thingID)));
  const copy = await copyOf(kind, name, "thingID");
  const run = runsOf(copy, list.client, "things", {
    id: "thingID",
    changes: copy.changes,
  });
  const first = await run(Infinity);
  for (const id of ids) gone.add(id);
  return { ids, gone, copy, run, first };
}

for (const kind of ["sqlite", "jsonl"] as const) {
  Deno.test(`${kind}: fifty items back, far apart, more than the run ending the cycle may read again: those it could not read stay, none removed (past its 32 reads they were removed unread: 18 of 50, attack r154 F2)`, async () => {
    const { ids, gone, copy, run, first } = await fiftyFarApart(kind, "back");
    let ending;
    for (let runs = 0; runs < 30 && ending === undefined; runs++) {
      const result = await run(5);
      if (result.verifiedAt !== first.verifiedAt) ending = result;
      if (result.sweepLeft <= 5) gone.clear(); // back before the run that ends the cycle
    }
    ok(ending !== undefined && gone.size === 0);
    const held = await copy.held();
    equal(ids.filter((id) => !held.has(id)).length, 0);
    equal(ending.deleted, 0);
    equal(copy.deletes().length, 0);
    ok(ending.requests <= 2 + 5 + 32 + 2, `${ending.requests} requests`);
  });

  Deno.test(`${kind}: fifty items deleted, far apart: the rows the run ending a cycle could not read again go with a later cycle's end, each once, and nothing else`, async () => {
    const { ids, copy, run, first } = await fiftyFarApart(kind, "deleted");
    let cycles = 0, deleted = 0, verifiedAt = first.verifiedAt;
    for (let runs = 0; runs < 60 && deleted < ids.length; runs++) {
      const result = await run(5);
      deleted += result.deleted;
      if (result.verifiedAt !== verifiedAt) cycles++;
      verifiedAt = result.verifiedAt;
    }
    equal(deleted, ids.length);
    ok(cycles <= Math.ceil(ids.length / 32) + 1, `${cycles} cycles`);
    const held = await copy.held();
    equal(held.size, 3000 - ids.length);
    equal(ids.filter((id) => held.has(id)).length, 0);
    if (copy.changes) equal(copy.deletes().length, ids.length);
  });
}

for (
  const [block, staged, purged] of [[5, false, 15], [30, true, 20]] as const
) {
  Deno.test(`a row really deleted before ${block} items the copy lacks (a cycle removed them; back ${staged ? "before the cycle passed them" : "before its last run"}), ${purged} rows before it gone since the cycle saw them: the read again of its place holds only those items, read at another address it agrees, so the cycle ends and removes the row alone (attack r157 F3: refused as another list's page, the cycle given up)`, async () => {
    const all = things(3000);
    const gone = new Set<string>();
    const list = listOf(() => all.filter((item) => !gone.has(item.thingID)));
    const copy = await copyOf("sqlite", `gone-before-${block}`, "thingID");
    const run = runsOf(copy, list.client, "things", { id: "thingID" });
    const row = all[1000]!.thingID;
    const back = all.slice(1001, 1001 + block).map((item) => item.thingID);
    await run(Infinity);
    for (const id of [row, ...back]) gone.add(id);
    await run(Infinity); // a cycle removes them
    gone.delete(row);
    const before = await run(Infinity); // the row back
    gone.add(row); // gone for good
    if (staged) { for (const id of back) gone.delete(id); }
    let ending, restored = false;
    for (let runs = 0; runs < 100 && ending === undefined; runs++) {
      const result = await run(1);
      if (result.verifiedAt !== before.verifiedAt) ending = result;
      if (!restored && result.sweepLeft <= 1) {
        for (const id of back) gone.delete(id);
        for (const item of all.slice(1000 - purged, 1000)) {
          gone.add(item.thingID);
        }
        restored = true;
      }
    }
    ok(ending !== undefined);
    equal(ending.deleted, 1);
    const held = await copy.held();
    ok(!held.has(row));
    equal(back.filter((id) => !held.has(id)).length, 0);
  });
}

for (const kind of ["sqlite", "jsonl"] as const) {
  Deno.test(`${kind}: the reads again before a spread cycle's end answered by another list at every address over the rows they read (its ids between the list's): nothing of it enters and no row is removed (r158 F1: one more read elsewhere answered alike, or empty, let 35 of its rows in and removed the 5 items back)`, async () => {
    const all = things(2000);
    const back = all.slice(1000, 1005).map((item) => item.thingID);
    const gone = new Set<string>();
    let asked = { limit: 0, page: 0 }, misrouted = false;
    const list = listOf(() => all.filter((item) => !gone.has(item.thingID)), {
      before: (at) => void (asked = at),
      answer: (page) => {
        const start = (asked.page - 1) * asked.limit;
        const over = start <= 1004 && start + asked.limit > 1000;
        return misrouted && over
          ? page.map((item) => ({ thingID: `${(item as Thing).thingID}x` }))
          : page;
      },
    });
    const copy = await copyOf(kind, "confirm-misrouted", "thingID");
    const run = runsOf(copy, list.client, "things", { id: "thingID" });
    const first = await run(Infinity);
    for (const id of back) gone.add(id);
    let refused = 0;
    for (let runs = 0; runs < 40 && !misrouted; runs++) {
      const result = await run(2);
      equal(result.verifiedAt, first.verifiedAt); // the cycle under way
      misrouted = result.sweepLeft <= 2; // the next run ends it
    }
    gone.clear();
    await run(2).catch((error: SyncError) => {
      ok(["too-many-deletes", "unordered"].includes(error.reason));
      refused++;
    });
    const held = await copy.held();
    equal([...held].filter((id) => id.endsWith("x")).length, 0);
    equal(back.filter((id) => !held.has(id)).length, 0);
    ok(misrouted && refused <= 1);
  });
}

for (const kind of ["sqlite", "jsonl"] as const) {
  Deno.test(`${kind}: a default run after a stricter run's refusal confirms nothing the default share allows: its deletes count, so 90 more an hour later are refused (attack r168a F3: 0.05 refused 70 of 1,000, a default run removed them unrecorded, and 160 went within 2 hours)`, async () => {
    const fake = inProcess({ items: { transactions: 1000 } });
    const copy = await copyOf(kind, "stricter-then-default");
    let clock = Date.UTC(2026, 11, 5);
    const options = { id: "transactionID", now: () => clock };
    const run = runsOf(copy, fake.client, "transactions", options);
    const strict = runsOf(copy, fake.client, "transactions", {
      ...options,
      maxDeletes: 0.05,
    });
    await run(Infinity);
    const ids = [...await copy.held()];
    const remove = (from: number, to: number) =>
      ids.slice(from, to).forEach((id) =>
        fake.service.remove("transactions", id)
      );
    remove(100, 170);
    const refusal = await strict(Infinity).catch((error) => error);
    ok(refusal instanceof SyncError && refusal.reason === "too-many-deletes");
    equal((await run(Infinity)).deleted, 70);
    clock += 3_600_000;
    remove(500, 590);
    const again = await run(Infinity).catch((error) => error);
    ok(again instanceof SyncError && again.reason === "too-many-deletes");
    equal((await copy.held()).size, 930);
    fake.service.close();
  });
}
