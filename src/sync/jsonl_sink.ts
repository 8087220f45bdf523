// A sync sink on a JSONL file: one item per line, appended; the checkpoint
// and the file's committed length in a file beside it, replaced atomically
// after the lines are on disk. Node's fs API, so it runs where node:fs does.

import { open, readFile, rename, stat, truncate } from "node:fs/promises";
import type { SyncCheckpoint, SyncSink } from "./_types.ts";

/** What the file beside the copy holds. */
interface Committed {
  readonly checkpoint: SyncCheckpoint;
  /** Bytes of the copy that the checkpoint covers. */
  readonly length: number;
}

/**
 * A sink that appends items to a JSONL file, one JSON object per line. The
 * checkpoint, with the file's committed length, lives in
 * `<path>.checkpoint.json`, replaced (write, sync, rename) only after the
 * lines are synced; `load()` first cuts the file back to that length, so a
 * run killed mid-batch leaves no partial line and no line twice. A `full`
 * run rewrites the file from the start. Needs read and write permission on
 * the path and on `<path>.checkpoint.json` and `<path>.checkpoint.json.tmp`.
 *
 * @param path The file.
 * @returns The sink.
 *
 * @example Lines and checkpoint
 * ```ts
 * import { createJsonlSink } from "@partner-api/client/sync";
 * import { equal } from "node:assert/strict";
 *
 * await Deno.mkdir(".test-tmp", { recursive: true });
 * const path = ".test-tmp/doc-jsonl-sink.jsonl";
 * await Deno.remove(`${path}.checkpoint.json`).catch(() => {});
 * const sink = createJsonlSink<{ n: number }>(path);
 * await sink.load(); // no checkpoint yet: the file is cut back to nothing
 * const checkpoint = { version: 1 as const, path: "numbers", sortBy: "n", id: "n", query: {}, edge: { value: 1, id: "1" }, offset: 1, full: false, complete: true };
 * await sink.write([{ n: 1 }], checkpoint, ["1"]);
 * equal(await Deno.readTextFile(path), '{"n":1}\n');
 * equal((await sink.load())?.offset, 1);
 * ```
 */
export function createJsonlSink<T>(path: string): SyncSink<T> {
  const statePath = `${path}.checkpoint.json`;
  let committed: Committed | undefined;
  let loaded = false;
  const load = async () => {
    committed = await readCommitted(statePath);
    await cutBack(path, committed?.length ?? 0);
    loaded = true;
    return committed?.checkpoint;
  };
  return {
    load,
    async write(items, checkpoint) {
      if (!loaded) await load();
      // A full pass starts the file again; the state says so first, so that
      // a crash in between still cuts the file back to nothing.
      let length = checkpoint.full && committed?.checkpoint.full !== true
        ? 0
        : committed?.length ?? 0;
      if (length === 0 && (committed?.length ?? 0) > 0) {
        await saveCommitted(statePath, { checkpoint, length });
        committed = { checkpoint, length };
        await cutBack(path, 0);
      }
      length += await appendLines(path, length, items);
      const next = { checkpoint, length };
      await saveCommitted(statePath, next);
      committed = next;
    },
  };
}

/** The committed state, or undefined when there is none yet. */
async function readCommitted(
  statePath: string,
): Promise<Committed | undefined> {
  let text: string;
  try {
    text = await readFile(statePath, "utf8");
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return undefined;
    throw error;
  }
  return JSON.parse(text) as Committed;
}

/** Writes the state to a temporary file, syncs it, and renames it into place. */
async function saveCommitted(statePath: string, state: Committed) {
  const temporary = `${statePath}.tmp`;
  const file = await open(temporary, "w");
  try {
    await file.writeFile(JSON.stringify(state));
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, statePath);
}

/** Cuts the copy back to `length` bytes (what the checkpoint covers). */
async function cutBack(path: string, length: number) {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOENT") throw error;
    size = 0;
  }
  // Shorter than committed: the copy was cut by someone else; never pad it.
  if (size < length) {
    throw new Error(
      `Cannot sync: ${path} holds ${size} bytes, fewer than the ${length} its checkpoint covers`,
    );
  }
  if (size > length) await truncate(path, length);
}

/** Writes the items as lines at `at`, synced; the bytes written. */
async function appendLines<T>(
  path: string,
  at: number,
  items: readonly T[],
): Promise<number> {
  if (items.length === 0) return 0;
  let text = "";
  for (const item of items) text += `${JSON.stringify(item)}\n`;
  const bytes = new TextEncoder().encode(text);
  const file = await open(path, "a+");
  try {
    await file.truncate(at);
    await file.write(bytes, 0, bytes.length);
    await file.datasync();
  } finally {
    await file.close();
  }
  return bytes.length;
}
