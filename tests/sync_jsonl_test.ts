// The JSONL sink against the SQL sinks' behaviour and its own files: the
// cycle's guard, its counts, its side and rewrite files. Real files under
// .test-tmp, the fake list in process.

import { equal } from "node:assert/strict";
import {
  createJsonlSink,
  createSqliteSink,
  syncList,
  type SyncSink,
} from "../src/sync/mod.ts";
import { freshTarget, listOf, type Thing, things } from "./_sync_fake.ts";

/** A path for a JSONL copy, with no copy (nor rewrite) there. */
async function fresh(name: string): Promise<string> {
  const path = await freshTarget("sync-jsonl", name);
  await Deno.remove(`${path}.rewrite`).catch(() => {});
  return path;
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
