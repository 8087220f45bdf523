/**
 * A token store on Deno KV, so that a fleet of processes or isolates shares
 * one token and one quota circuit: whoever needs a new token takes a lease
 * (an atomic check-and-set), requests it and publishes it; the others wait
 * for it instead of spending the quota. Locally KV is a SQLite file; on Deno
 * Deploy it is replicated. Needs `--unstable-kv` (or `"unstable": ["kv"]`).
 *
 * Tokens rest in KV as your own data, readable by whoever can read the
 * database; pass an AES-GCM `encryptionKey` to keep them encrypted at rest.
 *
 * @example One token for two providers of different processes
 * ```ts
 * import { createKvTokenStore } from "@partner-api/client/kv";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi();
 * using kv = await Deno.openKv(":memory:");
 * const options = { ...api.environment, ...api.credentials, store: createKvTokenStore(kv) };
 * // Two providers stand for two processes: they share the KV database.
 * const [a, b] = await Promise.all([
 *   createTokenProvider(options).getToken(),
 *   createTokenProvider(options).getToken(),
 * ]);
 * if (a.accessToken !== b.accessToken || api.tokenRequests !== 1) throw new Error();
 * ```
 *
 * @module
 */

import type {
  CoordinateOptions,
  IssuedToken,
  TokenRecord,
  TokenStore,
} from "./token.ts";
import { checkNumber, requireFunction } from "./_check.ts";
import { delay } from "./_retry.ts";
import { unrefTimer } from "./_abort.ts";

/**
 * Options of {@linkcode createKvTokenStore}.
 *
 * @example Short leases for a fleet of short-lived functions
 * ```ts
 * import type { KvTokenStoreOptions } from "@partner-api/client/kv";
 *
 * const options: KvTokenStoreOptions = { prefix: ["my-app", "tokens"], leaseDuration: 5000, maxWait: 20_000 };
 * if (options.leaseDuration !== 5000) throw new Error();
 * ```
 */
export interface KvTokenStoreOptions {
  /**
   * The first parts of every key the store writes.
   *
   * @default {["partner-api", "token"]}
   */
  prefix?: readonly (string | number)[];
  /**
   * How long a lease lasts without renewal, in ms. The holder renews it while
   * its request runs; a holder that dies blocks the others this long at most.
   *
   * @default {10000}
   */
  leaseDuration?: number;
  /**
   * How long a process waits for another's token, in ms, before it sends a
   * request of its own (a token endpoint that takes this long is stuck).
   *
   * @default {45000}
   */
  maxWait?: number;
  /**
   * How often a waiting process looks for the token, in ms.
   *
   * @default {50}
   */
  pollInterval?: number;
  /**
   * An AES-GCM key (`crypto.subtle.generateKey({ name: "AES-GCM", length:
   * 256 }, false, ["encrypt", "decrypt"])`) to encrypt records at rest.
   * Every process of the fleet needs the same key; a record it cannot
   * decrypt counts as absent.
   */
  encryptionKey?: CryptoKey;
  /**
   * Names this process in the leases it takes, e.g. a host name and pid, so
   * that an operator can see who holds one.
   *
   * @default {a random UUID}
   */
  holderId?: string;
  /**
   * The clock for lease and record deadlines, in epoch ms. Give it the same
   * clock as the providers that use the store.
   *
   * @default {Date.now}
   */
  now?: () => number;
}

/** A lease: who holds it and until when (KV's own expiry is not prompt). */
interface Lease {
  readonly holder: string;
  readonly until: number;
}

/** A record as it rests in KV: plain, or sealed with AES-GCM. */
type Stored =
  | { readonly plain: TokenRecord }
  | {
    readonly iv: Uint8Array<ArrayBuffer>;
    readonly sealed: Uint8Array<ArrayBuffer>;
  };

const CONTEXT = "Cannot create KV token store";
const MIN_RECORD_LIFETIME = 1000;

const LOCKED_RETRIES = 100;

function isLocked(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
}

