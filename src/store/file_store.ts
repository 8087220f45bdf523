// A token store on encrypted files in one folder, which the CLI keeps between runs. Files, not
// Deno KV: no --unstable-kv and no configuration, for a tool run straight from the registry.

import type { CoordinateOptions, TokenRecord, TokenStore } from "./types.ts";
import { delay } from "../core/_deadlines.ts";
import { type LockSighting, staleJudge, steadyClock } from "../core/_clock.ts";
import { secretOutOfChecks } from "../core/_option_secrets.ts";
import {
  fieldsOf,
  optionNames,
  requireDeno,
  requireFunction,
  requireKnownOptions,
  requireText,
} from "../core/_check.ts";
import { openRecord, published, sealRecord } from "./_record.ts";
import { holdLock, lockText, stampOf } from "./_file_lock.ts";
import { aesKeyFrom, hexDigest, perKey, storeKey } from "./_key.ts";

/**
 * Options of {@linkcode createFileTokenStore}.
 *
 * @example Told when a token cannot be kept
 * ```ts
 * import { createFileTokenStore, type FileTokenStoreOptions } from "@partner-api/client/store";
 * import { equal } from "node:assert/strict";
 *
 * const notices: string[] = [];
 * const folder = ".test-tmp/doc-file-store-not-a-folder";
 * const options: FileTokenStoreOptions = { folder, clientSecret: "s3cret", onNotice: (line) => void notices.push(line) };
 * await Deno.mkdir(".test-tmp", { recursive: true });
 * await Deno.writeTextFile(folder, "a file where the folder should be");
 * await createFileTokenStore(options).set("a client", {});
 * equal(notices.length, 1); // "could not write the token cache in ..."
 * ```
 */
export interface FileTokenStoreOptions {
  /** The folder of the files; created (mode 0700) at the first write. */
  folder: string;
  /** The client secret: each file is sealed under a key derived from it. */
  clientSecret: string;
  /**
   * Told, in one line, when the store skips a file not its own (not a regular file ≤ 64 KiB) or cannot write one.
   * @default nothing is told
   */
  onNotice?: (line: string) => void;
  /**
   * The clock (epoch ms) that stamps a lock and judges it stale: the providers' `now`.
   * @default {Date.now}
   */
  now?: () => number;
}

const FILE_OPTIONS = optionNames<FileTokenStoreOptions>()(
  "folder clientSecret onNotice now",
);

/**
 * A {@linkcode TokenStore} on one encrypted file per client, whose records a tool can read without a request.
 *
 * @example Reading the quota a run left, without a token request
 * ```ts
 * import { createFileTokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
 * const { clientId, clientSecret } = api.credentials;
 * const folder = ".test-tmp/doc-file-store-record";
 * const store = createFileTokenStore({ folder, clientSecret });
 * await createTokenProvider({ ...api.environment, clientId, clientSecret, store }).getToken();
 * const record = await store.recordFor({ ...api.environment, clientId });
 * equal(record?.quota?.buckets[0]?.remaining, 9);
 * equal(api.tokenRequests, 1);
 * ```
 */
export interface FileTokenStore extends TokenStore {
  /** The folder of the files. */
  readonly folder: string;
  /** The record kept for one client of this store's secret, read without any request. */
  recordFor(client: {
    readonly tokenUrl: string | URL;
    readonly audience: string;
    readonly clientId: string;
  }): Promise<TokenRecord | undefined>;
  /** Removes the record kept for one client of this store's secret (`partner-api cache clear --env-file`); whether one was. */
  forget(client: Parameters<FileTokenStore["recordFor"]>[0]): Promise<boolean>;
}

/** A client of the store's secret, as its records are keyed. */
type Client = Parameters<FileTokenStore["recordFor"]>[0];

/**
 * Creates a token store on encrypted files in `options.folder`, shared by every process that opens it with the same
 * secret (needs read and write permission there). A lock file makes them request once between them; a lock whose owner
 * stopped refreshing it is taken over.
 * @throws {TypeError} When `folder` or `clientSecret` is not a non-empty string, or `onNotice` or `now` is not a
 * function; outside Deno (`option: "folder"`), before anything is touched.
 *
 * @example Two runs, one token
 * ```ts
 * import { createFileTokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const folder = ".test-tmp/doc-file-store";
 * const run = () => {
 *   const store = createFileTokenStore({ folder, clientSecret: api.credentials.clientSecret });
 *   return createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * };
 * equal((await run()).accessToken, (await run()).accessToken);
 * equal(api.tokenRequests, 1);
 * ```
 */
export function createFileTokenStore(
  options: FileTokenStoreOptions,
): FileTokenStore {
  const context = "Cannot create file token store";
  // Said at once: elsewhere a get would find nothing and a set throw, a token spent per process.
  const rule =
    "is kept with Deno's file API (this store runs on Deno only; elsewhere use createMemoryTokenStore for one process, or createRedisTokenStore from ./redis for a fleet)";
  requireDeno(context, "folder", rule);
  // A key may be the secret: not shown, as a value would not be.
  const secret = fieldsOf(options)?.clientSecret;
  secretOutOfChecks(secret, () => {
    requireKnownOptions(options, FILE_OPTIONS, context);
  });
  return new EncryptedFileStore({
    folder: requireText(options.folder, context, "folder"),
    clientSecret: requireText(options.clientSecret, context, "clientSecret"),
    onNotice: requireFunction(options.onNotice, context, "onNotice") ??
      (() => {}),
    now: requireFunction(options.now, context, "now") ?? Date.now,
  });
}

