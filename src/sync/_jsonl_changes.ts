// Internal: what a completed sweep cycle changes in a JSONL copy, counted
// by id: the copy's lines when the cycle began against the lines the sweep
// wrote. A JSONL copy has no index, so the ids of the old lines are held in
// memory (an id and a 53-bit digest of its line) while the new are read.

import type { SyncWriteContext } from "./sink.ts";
import { readRange } from "./_files.ts";
import { tooMany, tooManyDeletes } from "./_deletes.ts";

/** What a cycle changed: the sink's report of the batch that ends it. */
export interface CycleChanges {
  readonly inserted: number;
  readonly updated: number;
  readonly deleted: number;
  /** Lines of the copy when the cycle began. */
  readonly held: number;
}

/**
 * Counts a cycle's changes and judges its guard, before anything of it
 * replaces the copy.
 *
 * @throws {SyncError} (`"too-many-deletes"`)
 */
export async function cycleChanges(
  before: { readonly path: string; readonly length: number },
  after: { readonly path: string; readonly length: number },
  context: SyncWriteContext,
): Promise<CycleChanges> {
  const idOf = lineId(context);
  const old = new Map<string, number>();
  for await (const line of linesOf(before.path, before.length)) {
    old.set(idOf(line), digest(line));
  }
  const held = old.size;
  let inserted = 0, updated = 0;
  for await (const line of linesOf(after.path, after.length)) {
    const id = idOf(line);
    const was = old.get(id);
    if (was === undefined) inserted++;
    else if (was !== digest(line)) updated++;
    old.delete(id);
  }
  const deleted = old.size;
  const ends = context.endsCycle!;
  if (tooMany(deleted, held, ends.maxDeletes, ends.recent)) {
    throw tooManyDeletes(
      deleted,
      held,
      ends.maxDeletes,
      before.path,
      ends.recent,
    );
  }
  return { inserted, updated, deleted, held };
}

/**
 * A line's id by the run's own reading of items; a sink written to
 * directly, without `keyOf`, takes a line as its own id (a changed line
 * counts as a delete and an insert).
 */
function lineId(context: SyncWriteContext): (line: string) => string {
  const keyOf = context.keyOf;
  return keyOf === undefined
    ? (line) => line
    : (line) => keyOf(JSON.parse(line)).id;
}

/** A 53-bit digest of `text`: a 32-bit FNV-1a beside its length. */
function digest(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  }
  return hash * 0x200000 + (text.length & 0x1fffff);
}

/** The lines of the first `length` bytes of `path`, without their ends. */
async function* linesOf(path: string, length: number): AsyncGenerator<string> {
  const CHUNK = 1 << 20;
  const decoder = new TextDecoder();
  let rest = "";
  for (let at = 0; at < length; at += CHUNK) {
    const bytes = await readRange(path, at, Math.min(length, at + CHUNK));
    rest += decoder.decode(bytes, { stream: true });
    const lines = rest.split("\n");
    rest = lines.pop()!;
    yield* lines;
  }
  rest += decoder.decode();
  if (rest !== "") yield rest;
}

/** The lines in the first `length` bytes of `path`. */
export async function countLines(
  path: string,
  length: number,
): Promise<number> {
  let lines = 0;
  for await (const _ of linesOf(path, length)) lines++;
  return lines;
}
