// Internal: the command-line tool's token cache: a TokenStore on one
// encrypted file per client, so that repeated runs cost one token per token
// lifetime. A file on disk rather than Deno KV: it needs no --unstable-kv and
// no configuration, so it also works when the tool runs straight from the
// registry, where the package's deno.json does not apply.

import type {
  CoordinateOptions,
  TokenRecord,
  TokenStore,
} from "../store/mod.ts";
import { CACHE_VARIABLES } from "./_plan.ts";
import { delay } from "../core/_retry.ts";
import { unrefTimer } from "../core/_abort.ts";
import { openRecord, sealRecord } from "../store/_record.ts";
import { aesKeyFrom, hexDigest } from "../store/_key.ts";

/** The cache, or why there is none (one line for standard error). */
export type CacheOpening =
  | { readonly store: TokenStore; readonly notice?: undefined }
  | { readonly store?: undefined; readonly notice: string };

/** A cache file is a few hundred bytes; anything larger is not ours. */
const MAX_CACHE_FILE = 64 * 1024;
/** How often a run waiting for another's token request looks again, in ms. */
const LOCK_POLL = 50;
/** Slack on top of a token request's budget before a waiting run requests alone, in ms. */
const LOCK_SLACK = 5_000;
/** How often a run refreshes the lock it holds (its mtime), in ms. */
const LOCK_REFRESH = 1_000;
/**
 * A lock not refreshed for this long belongs to a run that is gone (killed,
 * crashed), in ms. Checking the owner's PID would need --allow-run, which
 * the tool does not ask for: the refresh says the owner lives instead.
 */
const LOCK_STALE = 5_000;

/**
 * Opens the cache folder for a client with `clientSecret`, if this process
 * may read and write it. Never prompts for a permission: a permission not
 * granted means running uncached, said once. Later problems (a file that is
 * not the cache's, a write that fails) go to `notify`, which says each once.
 */
export function openCache(
  clientSecret: string,
  notify: (line: string) => void = () => {},
): CacheOpening {
  const folder = cacheFolder();
  if (folder === undefined) {
    return {
      notice:
        `running without the token cache: set PARTNER_API_CACHE_DIR (or allow reading HOME) to keep the token between runs`,
    };
  }
  for (const name of ["read", "write"] as const) {
    if (
      Deno.permissions.querySync({ name, path: folder }).state !== "granted"
    ) {
      return {
        notice:
          `running without the token cache: no ${name} permission for ${folder} (add --allow-read=${folder} --allow-write=${folder})`,
      };
    }
  }
  return { store: new EncryptedFileStore(folder, clientSecret, notify) };
}

/** $PARTNER_API_CACHE_DIR, else $XDG_CACHE_HOME/partner-api, else $HOME/.cache/partner-api. */
function cacheFolder(): string | undefined {
  const [own, xdg, home] = CACHE_VARIABLES.map(readable);
  if (own) return own;
  if (xdg) return `${xdg}/partner-api`;
  if (home) return `${home}/.cache/partner-api`;
  return undefined;
}

function readable(variable: string): string | undefined {
  const allowed =
    Deno.permissions.querySync({ name: "env", variable }).state === "granted";
  return allowed ? Deno.env.get(variable) || undefined : undefined;
}

/**
 * One file per store key, sealed with AES-GCM under a key derived (HKDF) from
 * the client secret and bound to the store key: the file alone reveals
 * nothing, and a changed secret cannot read it (it starts afresh). Runs
 * that share the folder take a lock file around read, request and write,
 * so that concurrent runs spend one token.
 */
class EncryptedFileStore implements TokenStore {
  readonly #folder: string;
  readonly #secret: string;
  readonly #keys = new Map<string, Promise<CryptoKey>>();
  readonly #notify: (line: string) => void;

  constructor(folder: string, secret: string, notify: (line: string) => void) {
    this.#folder = folder;
    this.#secret = secret;
    this.#notify = notify;
  }