/**
 * Runs a KV operation again while a local (SQLite) database reports that
 * another process holds its write lock: that passes within milliseconds.
 */
async function unlocked<T>(
  operation: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  for (let attempt = 0;; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (!isLocked(error) || attempt >= LOCKED_RETRIES) throw error;
      await delay(2 + Math.random() * 10, signal);
    }
  }
}

/** A copy with data properties only, which KV can store. */
function plainRecord(record: TokenRecord): TokenRecord {
  const token: IssuedToken | undefined = record.token && {
    accessToken: record.token.accessToken,
    tokenType: record.token.tokenType,
    expiresIn: record.token.expiresIn,
    expiresAt: record.token.expiresAt,
    quota: record.token.quota.map((bucket) => ({ ...bucket })),
  };
  return {
    ...(token === undefined ? {} : { token }),
    ...(record.quota === undefined ? {} : {
      quota: {
        buckets: record.quota.buckets.map((bucket) => ({ ...bucket })),
        observedAt: record.quota.observedAt,
      },
    }),
    ...(record.blockedUntil === undefined
      ? {}
      : { blockedUntil: record.blockedUntil }),
  };
}

/** KV refuses an `expireIn` beyond this (about 68 years); a year is plenty. */
const MAX_RECORD_LIFETIME = 366 * 86_400_000;

/** Keeps a record until its token expires or its block ends, whichever is later. */
function recordLifetime(record: TokenRecord, now: number): number {
  const end = Math.max(
    record.token?.expiresAt ?? 0,
    record.blockedUntil ?? 0,
  );
  return Math.min(
    MAX_RECORD_LIFETIME,
    Math.max(MIN_RECORD_LIFETIME, Math.ceil(end - now)),
  );
}

function checkKey(key: CryptoKey | undefined): void {
  if (key === undefined) return;
  if (
    !(key instanceof CryptoKey) || key.algorithm.name !== "AES-GCM" ||
    !key.usages.includes("encrypt") || !key.usages.includes("decrypt")
  ) {
    throw new TypeError(
      `${CONTEXT}: 'encryptionKey' must be an AES-GCM CryptoKey for encrypt and decrypt`,
    );
  }
}

/**
 * Creates a {@linkcode TokenStore} on a Deno KV database, for
 * `createTokenProvider({ ..., store })`. Processes that share the database
 * share the token, the last quota seen and the quota circuit:
 *
 * - when the token is missing or due for refresh, one process takes a lease
 *   with `kv.atomic().check()`, requests the token and writes it (with
 *   `expireIn`) in the same atomic step that releases the lease;
 * - the others poll for it instead of asking the token endpoint; a lease
 *   whose holder died runs out and another process takes over; a process
 *   that waits longer than `maxWait` sends its own request;
 * - after a 429 the block is stored, and no process asks before it ends.
 *
 * Keys hold the token endpoint, audience, client id and a digest of the
 * secret, never the secret. A store that fails while publishing (a value too
 * large, a closed database) still hands out the token just received and
 * releases its lease: its failure never costs another token.
 *
 * Deno only: it needs `Deno.Kv`; elsewhere it throws a `TypeError` at once.
 *
 * @param kv An open KV database, e.g. `await Deno.openKv()`.
 * @param options Key prefix, lease length, waiting, encryption.
 * @returns The store.
 * @throws {RangeError} When a duration is out of range.
 * @throws {TypeError} When `encryptionKey` is not an AES-GCM key, or outside Deno.
 *
 * @example Encrypting tokens at rest
 * ```ts
 * import { createKvTokenStore } from "@partner-api/client/kv";
 *
 * using kv = await Deno.openKv(":memory:");
 * const encryptionKey = await crypto.subtle.generateKey(
 *   { name: "AES-GCM", length: 256 },
 *   false,
 *   ["encrypt", "decrypt"],
 * );
 * const store = createKvTokenStore(kv, { encryptionKey, leaseDuration: 10_000 });
 * await store.set("client", { blockedUntil: Date.now() + 60_000 });
 * if ((await store.get("client"))?.blockedUntil === undefined) throw new Error();
 * ```
 */
