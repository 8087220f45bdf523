// A JSONL cycle's end that fails after its commit (the record saved, the rename over the copy refused: the copy made
// immutable, which stops root where a read-only folder does not): the sink's next write without lock(), built before,
// is refused, and changes nothing. It finished the pending rename before it was judged, so the copy changed under a
// message saying it had not (outside review r100 F3, r101 F2).

import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import {
  createJsonlSink,
  type SyncCheckpoint,
  SyncError,
  type SyncWriteContext,
} from "../../src/sync/mod.ts";
import { freshTarget } from "../_sync_fake.ts";
import { chattr, processTest } from "../_processes.ts";

const checkpoint = (offset: number, more = {}): SyncCheckpoint => ({
  version: 1,
  path: "things",
  sortBy: "thingID",
  id: "thingID",
  query: {},
  edge: { value: String(offset), id: String(offset) },
  offset,
  full: false,
  complete: true,
  ...more,
});
type Thing = { thingID: string };
const keyOf = (item: unknown) => {
  const id = (item as Thing).thingID;
  return { value: id, id };
};
const context = (phase: "head" | "sweep", ends = false): SyncWriteContext => ({
  cycle: 1,
  phase,
  keyOf,
  changes: false,
  ...(ends ? { endsCycle: { deletes: "remove", maxDeletes: 1 } } : {}),
});
const files = (path: string) =>
  Promise.all(
    [path, `${path}.checkpoint.json`].map((file) => Deno.readTextFile(file)),
  );

processTest(
  "JSONL sink: a write without lock() after the sink's own cycle end failed at its rename is refused before it finishes that rename, and changes no byte",
  async () => {
    const path = await freshTarget("sync-jsonl-rename", "copy.jsonl");
    await Deno.remove(`${path}.rewrite`).catch(() => {});
    await chattr("-i", path);
    const sink = createJsonlSink<Thing>(path);
    await sink.load();
    const two = [{ thingID: "1" }, { thingID: "2" }];
    await sink.write(two, checkpoint(2), ["1", "2"], context("head"));
    if (!await chattr("+i", path)) {
      console.log("skipped: chattr cannot make a file immutable here");
      return;
    }
    try {
      const ending = checkpoint(2, { cycles: 1 });
      const ends = context("sweep", true);
      await rejects(sink.write(two, ending, ["1", "2"], ends), SyncError);
    } finally {
      ok(await chattr("-i", path));
    }
    const before = await files(path);
    await rejects(
      sink.write([{ thingID: "3" }], checkpoint(3), ["3"], context("head")),
      (error: unknown) => {
        ok(error instanceof SyncError, String(error));
        equal(error.reason, "sink-mismatch");
        return true;
      },
    );
    deepStrictEqual(await files(path), before);
    // A look taken again goes on from the cycle's end, which the next lock finishes.
    equal((await sink.load())?.cycles, 1);
    await sink.write([{ thingID: "3" }], checkpoint(3), ["3"], context("head"));
    const lines = (await Deno.readTextFile(path)).trim().split("\n");
    deepStrictEqual(lines.map((line) => JSON.parse(line).thingID), [
      "1",
      "2",
      "3",
    ]);
  },
);
