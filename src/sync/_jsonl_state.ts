// Internal: the JSONL sink's side file, read back only when whole and of this format (or 0.3's), the check of a copy
// against it before any write, and the copy's lines.

import type { SyncCheckpoint, SyncWriteContext } from "./sink.ts";
import { count, isCheckpoint, parsedJson, shape, text } from "./_checkpoint.ts";
import { tried } from "../core/_check.ts";
import {
  fingerprint,
  identityOf,
  openFile,
  readRange,
  readText,
  statOf,
} from "./_files.ts";
import { sinkMismatch, SyncError } from "./sync_error.ts";
import type { CopyRow } from "./_window_guard.ts";

const FORMAT = "partner-api-jsonl/2";
/** The fingerprint of the one byte "\n": what a 0.3 side file is checked by. */
const NEWLINE_HASH = "01ba4719c80b6fe911b091a7c05124b6";

export interface CopyFiles {
  readonly copy: string;
  readonly side: string;
  readonly rewrite: string;
}

/** The committed end of a file: its length, its last line's place and fingerprint, and its first line's end and fingerprint (absent from an older side file: not checked). */
export interface FileEnd {
  readonly length: number;
  readonly last: { readonly start: number; readonly hash: string } | null;
  readonly first?: { readonly end: number; readonly hash: string } | undefined;
}

/** What the side file records. */
export interface Committed {
  /** Null while a new copy is begun and nothing is committed yet. */
  readonly checkpoint: SyncCheckpoint | null;
  /** The copy's committed end. */
  readonly end: FileEnd;
  /** The sweep cycle's file under way (`<path>.rewrite`), while there is one. */
  readonly rewrite?: Rewrite;
  /** The rewrite is complete and `end` is its end; it is being renamed over the copy. */
  readonly renaming?: boolean;
  /** Decided by the check from a record that says otherwise: recorded once a run holds the copy. */
  readonly unsaved?: true;
  /** While renaming: what was committed before, which stands if the rewrite is gone before its rename. */
  readonly replaces?: {
    readonly checkpoint: SyncCheckpoint;
    readonly end: FileEnd;
    /** The rewrite's file (`identityOf`): renamed, the copy is that file. */
    readonly file: string;
  };
}

/** A cycle's rewrite: the sweep's items; once complete, the head's lines since `mainAt` follow and it replaces the copy. */
export interface Rewrite {
  readonly end: FileEnd;
  readonly cycle: number;
  /** The copy's committed length when the cycle began. */
  readonly mainAt: number;
}

export function sideFileText(committed: Omit<Committed, "unsaved">): string {
  return JSON.stringify({ format: FORMAT, ...committed });
}

/** The side file's content, or undefined when it is not a whole one. */
function readSideFile(text: string): Committed | undefined {
  const value = parsedJson(text) as Record<string, unknown> | null;
  if (typeof value !== "object" || value === null) return undefined;
  if (value.format === FORMAT && value.checkpoint === null) {
    return isEnd(value.end) && value.end.length === 0
      ? { checkpoint: null, end: value.end }
      : undefined;
  }
  if (!isCheckpoint(value.checkpoint)) return undefined;
  if (value.format === undefined && count(value.length)) {
    // 0.3 wrote only the length: its last byte must be a line's end.
    const length = value.length as number, start = length - 1;
    const last = length === 0 ? null : { start, hash: NEWLINE_HASH };
    return { checkpoint: value.checkpoint, end: { length, last } };
  }
  const { end, rewrite, renaming, replaces } = value;
  if (value.format !== FORMAT || !isEnd(end)) return undefined;
  if (rewrite !== undefined && !isRewrite(rewrite)) return undefined;
  if (replaces !== undefined && !isReplaced(replaces)) return undefined;
  return {
    checkpoint: value.checkpoint,
    end,
    ...(rewrite === undefined ? {} : { rewrite: rewrite as Rewrite }),
    ...(renaming === true ? { renaming: true } : {}),
    ...(replaces === undefined ? {} : { replaces: replaces as Replaced }),
  };
}

