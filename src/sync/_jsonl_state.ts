// Internal: what the JSONL sink's side file holds, read back only when it
// is whole and of this format (a legacy 0.3 file is read too), and the check
// of a copy against it that comes before any write.

import type { SyncCheckpoint } from "./sink.ts";
import { isCheckpoint } from "./_checkpoint.ts";
import { fingerprint, readRange, readText, sizeOf } from "./_files.ts";
import { SyncError } from "./sync_error.ts";

const FORMAT = "partner-api-jsonl/2";
/** The fingerprint of the one byte "\n": what a 0.3 side file is checked by. */
const NEWLINE_HASH = "01ba4719c80b6fe911b091a7c05124b6";

/** The committed end of a file: its length, and its last line's place and fingerprint. */
export interface FileEnd {
  readonly length: number;
  readonly last: { readonly start: number; readonly hash: string } | null;
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
}

/**
 * A cycle's rewrite under way: the items the sweep read again, in their
 * own file; when the cycle completes, the copy's lines since `mainAt` (the
 * head's, all past what the sweep covers) follow them and the file
 * replaces the copy.
 */
export interface Rewrite {
  readonly end: FileEnd;
  readonly cycle: number;
  /** The copy's committed length when the cycle began. */
  readonly mainAt: number;
  /** The copy's lines then. */
  readonly mainLines: number;
  /** Lines the sweep has written to the rewrite. */
  readonly lines: number;
}

/** The side file's text. */
export function sideFileText(committed: Committed): string {
  return JSON.stringify({ format: FORMAT, ...committed });
}

/** The side file's content, or undefined when it is not a whole one. */
export function readSideFile(text: string): Committed | undefined {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  if (value.format === FORMAT && value.checkpoint === null) {
    return isEnd(value.end) && value.end.length === 0
      ? { checkpoint: null, end: value.end }
      : undefined;
  }
  if (!isCheckpoint(value.checkpoint)) return undefined;
  if (value.format === undefined && isLength(value.length)) {
    // 0.3 wrote only the length: its last byte must be a line's end.
    const length = value.length;
    return {
      checkpoint: value.checkpoint,
      end: {
        length,
        last: length === 0 ? null : { start: length - 1, hash: NEWLINE_HASH },
      },
    };
  }
  if (value.format !== FORMAT || !isEnd(value.end)) return undefined;
  if (value.rewrite !== undefined && !isRewrite(value.rewrite)) {
    return undefined;
  }
  return {
    checkpoint: value.checkpoint,
    end: value.end,
    ...(value.rewrite === undefined
      ? {}
      : { rewrite: value.rewrite as Rewrite }),
    ...(value.renaming === true ? { renaming: true } : {}),
  };
}

function isLength(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isEnd(value: unknown): value is FileEnd {
  if (typeof value !== "object" || value === null) return false;
  const { length, last } = value as Record<string, unknown>;
  if (!isLength(length)) return false;
  if (last === null) return length === 0;
  const { start, hash } = (last ?? {}) as Record<string, unknown>;
  return isLength(start) && start < length && typeof hash === "string";
}

function isRewrite(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  const rewrite = value as Record<string, unknown>;
  return isEnd(rewrite.end) && isLength(rewrite.cycle) &&
    isLength(rewrite.mainAt) && isLength(rewrite.mainLines) &&
    isLength(rewrite.lines);
}

/**
 * Reads the side file and checks the copy (and a rewrite under way)
 * against it. Reads only.
 *
 * @throws {SyncError} (`"sink-mismatch"`, `"link"`)
 */
export async function checkCopy(
  files: { copy: string; side: string },
  rewritePath: string,
): Promise<Committed | undefined> {
  const side = await readText(files.side);
  const size = await sizeOf(files.copy);
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
  if (committed.renaming && await sizeOf(rewritePath) !== undefined) {
    // Killed between its last save and the rename: the rewrite is the copy.
    await expectEnd(files, rewritePath, committed.end);
    return committed;
  }
  await expectEnd(files, files.copy, committed.end);
  if (committed.rewrite !== undefined && !committed.renaming) {
    await expectEnd(files, rewritePath, committed.rewrite.end);
  }
  return committed;
}

/** Checks that `path` holds at least `end.length` bytes, ending with the committed line. */
async function expectEnd(
  files: { copy: string; side: string },
  path: string,
  end: FileEnd,
): Promise<void> {
  const size = await sizeOf(path) ?? 0;
  if (size < end.length) {
    throw mismatch(
      files,
      `${path} holds ${size} bytes, fewer than the ${end.length} that ${files.side} says were committed`,
    );
  }
  if (end.last === null) return;
  const bytes = await readRange(path, end.last.start, end.length);
  if (bytes === undefined || await fingerprint(bytes) !== end.last.hash) {
    throw mismatch(
      files,
      `the last committed line of ${path} is not the one ${files.side} recorded: the copy was changed`,
    );
  }
}

function mismatch(files: { copy: string; side: string }, what: string) {
  return new SyncError(
    `Cannot sync into ${files.copy}: ${what}. Nothing was changed: sync into a new file, or restore ${files.copy} and ${files.side} together`,
    "sink-mismatch",
    files.copy,
  );
}
