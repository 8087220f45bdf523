// Internal: a copy's files, opened the one safe way: never through a symbolic link (another user's link beside the
// copy must not redirect a write), never truncated, new ones exclusive and 0600, replaced whole only by renaming a
// temporary file of the run's own over them. Every failure is a SyncError naming the file.

import { createHash } from "node:crypto";
import {
  closeSync,
  lstatSync,
  openSync,
  readFileSync,
  readSync,
  realpathSync,
  type Stats,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { constants, lstat, open, rename, unlink } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { SyncError } from "./sync_error.ts";
import { tried } from "../core/_check.ts";

const { O_RDONLY, O_RDWR, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0; // a FIFO swapped in answers at once instead of holding the run
const FILE_MODE = 0o600;
const NEW = O_WRONLY | O_CREAT | O_EXCL;

/**
 * What is at `path`, or undefined. `plain`: a file no user makes (a lock, a rewrite, SQLite's journals), so a hard link
 * to one was planted, and a folder (whose nlink counts its entries) is no file.
 * @throws {SyncError} (`"link"`) For a symbolic link, or a hard link `plain`; (`"file"`) For what is not a file, `plain`.
 */
export async function statOf(path: string, plain = false) {
  const info = await lstat(path).catch((error) => {
    if (code(error) === "ENOENT") return undefined;
    throw fileError(path, "look at", error);
  });
  return judged(path, info, plain);
}

/** `statOf`'s judgement of what lstat found at `path`. */
function judged(path: string, info: Stats | undefined, plain: boolean) {
  if (info?.isSymbolicLink()) throw refused(path, LINK, info);
  if (plain && info && !info.isFile()) throw notPlain(path);
  if (plain && info && info.nlink > 1) throw refused(path, HARD_LINK, info);
  return info;
}

/** `statOf` at once, for `createPrivate` (called where a sink is made, outside any run's turns). */
function statOfSync(path: string, plain = false) {
  try {
    return judged(path, lstatSync(path), plain);
  } catch (error) {
    if (code(error) === "ENOENT") return undefined;
    throw fileError(path, "look at", error);
  }
}

/**
 * Which file `path` names now (device:inode, looked up at `at`), to tell later it was replaced.
 * @throws {SyncError} (`"file"`) When there is none, or it cannot be looked at.
 */
export function identityOf(path: string, at: string = path): string {
  try {
    const { dev, ino } = lstatSync(at);
    return `${dev}:${ino}`;
  } catch (error) {
    throw fileError(path, "find", error);
  }
}

/** Refuses a database SQLite opened `at` (it resolves links) that `path` does not name: a link swapped in after every look. */
export function assertOpenedAt(path: string, at: string | null | undefined) {
  const own = tried(() => join(realpathSync(dirname(path)), basename(path)));
  if (at && own && at !== own) throw refused(path, REPLACED);
}

/**
 * Creates an empty file at `path`, 0600, unless one is there, for SQLite to open; only where each file SQLite keeps
 * beside it (`path` and a suffix) is plain or absent, as `statOf` judges: a refusal would leave the new file behind.
 * @throws {SyncError} (`"link"`, `"file"`)
 */
export function createPrivate(
  path: string,
  suffixes: readonly string[],
): void {
  if (statOfSync(path)) return;
  for (const end of suffixes) statOfSync(path + end, true);
  try {
    closeSync(openSync(path, NEW | O_NOFOLLOW, FILE_MODE));
  } catch (error) {
    if (code(error) === "EEXIST") return createPrivate(path, suffixes);
    throw fileError(path, "create", error);
  }
}

/**
 * Opens `path` to `"read"`, `"write"` (never truncated) or `"create"` (new, 0600; else EEXIST as a `"file"` error's
 * cause), checking the handle is the path's own file.
 * @throws {SyncError} (`"link"`) For a link, another name of its file, or a swap while opened; (`"file"`) otherwise.
 */
export async function openFile(path: string, how: How, tries = 3) {
  const flags = { read: O_RDONLY, write: O_RDWR, create: NEW }[how];
  // Deno's node:fs ignores O_NOFOLLOW and follows a link (even one swapped in after a look): the handle is checked below.
  const file = await open(path, flags | O_NOFOLLOW | O_NONBLOCK, FILE_MODE)
    .catch(async (error) => {
      // A link the open could not follow (dangling, or O_EXCL met it).
      const info = await lstat(path).catch(() => undefined);
      if (code(error) === "ELOOP" || info?.isSymbolicLink()) {
        throw refused(path, LINK, info);
      }
      throw fileError(path, how === "create" ? "create" : "open", error);
    });
  try {
    await assertOwnFile(file, path, how);
  } catch (error) {
    await file.close().catch(() => {});
    // A side file another run replaced (write, rename) as this one opened it: read the new one; a swap that goes on is refused.
    const replaced = error instanceof SyncError &&
      error.message.includes(REPLACED);
    if (how === "read" && tries > 1 && replaced) {
      return await openFile(path, how, tries - 1);
    }
    throw error;
  }
  return guarded(file, path, how === "read" ? "read" : "write");
}

type How = "read" | "write" | "create";
const REPLACED = "was replaced while this run opened it";
const LINK = "is a symbolic link";
const HARD_LINK = "is another name of a file (a hard link)";

/**
 * Opens `path` to write: its file; missing, a new one only when `create` (nothing of it committed; or one another writer
 * made meanwhile: then `"lock-lost"`), else nothing is made where it was removed. @throws {SyncError} (`"link"`, `"file"`)
 */
export async function openToWrite(path: string, create: boolean) {
  const file = await openFile(path, "write").catch((error) => {
    if (!create || code(error) !== "ENOENT") throw error;
  });
  return file ?? await openFile(path, "create").catch((error) => {
    if (code(error) !== "EEXIST") throw error;
    return openFile(path, "write");
  });
}

/** Refuses a handle not of the plain file `path` names now: a link followed or swapped in, a swap, or a hard link. */
async function assertOwnFile(file: FileHandle, path: string, how: How) {
  const failed = (error: unknown) => {
    throw fileError(path, "open", error);
  };
  const opened = await file.stat().catch(failed);
  const named = await lstat(path).catch(failed);
  if (named.isSymbolicLink()) throw refused(path, LINK, named);
  if (opened.dev !== named.dev || opened.ino !== named.ino) {
    throw refused(path, REPLACED, named);
  }
  if (!opened.isFile()) throw notPlain(path);
  if (how !== "read" && opened.nlink > 1) throw refused(path, HARD_LINK, named);
}

/** The refusal (`"file"`) of a folder or a device where a file of the copy belongs. */
function notPlain(path: string): SyncError {
  const message =
    `Cannot sync: ${path} is not a plain file: remove it, or give another path`;
  return new SyncError(message, "file", path);
}

/** `file`, whose failures are SyncErrors (`"file"`) naming `path` and what failed (reading a file opened to read). */
function guarded(file: FileHandle, path: string, doing: "read" | "write") {
  return new Proxy(file, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const result: unknown = value.apply(target, args);
        return result instanceof Promise
          ? result.catch((error) => {
            throw fileError(path, key === "close" ? "close" : doing, error);
          })
          : result;
      };
    },
  });
}