function isEnd(value: unknown): value is FileEnd {
  const line = (at: string) => shape({ [at]: count, hash: text });
  const last = (v: unknown) => v === null || line("start")(v);
  const first = (v: unknown) => v === undefined || line("end")(v);
  if (!shape({ length: count, last, first })(value)) return false;
  const end = value as FileEnd, head = end.first;
  if (head && !(head.end > 0 && head.end <= end.length)) return false;
  return end.last === null ? end.length === 0 : end.last.start < end.length;
}

const isRewrite = shape({ end: isEnd, cycle: count, mainAt: count });
const isReplaced = shape({ checkpoint: isCheckpoint, end: isEnd, file: text });
type Replaced = NonNullable<Committed["replaces"]>;

/** Checks the copy (and a rewrite) against its side file; reads only. @throws {SyncError} (`"sink-mismatch"`, `"link"`, `"file"`) */
export async function checkCopy(files: CopyFiles) {
  const copy = await statOf(files.copy);
  if (copy?.isDirectory()) {
    // As a folder where any other file of a copy belongs, SQLite's too.
    const message =
      `Cannot sync: ${files.copy} is a folder, not a file: sync into a new file`;
    throw new SyncError(message, "file", files.copy);
  }
  const side = await readText(files.side), size = copy?.size;
  if (side === undefined) {
    if ((size ?? 0) === 0) return undefined;
    throw mismatch(
      files,
      `${files.copy} holds ${size} bytes but ${files.side} is missing: it was not written by a sync, or its side file was lost`,
    );
  }
  const committed = readSideFile(side);
  if (committed === undefined) {
    throw mismatch(files, `${files.side} is damaged or from another version`);
  }
  if (committed.renaming) return await renamingState(files, committed);
  await expectEnd(files, files.copy, committed.end);
  if (committed.rewrite === undefined) return committed;
  // A cycle's rewrite removed between runs (it looks temporary): the copy stands as committed, the cycle begins again.
  if (await statOf(files.rewrite) === undefined) {
    const { sweep: _, ...checkpoint } = committed.checkpoint!;
    return { checkpoint, end: committed.end };
  }
  const instead = `remove ${files.rewrite} (the cycle under way begins again)`;
  await expectEnd(files, files.rewrite, committed.rewrite.end, instead);
  return committed;
}

/** Checks that `path` holds at least `end.length` bytes, its first and last committed lines. @throws {SyncError} (`"sink-mismatch"`) */
export async function expectEnd(
  files: CopyFiles,
  path: string,
  end: FileEnd,
  instead?: string,
): Promise<void> {
  const { first, last, length } = end;
  const size = (await statOf(path))?.size ?? 0;
  const fewer =
    `fewer than the ${length} that ${files.side} says were committed`;
  if (size < length) {
    throw mismatch(files, `${path} holds ${size} bytes, ${fewer}`, instead);
  }
  const expect = async (line: string, at: number, to: number, hash: string) => {
    if (fingerprint(await readRange(path, at, to) ?? "") === hash) return;
    const what =
      `the ${line} committed line of ${path} is not the one ${files.side} recorded: the copy was changed`;
    throw mismatch(files, what, instead);
  };
  if (last) await expect("last", last.start, length, last.hash);
  if (first) await expect("first", 0, first.end, first.hash);
}

/**
 * A cycle recorded complete, by the files: its rewrite still to be renamed over the copy; renamed (then as if the
 * record said so); or gone before the rename (removed, as a link's refusal says, or replaced by a new cycle's), when
 * what was committed before stands and the cycle begins again.
 */
async function renamingState(
  files: CopyFiles,
  committed: Committed,
): Promise<Committed> {
  const { replaces, checkpoint, end } = committed;
  const rewrite = await statOf(files.rewrite) &&
    tried(() => identityOf(files.rewrite));
  if (rewrite && replaces === undefined) {
    await expectEnd(files, files.rewrite, end);
    return committed;
  }
  const ours = rewrite && rewrite === replaces?.file;
  if (ours && await endsAt(files, files.rewrite, end)) return committed;
  // Renamed: the copy holds the cycle's end, and is the rewrite's file or not the copy before (a restored copy, or one
  // moved to another disk, is another file).
  const renamed = replaces === undefined ||
    await endsAt(files, files.copy, end) &&
      (tried(() => identityOf(files.copy)) === replaces.file ||
        !await endsAt(files, files.copy, replaces.end));
  if (renamed) {
    await expectEnd(files, files.copy, end);
    return { checkpoint, end, unsaved: true };
  }
  await expectEnd(files, files.copy, replaces.end);
  const { sweep: _, ...before } = replaces.checkpoint;
  return { checkpoint: before, end: replaces.end, unsaved: true };
}