export function createKvTokenStore(
  kv: Deno.Kv,
  options: KvTokenStoreOptions = {},
): TokenStore {
  if (!("Deno" in globalThis) || typeof kv?.atomic !== "function") {
    throw new TypeError(
      `${CONTEXT}: Deno KV is needed (this store runs on Deno and Deno Deploy only); elsewhere pass a TokenStore of your own`,
    );
  }
  const now = requireFunction(options.now, CONTEXT, "now") ?? Date.now;
  const prefix = [...(options.prefix ?? ["partner-api", "token"])];
  const leaseDuration = checkNumber(
    options.leaseDuration,
    10_000,
    "positive integer",
    CONTEXT,
    "leaseDuration",
  );
  const maxWait = checkNumber(
    options.maxWait,
    45_000,
    "non-negative integer",
    CONTEXT,
    "maxWait",
  );
  const pollInterval = checkNumber(
    options.pollInterval,
    50,
    "positive integer",
    CONTEXT,
    "pollInterval",
  );
  const encryptionKey = options.encryptionKey;
  checkKey(encryptionKey);
  const holder = options.holderId ?? crypto.randomUUID();
  const encoder = new TextEncoder();

  const recordKey = (key: string): Deno.KvKey => [...prefix, key, "record"];
  const leaseKey = (key: string): Deno.KvKey => [...prefix, key, "lease"];

  async function seal(key: string, record: TokenRecord): Promise<Stored> {
    const plain = plainRecord(record);
    if (encryptionKey === undefined) return { plain };
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = await crypto.subtle.encrypt(
      // The key is bound in, so a record cannot be replayed under another.
      { name: "AES-GCM", iv, additionalData: encoder.encode(key) },
      encryptionKey,
      encoder.encode(JSON.stringify(plain)),
    );
    return { iv, sealed: new Uint8Array(sealed) };
  }

  async function unseal(
    key: string,
    stored: Stored | null,
  ): Promise<TokenRecord | undefined> {
    if (stored === null) return undefined;
    if ("plain" in stored) return encryptionKey ? undefined : stored.plain;
    if (encryptionKey === undefined) return undefined;
    try {
      const plain = await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: stored.iv, additionalData: encoder.encode(key) },
        encryptionKey,
        stored.sealed,
      );
      return JSON.parse(new TextDecoder().decode(plain));
    } catch {
      return undefined; // another key, or tampered with: as if absent
    }
  }

  async function read(key: string): Promise<TokenRecord | undefined> {
    const entry = await unlocked(() => kv.get<Stored>(recordKey(key)));
    return await unseal(key, entry.value);
  }

  async function write(key: string, record: TokenRecord): Promise<void> {
    const sealed = await seal(key, record);
    await unlocked(() =>
      kv.set(recordKey(key), sealed, {
        expireIn: recordLifetime(record, now()),
      })
    );
  }

  /** What to store after a request: a block keeps a token that is still valid. */
  function published(
    result: TokenRecord,
    before: TokenRecord | undefined,
  ): TokenRecord {
    if (result.token !== undefined || before?.token === undefined) {
      return result;
    }
    return { ...result, token: before.token };
  }

  /**
   * Keeps the lease while `request` runs, so that a slow token endpoint does
   * not let another process take over; a holder that dies stops renewing and
   * its lease runs out within `leaseDuration`.
   */
  function newLease(): Lease {
    return { holder, until: now() + leaseDuration };
  }

  function renewLease(key: string, versionstamp: string) {
    let current = versionstamp;
    const timer = setInterval(async () => {
      const renewed = await kv.atomic()
        .check({ key: leaseKey(key), versionstamp: current })
        .set(leaseKey(key), newLease(), { expireIn: leaseDuration })
        .commit()
        .catch(() => undefined); // a locked database: the next tick renews
      if (renewed?.ok) current = renewed.versionstamp;
    }, Math.max(1, Math.floor(leaseDuration / 3)));
    // The renewal must never keep a process alive.
    unrefTimer(timer);
    return {
      lease: () => ({ key: leaseKey(key), versionstamp: current }),
      stop: () => clearInterval(timer),
    };
  }

  async function releaseLease(lease: Deno.AtomicCheck): Promise<void> {
    await unlocked(() => kv.atomic().check(lease).delete(lease.key).commit())
      .catch(() => {}); // unreleased, it runs out within leaseDuration
  }

  async function holdLease(
    key: string,
    versionstamp: string,
    before: TokenRecord | undefined,
    request: () => Promise<TokenRecord>,
  ): Promise<TokenRecord> {
    const renewal = renewLease(key, versionstamp);
    let result: TokenRecord;
    try {
      result = await request();
    } catch (error) {
      renewal.stop();
      await releaseLease(renewal.lease());
      throw error;
    } finally {
      renewal.stop();
    }
    const record = published(result, before);
    try {
      await publish(key, renewal.lease(), record);
    } catch {
      // The token is paid for: hand it out, and let the others take over.
      await releaseLease(renewal.lease());
    }
    return record;
  }

  /** Writes the record and releases the lease in one atomic step. */
  async function publish(
    key: string,
    lease: Deno.AtomicCheck,
    record: TokenRecord,
  ): Promise<void> {
    const sealed = await seal(key, record);
    const done = await unlocked(() =>
      kv.atomic().check(lease)
        .set(recordKey(key), sealed, {
          expireIn: recordLifetime(record, now()),
        })
        .delete(lease.key)
        .commit()
    );
    if (done.ok) return;
    // The lease was lost (the process stalled): publish only what is newer.
    const stored = await read(key);
    const newer = (stored?.token?.expiresAt ?? -Infinity) >=
      (record.token?.expiresAt ?? -Infinity);
    if (!newer) await write(key, record);
  }

  async function coordinate(
    key: string,
    { settled, request, signal }: CoordinateOptions,
  ): Promise<TokenRecord> {
    const deadline = now() + maxWait;
    while (true) {
      signal.throwIfAborted();
      // One consistent read of both, and a lease taken only if neither
      // changed since: otherwise a token published between two reads would
      // look missing, and be requested again.
      const [stored, lease] = await unlocked(
        () => kv.getMany<[Stored, Lease]>([recordKey(key), leaseKey(key)]),
        signal,
      );
      const record = await unseal(key, stored.value);
      if (record !== undefined && settled(record)) return record;
      if (lease.value === null || lease.value.until <= now()) {
        const taken = await unlocked(
          () =>
            kv.atomic().check(stored).check(lease)
              .set(leaseKey(key), newLease(), { expireIn: leaseDuration })
              .commit(),
          signal,
        );
        if (taken.ok) {
          return await holdLease(key, taken.versionstamp, record, request);
        }
        continue; // something changed: look again at once
      }
      if (now() >= deadline) {
        const result = published(await request(), record);
        // A failing write must not lose the token just paid for.
        await write(key, result).catch(() => {});
        return result;
      }
      await delay(pollInterval, signal);
    }
  }

  /** Drops the token only if it is still `accessToken`: a fresher one stays. */
  async function discard(key: string, accessToken: string): Promise<void> {
    for (let attempt = 0; attempt < LOCKED_RETRIES; attempt++) {
      const entry = await unlocked(() => kv.get<Stored>(recordKey(key)));
      const record = await unseal(key, entry.value);
      if (record?.token?.accessToken !== accessToken) return;
      const { token: _dropped, ...rest } = record;
      const sealed = await seal(key, rest);
      const done = await unlocked(() =>
        kv.atomic().check(entry).set(recordKey(key), sealed, {
          expireIn: recordLifetime(rest, now()),
        }).commit()
      );
      if (done.ok) return;
    }
  }

  return { get: read, set: write, discard, coordinate };
}