/**
 * Removes every token file of a {@linkcode createFileTokenStore} folder, whatever secret sealed it (e.g. a tool's
 * `logout`); a missing folder holds none.
 * @returns How many files were removed.
 * @throws {TypeError} Outside Deno, or for a `folder` that is no non-empty string (`option: "folder"`), before any read.
 *
 * @example Forgetting every token
 * ```ts
 * import { clearFileTokenStore, createFileTokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const folder = ".test-tmp/doc-file-store-clear";
 * const store = createFileTokenStore({ folder, clientSecret: api.credentials.clientSecret });
 * await createTokenProvider({ ...api.environment, ...api.credentials, store }).getToken();
 * equal(await clearFileTokenStore(folder), 1);
 * equal(await clearFileTokenStore(folder), 0);
 * ```
 */
export async function clearFileTokenStore(folder: string): Promise<number> {
  const rule =
    "is read with Deno's file API (the file token store runs on Deno only; elsewhere none can have been written)";
  const context = "Cannot clear file token store";
  requireDeno(context, "folder", rule);
  // The folder createFileTokenStore takes: another value (a URL, its options) reported 0 and left the tokens.
  requireText(folder, context, "folder");
  let removed = 0;
  const notFound = (error: unknown) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  };
  try {
    for await (const entry of Deno.readDir(folder)) {
      if (!entry.isFile || !entry.name.endsWith(".token")) continue;
      // One another process removed meanwhile is not counted.
      await Deno.remove(`${folder}/${entry.name}`).then(() => removed++)
        .catch(notFound);
    }
  } catch (error) {
    notFound(error); // no folder: none
  }
  return removed;
}

/** A token file is a few hundred bytes; anything larger is not ours. */
const MAX_FILE = 64 * 1024;
/** How often a process waiting for another's token request looks again, in ms. */
const LOCK_POLL = 50;
/** Slack on top of a token request's budget before a waiting process requests alone, in ms. */
const LOCK_SLACK = 5_000;
/** A lock not refreshed for this long is a dead process's, in ms (its PID would need --allow-run). */
const LOCK_STALE = 5_000;

/** One file per store key, sealed (AES-GCM) under a key derived from the secret. */
class EncryptedFileStore implements FileTokenStore {
  readonly folder: string;
  readonly #options: Required<FileTokenStoreOptions>;
  /** The file's key, derived from the secret under the CLI's name for it (older files still open). */
  readonly #key: (key: string) => Promise<CryptoKey>;
  readonly #judge: (path: string, lock: LockSighting) => boolean;
  /** The files found damaged, each said once. */
  readonly #damaged = new Set<string>();