/** Whether `path` holds `end` (`expectEnd` passes). */
function endsAt(files: CopyFiles, path: string, end: FileEnd) {
  return expectEnd(files, path, end).then(() => true, (error) => {
    if (error?.reason === "sink-mismatch") return false;
    throw error;
  });
}

function mismatch({ copy, side }: CopyFiles, what: string, instead?: string) {
  instead ??= `sync into a new file, or restore ${copy} and ${side} together`;
  return sinkMismatch(copy, what, instead);
}

/** The copy's lines as rows, seen by cycle `cycle` when in its rewrite or appended since it began (past `mainAt`). */
export async function* copyRows(
  files: CopyFiles,
  committed: Committed | undefined,
  cycle: number,
  keyOf: KeyOf,
): AsyncGenerator<CopyRow> {
  if (committed === undefined) return;
  const { renaming, rewrite } = committed;
  const under = !renaming && rewrite?.cycle === cycle ? rewrite : undefined;
  const seen = await rewriteIds(files, committed, cycle, keyOf);
  const listed = new Set<string>();
  const path = renaming ? files.rewrite : files.copy;
  const mainAt = under?.mainAt ?? Infinity;
  for await (const read of linesOf(path, committed.end.length)) {
    const { lines, ends } = read, parsed = itemsOf(files, read);
    for (let i = 0; i < lines.length; i++) {
      const id = idOf(keyOf, parsed[i], lines[i]!);
      const isSeen = ends[i]! >= mainAt || seen.has(id);
      // A seen item once (an item moved twice has two lines after the cycle began); an unseen one the guard counts once.
      if (isSeen && listed.has(id)) continue;
      if (isSeen) listed.add(id);
      yield { id, item: parsed[i], seen: isSeen };
    }
  }
}

/** The ids cycle `cycle`'s rewrite holds, while it is under way: what the cycle read. */
export async function rewriteIds(
  files: CopyFiles,
  { renaming, rewrite }: Committed,
  cycle: number,
  keyOf: KeyOf,
): Promise<Set<string>> {
  const under = !renaming && rewrite?.cycle === cycle ? rewrite : undefined;
  const ids = new Set<string>();
  for await (const read of linesOf(files.rewrite, under?.end.length ?? 0)) {
    const items = itemsOf(files, read);
    items.forEach((item, i) => ids.add(idOf(keyOf, item, read.lines[i]!)));
  }
  return ids;
}

/** An item's id; not this run's item: the line is its id (the guard leaves it to the cycle's end). */
const idOf = (keyOf: KeyOf, item: unknown, line: string) =>
  tried(() => keyOf(item).id) ?? line;

/**
 * Writes the lines of `path`'s first `length` bytes, then `tail`'s, over `path` without the lines `drop` names, a read
 * at a time (a line only moves toward the start, so each write stays behind the reads); the new end.
 */
export async function writeWithout(
  path: string,
  length: number,
  tail: string,
  drop: readonly number[],
): Promise<FileEnd> {
  const dropped = new Set(drop), encoder = new TextEncoder();
  let line = 0, end = EMPTY;
  const file = await openFile(path, "write");
  const write = async (lines: string[]) => {
    const kept = lines.filter(() => !dropped.has(line++));
    if (kept.length === 0) return;
    const bytes = encoder.encode(kept.map((text) => `${text}\n`).join(""));
    await file.write(bytes, 0, bytes.length, end.length);
    end = endAfter(end, bytes);
  };
  try {
    for await (const read of linesOf(path, length)) await write(read.lines);
    await write(tail.split("\n").slice(0, -1));
    await file.truncate(end.length);
    await file.datasync();
  } finally {
    await file.close();
  }
  return end;
}