/** The bytes of `path` from `start` to `end`, or undefined when it is missing. */
export function readRange(path: string, start: number, end: number) {
  const read = (file: FileHandle) => readAtSync(file, path, start, end);
  return withFile(path, "read", (file) => Promise.resolve(read(file)));
}

/** The bytes of `file`, open at `path`, from `start` to `end` (fewer past its end), read blocking (µs, not tens). */
export function readAtSync(
  file: FileHandle,
  path: string,
  start: number,
  end: number,
): Uint8Array {
  const bytes = new Uint8Array(Math.max(0, end - start));
  let read = 0, got = 1;
  try {
    while (read < bytes.length && got > 0) {
      got = readSync(file.fd, bytes, read, bytes.length - read, start + read);
      read += got;
    }
  } catch (error) {
    throw fileError(path, "read", error);
  }
  return bytes.subarray(0, read);
}

/** The whole text of `path`, or undefined: the size read from the open file, so one renamed over it is read whole. */
export function readText(path: string): Promise<string | undefined> {
  return withFile(path, "read", (file) => file.readFile("utf8"));
}

/** `use` of the file at `path` opened `how`, closed after; undefined when there is none (or, to create, one is there). */
export async function withFile<R>(
  path: string,
  how: How,
  use: (file: FileHandle) => Promise<R>,
): Promise<R | undefined> {
  const missing = how === "create" ? "EEXIST" : "ENOENT";
  const file = await openFile(path, how).catch((error) => {
    if (code(error) !== missing) throw error;
  });
  if (file === undefined) return;
  try {
    return await use(file);
  } finally {
    await file.close();
  }
}