  async get(key: string): Promise<TokenRecord | undefined> {
    const sealed = await this.#read(await this.#path(key));
    if (sealed === undefined) return undefined;
    return await openRecord(await this.#key(key), key, {
      iv: sealed.slice(0, 12),
      sealed: sealed.slice(12),
    });
  }

  async set(key: string, record: TokenRecord): Promise<void> {
    const { iv, sealed } = await sealRecord(await this.#key(key), key, record);
    const path = await this.#path(key);
    // Written whole, then renamed: a run killed midway leaves the old file.
    const partial = `${path}.${crypto.randomUUID()}.partial`;
    try {
      await Deno.mkdir(this.#folder, { recursive: true, mode: 0o700 });
      await Deno.writeFile(partial, new Uint8Array([...iv, ...sealed]), {
        mode: 0o600,
      });
      await Deno.rename(partial, path);
    } catch (error) {
      await Deno.remove(partial).catch(() => {});
      this.#notify(
        `could not write the token cache in ${this.#folder} (${
          (error as Error).name
        }): the next run will need a new token`,
      );
    }
  }

  /**
   * Read, change, write: not atomic between runs, so two runs meeting a 401
   * in the same instant may each renew (runs one after another renew once).
   */
  async update(
    key: string,
    change: (record: TokenRecord | undefined) => TokenRecord | undefined,
  ): Promise<TokenRecord | undefined> {
    const record = await this.get(key);
    const next = change(record);
    if (next === undefined) return record;
    await this.set(key, next);
    return next;
  }

  /**
   * The cached record if it settles the need; else, holding the lock file,
   * the record of one request, written before the lock is let go. A run
   * that finds the lock waits for it (as long as a token request may take),
   * takes it over once its owner has stopped refreshing it, and requests
   * alone if it cannot lock.
   */
  async coordinate(
    key: string,
    { settled, request, signal, requestBudget }: CoordinateOptions,
  ): Promise<TokenRecord> {
    const lock = `${await this.#path(key)}.lock`;
    const giveUpAt = Date.now() + requestBudget + LOCK_SLACK;
    while (true) {
      const record = await this.get(key);
      if (record !== undefined && settled(record)) return record;
      const locked = await this.#lock(lock);
      if (typeof locked === "object") {
        try {
          // Another run may have written between the read and the lock.
          const again = await this.get(key);
          if (again !== undefined && settled(again)) return again;
          return await this.#requestAndWrite(key, request);
        } finally {
          locked.release();
        }
      }
      if (locked === "unlockable" || Date.now() >= giveUpAt) {
        return await this.#requestAndWrite(key, request);
      }
      await delay(LOCK_POLL, signal);
    }
  }

  async #requestAndWrite(
    key: string,
    request: () => Promise<TokenRecord>,
  ): Promise<TokenRecord> {
    const record = await request();
    await this.set(key, record);
    return record;
  }

  /**
   * Takes the lock file (its owner's PID inside, refreshed while held), or
   * says it is `"held"` by a live run, or `"unlockable"` (no folder to
   * write). A lock its owner stopped refreshing is removed, so the next
   * look takes it.
   */
  async #lock(path: string): Promise<HeldLock | "held" | "unlockable"> {
    try {
      await Deno.mkdir(this.#folder, { recursive: true, mode: 0o700 });
    } catch {
      return "unlockable";
    }
    const owner = JSON.stringify({ pid: Deno.pid, id: crypto.randomUUID() });
    try {
      await Deno.writeTextFile(path, owner, { createNew: true, mode: 0o600 });
      return holdLock(path, owner);
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) return "unlockable";
    }
    // A run that died holding the lock must not block every later run.
    const since = await Deno.lstat(path).then(
      (info) => Date.now() - (info.mtime?.getTime() ?? 0),
      () => 0,
    );
    if (since > LOCK_STALE) await removeStale(path);
    return "held";
  }

  /**
   * The cache file's bytes, if it is a regular file of at most 64 KiB: a
   * FIFO would hang the run, a device or a huge file would fill memory.
   * Anything else is ignored, with one notice.
   */
  async #read(path: string): Promise<Uint8Array<ArrayBuffer> | undefined> {
    try {
      const info = await Deno.lstat(path);
      if (!info.isFile || info.size > MAX_CACHE_FILE) {
        this.#notify(
          `ignoring ${path}: not a regular file of at most ${MAX_CACHE_FILE} bytes`,
        );
        return undefined;
      }
      using file = await Deno.open(path, { read: true });
      const buffer = new Uint8Array(MAX_CACHE_FILE + 1);
      let size = 0;
      while (size <= MAX_CACHE_FILE) {
        const read = await file.read(buffer.subarray(size));
        if (read === null) break;
        size += read;
      }
      return size > MAX_CACHE_FILE ? undefined : buffer.slice(0, size);
    } catch {
      return undefined; // none yet, or unreadable: as if absent
    }
  }

  async #path(key: string): Promise<string> {
    return `${this.#folder}/${await hexDigest(key, 16)}.token`;
  }

  /** The file's key, derived (HKDF) from the client secret, once per store key. */
  #key(key: string): Promise<CryptoKey> {
    let sealing = this.#keys.get(key);
    if (sealing === undefined) {
      sealing = aesKeyFrom(this.#secret, "partner-api cli token cache v1", key);
      this.#keys.set(key, sealing);
    }
    return sealing;
  }
}