  constructor(options: Required<FileTokenStoreOptions>) {
    this.folder = options.folder;
    this.#options = options;
    this.#judge = staleJudge(options.now, LOCK_STALE);
    this.#key = perKey((key) =>
      aesKeyFrom(options.clientSecret, "partner-api cli token cache v1", key)
    );
  }

  async get(key: string): Promise<TokenRecord | undefined> {
    const path = await this.#path(key);
    const sealed = await this.#read(path);
    if (sealed === undefined) return undefined;
    const record = await openRecord(await this.#key(key), key, {
      iv: sealed.slice(0, 12),
      sealed: sealed.slice(12),
    });
    // Said once, not kept silent: it costs a token request. Its name holds the secret's digest, so another secret's
    // file is never read here.
    if (record === undefined && !this.#damaged.has(path)) {
      this.#damaged.add(path);
      this.#options.onNotice(
        `ignoring ${path}: not a token record this store can open (damaged, or of another version)`,
      );
    }
    return record;
  }

  async set(key: string, record: TokenRecord): Promise<void> {
    const { iv, sealed } = await sealRecord(await this.#key(key), key, record);
    const path = await this.#path(key);
    // Written whole, then renamed: a process killed midway leaves the old file.
    const partial = `${path}.${crypto.randomUUID()}.partial`;
    try {
      await Deno.mkdir(this.folder, { recursive: true, mode: 0o700 });
      const bytes = new Uint8Array([...iv, ...sealed]);
      await Deno.writeFile(partial, bytes, { mode: 0o600 });
      await Deno.rename(partial, path);
    } catch (error) {
      await Deno.remove(partial).catch(() => {});
      const { name } = error as Error;
      this.#options.onNotice(
        `could not write the token cache in ${this.folder} (${name}): the next run will need a new token`,
      );
    }
  }

  async coordinate(
    key: string,
    { settled, request, signal, requestBudget }: CoordinateOptions,
  ): Promise<TokenRecord> {
    const lock = `${await this.#path(key)}.lock`;
    const read = () => this.get(key);
    const requestAndWrite = async (before: TokenRecord | undefined) => {
      const record = await published(await request(), before, read);
      await this.set(key, record);
      return record;
    };
    const steady = steadyClock(this.#options.now);
    const giveUpAt = steady() + requestBudget + LOCK_SLACK;
    while (true) {
      const record = await this.get(key);
      if (record !== undefined && settled(record)) return record;
      const locked = await this.#lock(lock);
      if (typeof locked === "object") {
        try {
          // Another process may have written between the read and the lock.
          const again = await this.get(key);
          if (again !== undefined && settled(again)) return again;
          return await requestAndWrite(again);
        } finally {
          locked.release();
        }
      }
      if (locked === "unlockable" || steady() >= giveUpAt) {
        return await requestAndWrite(record);
      }
      await delay(LOCK_POLL, signal);
    }
  }

  async recordFor(client: Client) {
    return await this.get(await this.#keyOf(client));
  }

  async forget(client: Client) {
    const path = await this.#path(await this.#keyOf(client));
    return await Deno.remove(path).then(() => true, (error) => {
      if (error instanceof Deno.errors.NotFound) return false;
      throw error;
    });
  }

  #keyOf({ tokenUrl, audience, clientId }: Client) {
    const secret = this.#options.clientSecret, url = new URL(tokenUrl);
    return storeKey({ url, audience, clientId, secret });
  }

  /** Takes the lock file (refreshed while held), or says it is `"held"` or `"unlockable"`. */
  async #lock(path: string) {
    try {
      await Deno.mkdir(this.folder, { recursive: true, mode: 0o700 });
    } catch {
      return "unlockable";
    }
    // Stamped by `now` in its content and at once in its mtime, as each refresh stamps it: the file system's clock may
    // be another, and a lock read before its utime was taken as stale by processes whose `now` runs ahead.
    const at = this.#options.now();
    const id = crypto.randomUUID();
    const owner = JSON.stringify({ pid: Deno.pid, id, at });
    try {
      await Deno.writeTextFile(path, owner, { createNew: true, mode: 0o600 });
      await Deno.utime(path, new Date(at), new Date(at)).catch(() => {});
      return holdLock(path, owner, this.#options.now);
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) return "unlockable";
    }
    if (await this.#stale(path)) await this.#removeStale(path, owner);
    return "held";
  }

  /**
   * Removes a dead process's lock, so that it blocks no later one, under a guard file created exclusively and after a
   * look again: two processes never both remove it, and a fresh lock is never moved (then a third's was lost).
   */
  async #removeStale(path: string, owner: string) {
    const seen = await lockText(path);
    const guard = `${path}.takeover`;
    try {
      await Deno.writeTextFile(guard, owner, { createNew: true, mode: 0o600 });
    } catch {
      // Another process removes it; a guard its process left when it died goes once stale, if still the one judged.
      const left = await lockText(guard);
      if (left !== undefined && await this.#stale(guard)) {
        if (await lockText(guard) === left) {
          await Deno.remove(guard).catch(() => {});
        }
      }
      return;
    }
    try {
      const now = await lockText(path);
      if (now === seen && await this.#stale(path)) {
        await Deno.remove(path);
      }
    } catch {
      // Gone already: the next look takes the lock.
    } finally {
      await Deno.remove(guard).catch(() => {});
    }
  }

  /**
   * Whether the lock at `path` is a dead process's (see staleJudge), stamped by its content's `at` or its mtime, the
   * later. One read empty is being written: fresh until seen unchanged {@linkcode LOCK_STALE} ms.
   */
  async #stale(path: string): Promise<boolean> {
    const info = await Deno.lstat(path).catch(() => undefined);
    if (info === undefined) return false;
    // A lock that is not a small file reads as its stamp alone.
    const content = await lockText(path, info) ?? "";
    const stamp = info.isFile && content === "" ? Infinity : stampOf(content);
    const mtime = Math.max(info.mtime?.getTime() ?? 0, stamp);
    return this.#judge(path, { owner: content, refreshedAt: mtime });
  }

  /** The file's bytes, if it is a regular file of at most 64 KiB (a FIFO would hang the process). */
  async #read(path: string): Promise<Uint8Array<ArrayBuffer> | undefined> {
    try {
      const info = await Deno.lstat(path);
      if (!info.isFile || info.size > MAX_FILE) {
        this.#options.onNotice(
          `ignoring ${path}: not a regular file of at most ${MAX_FILE} bytes`,
        );
        return undefined;
      }
      using file = await Deno.open(path, { read: true });
      const buffer = new Uint8Array(MAX_FILE + 1);
      let size = 0;
      while (size <= MAX_FILE) {
        const read = await file.read(buffer.subarray(size));
        if (read === null) break;
        size += read;
      }
      return size > MAX_FILE ? undefined : buffer.slice(0, size);
    } catch {
      return undefined; // none yet, or unreadable: as if absent
    }
  }

  async #path(key: string): Promise<string> {
    return `${this.folder}/${await hexDigest(key, 16)}.token`;
  }
}