/** `from` once the whole lines `bytes` follow it: its length and last line, and its first line when `from` was empty. */
export function endAfter(from: FileEnd, bytes: Uint8Array): FileEnd {
  if (bytes.length === 0) return from;
  const hash = (start: number, end?: number) =>
    fingerprint(bytes.subarray(start, end));
  const { length } = from;
  const lastStart = bytes.lastIndexOf(LF, bytes.length - 2) + 1;
  const last = { start: length + lastStart, hash: hash(lastStart) };
  const firstEnd = bytes.indexOf(LF) + 1;
  const first = length
    ? from.first
    : { end: firstEnd, hash: hash(0, firstEnd) };
  return { length: length + bytes.length, last, first };
}

export const EMPTY: FileEnd = { length: 0, last: null };

/** A read of `path`: its lines, without their ends; where each ends; how many lines came before. */
export type Lines = {
  path: string;
  lines: string[];
  ends: number[];
  before: number;
};

/** The items of JSON texts, parsed as one array (V8 parses it faster than each), else each alone. */
function parsedItems(all: readonly string[]): unknown[] {
  const items = parsedJson(`[${all}]`) as unknown[] | undefined; // JSON.stringify's texts
  return items?.length === all.length ? items : all.map((t) => JSON.parse(t));
}

/** The items of a read's lines. @throws {SyncError} (`"sink-mismatch"`) For a line that is not JSON, by its number. */
export function itemsOf(files: CopyFiles, { path, lines, before }: Lines) {
  try {
    return parsedItems(lines);
  } catch {
    const bad = lines.findIndex((line) => parsedJson(line) === undefined);
    const what = `line ${before + bad + 1} of ${path} is not JSON`;
    throw mismatch(files, `${what}: the copy was changed`);
  }
}

/** The lines of the first `length` bytes of `path`, a read's at a time. */
export async function* linesOf(
  path: string,
  length: number,
): AsyncGenerator<Lines> {
  const decoder = new TextDecoder(), CHUNK = 1 << 20;
  let rest = "", before = 0;
  for (let at = 0; at < length; at += CHUNK) {
    const bytes = await readRange(path, at, Math.min(length, at + CHUNK)) ??
      new Uint8Array();
    rest += decoder.decode(bytes, { stream: true });
    const lines = rest.split("\n"), ends: number[] = [];
    rest = lines.pop()!;
    // No byte of a multi-byte character is "\n": one end a line.
    for (let i = 0; (i = bytes.indexOf(LF, i)) >= 0; i++) ends.push(at + i);
    yield { path, lines, ends, before };
    before += lines.length;
  }
  rest += decoder.decode();
  if (rest !== "") yield { path, lines: [rest], ends: [length], before };
}

const LF = 0x0a;

/** What keys a line: the run's `keyOf`. */
export type KeyOf = NonNullable<SyncWriteContext["keyOf"]>;

/**
 * Each item's line; one JSON cannot hold (undefined, a BigInt, a cycle), or whose line would not read back as it
 * (its own `toJSON`), skipped as SQL sinks skip what they cannot hold, not stopping runs.
 */
export function itemLines(
  items: readonly unknown[],
  ids: readonly string[],
  keyOf: KeyOf | undefined,
) {
  const written: string[] = [], skipped: string[] = [];
  let lines = "";
  items.forEach((item, i) => {
    const text = tried(() => JSON.stringify(item));
    const stored = text !== undefined && readsBack(item, text, keyOf);
    (stored ? written : skipped).push(ids[i]!);
    if (stored) lines += `${text}\n`;
  });
  return { lines, written, skipped };
}

/**
 * Whether `text` reads back as `item`'s key (id and sort value), which the next cycle reads from the line: a plain
 * object too may lose it (a non-enumerable id, a nested Date, Map or `toJSON`), failing every cycle after it.
 */
function readsBack(item: unknown, text: string, keyOf: KeyOf | undefined) {
  if (!keyOf) return true;
  const [read, own] = [tried(() => keyOf(JSON.parse(text))), keyOf(item)];
  return read?.id === own.id && read.value === own.value;
}
