// Internal: the files of a copy, opened the one safe way: never through a
// symbolic link (another user's link beside the copy must not redirect a
// write), created 0600, and replaced whole only through a temporary file of
// this run's own and a rename. node:fs, so it runs wherever node:fs does.

import { createHash } from "node:crypto";
import { closeSync, lstatSync, openSync } from "node:fs";
import { constants, lstat, open, rename, unlink } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { SyncError } from "./sync_error.ts";

const { O_RDONLY, O_RDWR, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

/** The mode of every file a sink creates: the owner's alone. */
export const FILE_MODE = 0o600;

/**
 * The size of the file at `path`, or undefined when there is none.
 *
 * @throws {SyncError} (`"link"`) When it is a symbolic link.
 */
export async function sizeOf(path: string): Promise<number | undefined> {
  try {
    const info = await lstat(path);
    if (info.isSymbolicLink()) throw linkRefused(path);
    return info.size;
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/**
 * Creates an empty file at `path`, 0600, unless one is there; for a library
 * (SQLite) that opens the path itself. Synchronous, like its caller.
 *
 * @throws {SyncError} (`"link"`) When `path` is a symbolic link.
 */
export function createPrivate(path: string): void {
  try {
    if (lstatSync(path).isSymbolicLink()) throw linkRefused(path);
    return;
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  try {
    closeSync(
      openSync(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, FILE_MODE),
    );
  } catch (error) {
    if (code(error) === "ELOOP") throw linkRefused(path);
    if (code(error) !== "EEXIST") throw error;
  }
}

/** Refuses `path` if it is a symbolic link (dangling ones too). */
export async function refuseLink(path: string): Promise<void> {
  await sizeOf(path);
}

/**
 * Opens `path` without following a link: `"read"`, `"write"` (an existing
 * file), or `"create"` (a new file, 0600, failing if one exists).
 */
export async function openFile(
  path: string,
  how: "read" | "write" | "create",
): Promise<FileHandle> {
  const flags = how === "read"
    ? O_RDONLY
    : how === "write"
    ? O_RDWR
    : O_WRONLY | O_CREAT | O_EXCL;
  // Deno under path-scoped permissions opens an existing file through a
  // link despite O_NOFOLLOW (it resolves the path first): look first. (A
  // new file's O_EXCL still refuses any link, dangling ones included.)
  if (how !== "create" && (await lstat(path)).isSymbolicLink()) {
    throw linkRefused(path);
  }
  try {
    return await open(path, flags | O_NOFOLLOW, FILE_MODE);
  } catch (error) {
    if (code(error) === "ELOOP") throw linkRefused(path);
    throw error;
  }
}

/** The bytes of `path` from `start` to `end`, or undefined when it is missing. */
export async function readRange(
  path: string,
  start: number,
  end: number,
): Promise<Uint8Array | undefined> {
  let file: FileHandle;
  try {
    file = await openFile(path, "read");
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
  try {
    const bytes = new Uint8Array(Math.max(0, end - start));
    let read = 0;
    while (read < bytes.length) {
      const { bytesRead } = await file.read(
        bytes,
        read,
        bytes.length - read,
        start + read,
      );
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return bytes.subarray(0, read);
  } finally {
    await file.close();
  }
}

/**
 * The whole text of `path` (not a link), or undefined when it is missing:
 * its size read from the open file, so a file renamed over it meanwhile is
 * read whole, old or new.
 */
export async function readText(path: string): Promise<string | undefined> {
  let file: FileHandle;
  try {
    file = await openFile(path, "read");
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
  try {
    return await file.readFile("utf8");
  } finally {
    await file.close();
  }
}

/**
 * Replaces `path` with `text`: written to `<path>.<run>.tmp` (a name no
 * other run uses), synced, then renamed over it, so a reader sees the old
 * file or the new one, never part of either.
 */
export async function replaceFile(
  path: string,
  text: string,
  run: string,
): Promise<void> {
  const temporary = `${path}.${run}.tmp`;
  const file = await openFile(temporary, "create");
  try {
    await file.writeFile(text);
    await file.sync();
  } catch (error) {
    await file.close().catch(() => {});
    await unlink(temporary).catch(() => {});
    throw error;
  }
  await file.close();
  await refuseLink(path);
  await rename(temporary, path);
}

/**
 * A fingerprint of `bytes`: the hex SHA-256, cut to 32 digits. Hashed at
 * once (node:crypto): WebCrypto's digest cost a trip through the event
 * loop per batch.
 */
export function fingerprint(bytes: Uint8Array): Promise<string> {
  return Promise.resolve(
    createHash("sha256").update(bytes).digest("hex").slice(0, 32),
  );
}

/** Whether `error` says the file does not exist. */
export function isMissing(error: unknown): boolean {
  return code(error) === "ENOENT";
}

function code(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

function linkRefused(path: string): SyncError {
  return new SyncError(
    `Cannot sync: ${path} is a symbolic link; a copy's files are never opened through one: give the real path`,
    "link",
    path,
  );
}