/** Replaces `path` with `text` via `<path>.<run>.tmp` (no other run's name), synced and renamed: readers see old or new. */
export async function replaceFile(path: string, text: string, run: string) {
  const temporary = `${path}.${run}.tmp`;
  let file: FileHandle | undefined;
  try {
    file = await openFile(temporary, "create");
    await file.writeFile(text);
    await file.sync();
    await file.close();
    await renameFile(temporary, path);
  } catch (error) {
    await file?.close().catch(() => {}); // closed already, or not
    // Else each failed run would leave one (also one made, then refused): its random name is no other file's.
    await unlink(temporary).catch(() => {});
    throw error;
  }
}

/** Renames `from` over `to`, once `to` is no link (refused, not replaced); a failure names `to`, the file replaced. */
export async function renameFile(from: string, to: string): Promise<void> {
  await statOf(to);
  await rename(from, to).catch((error) => {
    throw fileError(to, `rename ${from} to`, error);
  });
}

export async function removeFile(path: string): Promise<void> {
  await unlink(path).catch((error) => {
    if (code(error) !== "ENOENT") throw fileError(path, "remove", error);
  });
}

/** A fingerprint of `data` (text as UTF-8): hex SHA-256 cut to 32 digits, by node:crypto (WebCrypto cost an event-loop trip per batch). */
export function fingerprint(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex").slice(0, 32);
}

/** The system's code of `error`, or of the cause of a file SyncError. */
function code(error: unknown): unknown {
  if (error instanceof SyncError) {
    return error.reason === "file" ? code(error.cause) : undefined;
  }
  return (error as { code?: unknown } | null)?.code;
}

/** `error` as a SyncError (`"file"`) naming `path`; a SyncError as it is. */
export function fileError(path: string, doing: string, error: unknown) {
  if (error instanceof SyncError) return error;
  const why = code(error) === "ENOENT"
    ? "it or its folder does not exist"
    : String((error as Error | null)?.message ?? error).split("\n")[0];
  const message = `Cannot sync: cannot ${doing} ${path} (${why})`;
  return new SyncError(message, "file", path, { cause: error });
}

/** The refusal of a planted file: whose it is, and what to remove. */
function refused(path: string, what: string, info?: { uid: number }) {
  const whose = info === undefined ? "" : `, owned by ${ownerOf(info.uid)}`;
  return new SyncError(
    `Cannot sync: ${path} ${what}${whose}; a copy's files are never opened through a link and nothing was written to it: remove ${path} (check first what it is and who made it), or give the copy's real path`,
    "link",
    path,
  );
}

/** `uid N (name)`, the name from /etc/passwd where it may be read without asking. */
function ownerOf(uid: number): string {
  const deno = (globalThis as {
    Deno?: { permissions?: { querySync?: (d: object) => { state: string } } };
  }).Deno;
  const passwd = "/etc/passwd";
  try {
    // Deno would prompt for a path it may not read: ask first, never prompt.
    const may = deno?.permissions?.querySync?.({ name: "read", path: passwd });
    if (deno !== undefined && may?.state !== "granted") return `uid ${uid}`;
    for (const line of readFileSync(passwd, "utf8").split("\n")) {
      const [name, , id] = line.split(":");
      if (id === String(uid)) return `uid ${uid} (${name})`;
    }
  } catch {
    // No /etc/passwd (Windows, a container without one): the uid alone.
  }
  return `uid ${uid}`;
}