/**
 * Removes every cached token of the cache folder (`cache clear`, `logout`);
 * returns the line that says what happened.
 */
export async function clearCache(): Promise<string> {
  const folder = cacheFolder();
  if (folder === undefined) return "no token cache: nothing to clear";
  if (
    Deno.permissions.querySync({ name: "write", path: folder }).state !==
      "granted"
  ) {
    return `cannot clear the token cache: no write permission for ${folder} (add --allow-read=${folder} --allow-write=${folder})`;
  }
  let removed = 0;
  try {
    for await (const entry of Deno.readDir(folder)) {
      if (!entry.isFile || !entry.name.endsWith(".token")) continue;
      await Deno.remove(`${folder}/${entry.name}`);
      removed++;
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return `removed ${removed} cached token${
    removed === 1 ? "" : "s"
  } from ${folder}`;
}

/** A lock file this run holds: refreshed until released. */
interface HeldLock {
  release(): void;
}

/**
 * Keeps the lock at `path` fresh (its mtime, every {@linkcode LOCK_REFRESH}
 * ms) until released, and removes it when the process exits first: Ctrl-C
 * ends the tool with `Deno.exit`, which skips every `finally` but fires
 * `unload`. Only a lock that still holds `owner` is removed.
 */
function holdLock(path: string, owner: string): HeldLock {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const refresh = () => {
    const next = setTimeout(async () => {
      const now = new Date();
      await Deno.utime(path, now, now).catch(() => {});
      if (timer === next) refresh();
    }, LOCK_REFRESH);
    timer = next;
    unrefTimer(next);
  };
  const onExit = () => removeOwnedSync(path, owner);
  globalThis.addEventListener("unload", onExit);
  refresh();
  return {
    release() {
      clearTimeout(timer);
      timer = undefined;
      globalThis.removeEventListener("unload", onExit);
      removeOwnedSync(path, owner);
    },
  };
}

/** Removes the lock at `path` if it is still `owner`'s (not taken over since). */
function removeOwnedSync(path: string, owner: string): void {
  try {
    if (Deno.readTextFileSync(path) === owner) Deno.removeSync(path);
  } catch {
    // Gone already, or unreadable: nothing of ours to remove.
  }
}

/**
 * Removes a stale lock, unless another run took it over meanwhile: moved
 * aside first (atomic), then put back if what was moved is fresh.
 */
async function removeStale(path: string): Promise<void> {
  const aside = `${path}.${crypto.randomUUID()}.stale`;
  try {
    await Deno.rename(path, aside);
    const info = await Deno.lstat(aside);
    if (Date.now() - (info.mtime?.getTime() ?? 0) <= LOCK_STALE) {
      await Deno.link(aside, path).catch(() => {});
    }
  } catch {
    // Another run removed it first.
  }
  await Deno.remove(aside).catch(() => {});
}
