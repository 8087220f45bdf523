// The files of a copy (issue 45): a handle is checked to be the path's own
// file before anything is written through it, and every file failure is a
// SyncError naming the file. Real files under .test-tmp, no mocks.

import { equal, ok, rejects, throws } from "node:assert/strict";
import {
  createJsonlSink,
  createSqliteSink,
  SyncError,
  type SyncErrorReason,
  syncList,
} from "../src/sync/mod.ts";
import { openFile, readText, replaceFile } from "../src/sync/_files.ts";
import { freshTarget, inProcess } from "./_sync_fake.ts";

const fresh = (name: string) => freshTarget("sync-files", name);

/** Rejects with a SyncError of `reason` naming `path`. */
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
  throws(() => createSqliteSink(db, { table: "transactions" }), (error) => {
    ok(error instanceof SyncError, String(error));
    equal(error.reason, "file");
    equal(error.path, db);
    return true;
  });
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
