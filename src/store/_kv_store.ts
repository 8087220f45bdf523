// Internal: the KV token store behind createKvTokenStore. Records rest under
// [...prefix, key, "record"], leases under [...prefix, key, "lease"].

import type { IssuedToken } from "../token/mod.ts";
import type {
  CoordinateOptions,
  TokenRecord,
  TokenStore,
} from "../store/mod.ts";
import { delay } from "../core/_retry.ts";
import { unrefTimer } from "../core/_abort.ts";

/** The checked options of a {@linkcode KvTokenStore}. */
export interface KvStoreConfig {
  readonly prefix: readonly (string | number)[];
  readonly leaseDuration: number;
  readonly maxWait: number;
  readonly pollInterval: number;
  readonly encryptionKey: CryptoKey | undefined;
  readonly holder: string;
  readonly now: () => number;
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

const MIN_RECORD_LIFETIME = 1000;
/** KV refuses an `expireIn` beyond this (about 68 years); a year is plenty. */
const MAX_RECORD_LIFETIME = 366 * 86_400_000;
const LOCKED_RETRIES = 100;
const encoder = new TextEncoder();

/** A {@linkcode TokenStore} on Deno KV that coordinates a fleet with leases. */
export class KvTokenStore implements TokenStore {
  readonly #kv: Deno.Kv;
  readonly #config: KvStoreConfig;

  constructor(kv: Deno.Kv, config: KvStoreConfig) {
    this.#kv = kv;
    this.#config = config;
  }

  async get(key: string): Promise<TokenRecord | undefined> {
    const entry = await unlocked(() =>
      this.#kv.get<Stored>(recordKey(this.#config, key))
    );
    return await this.#unseal(key, entry.value);
  }

  async set(key: string, record: TokenRecord): Promise<void> {
    const sealed = await this.#seal(key, record);
    await unlocked(() =>
      this.#kv.set(recordKey(this.#config, key), sealed, {
        expireIn: recordLifetime(record, this.#config.now()),
      })
    );
  }

  /** Drops the token only if it is still `accessToken`: a fresher one stays. */
  async discard(key: string, accessToken: string): Promise<void> {
    for (let attempt = 0; attempt < LOCKED_RETRIES; attempt++) {
      const entry = await unlocked(() =>
        this.#kv.get<Stored>(recordKey(this.#config, key))
      );
      const record = await this.#unseal(key, entry.value);
      if (record?.token?.accessToken !== accessToken) return;
      const { token: _dropped, ...rest } = record;
      const sealed = await this.#seal(key, rest);
      const done = await unlocked(() =>
        this.#kv.atomic().check(entry).set(
          recordKey(this.#config, key),
          sealed,
          {
            expireIn: recordLifetime(rest, this.#config.now()),
          },
        ).commit()
      );
      if (done.ok) return;
    }
  }

  /**
   * Returns a record `settled` accepts, or takes the lease and requests; a
   * process that waits longer than `maxWait` (and than the holder's request
   * may take with its retries) requests on its own.
   */
  async coordinate(
    key: string,
    { settled, request, signal, requestBudget }: CoordinateOptions,
  ): Promise<TokenRecord> {
    const { now, maxWait, pollInterval } = this.#config;
    // Never give up on another process's request before it may have ended.
    const deadline = now() + Math.max(maxWait, requestBudget);
    while (true) {
      signal.throwIfAborted();
      // One consistent read of both, and a lease taken only if neither
      // changed since: otherwise a token published between two reads would
      // look missing, and be requested again.
      const [stored, lease] = await unlocked(
        () =>
          this.#kv.getMany<[Stored, Lease]>([
            recordKey(this.#config, key),
            leaseKey(this.#config, key),
          ]),
        signal,
      );
      const record = await this.#unseal(key, stored.value);
      if (record !== undefined && settled(record)) return record;
      if (lease.value === null || lease.value.until <= now()) {
        const taken = await this.#takeLease(key, stored, lease, signal);
        if (taken.ok) {
          return await this.#holdLease(
            key,
            taken.versionstamp,
            record,
            request,
          );
        }
        continue; // something changed: look again at once
      }
      if (now() >= deadline) {
        return await this.#requestAlone(key, record, request);
      }
      await delay(pollInterval, signal);
    }
  }

  #takeLease(
    key: string,
    stored: Deno.AtomicCheck,
    lease: Deno.AtomicCheck,
    signal: AbortSignal,
  ): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
    return unlocked(
      () =>
        this.#kv.atomic().check(stored).check(lease)
          .set(leaseKey(this.#config, key), this.#newLease(), {
            expireIn: this.#config.leaseDuration,
          })
          .commit(),
      signal,
    );
  }

  /** Requests while holding the lease; publishes the result as it lets go. */
  async #holdLease(
    key: string,
    versionstamp: string,
    before: TokenRecord | undefined,
    request: () => Promise<TokenRecord>,
  ): Promise<TokenRecord> {
    const renewal = this.#renewLease(key, versionstamp);
    let result: TokenRecord;
    try {
      result = await request();
    } catch (error) {
      renewal.stop();
      await this.#releaseLease(renewal.lease());
      throw error;
    } finally {
      renewal.stop();
    }
    const record = published(result, before);
    try {
      await this.#publish(key, renewal.lease(), record);
    } catch {
      // The token is paid for: hand it out, and let the others take over.
      await this.#releaseLease(renewal.lease());
    }
    return record;
  }

  async #requestAlone(
    key: string,
    before: TokenRecord | undefined,
    request: () => Promise<TokenRecord>,
  ): Promise<TokenRecord> {
    const result = published(await request(), before);
    // A failing write must not lose the token just paid for.
    await this.set(key, result).catch(() => {});
    return result;
  }

  /** Writes the record and releases the lease in one atomic step. */
  async #publish(
    key: string,
    lease: Deno.AtomicCheck,
    record: TokenRecord,
  ): Promise<void> {
    const sealed = await this.#seal(key, record);
    const done = await unlocked(() =>
      this.#kv.atomic().check(lease)
        .set(recordKey(this.#config, key), sealed, {
          expireIn: recordLifetime(record, this.#config.now()),
        })
        .delete(lease.key)
        .commit()
    );
    if (done.ok) return;
    // The lease was lost (the process stalled): publish only what is newer.
    const stored = await this.get(key);
    const newer = (stored?.token?.expiresAt ?? -Infinity) >=
      (record.token?.expiresAt ?? -Infinity);
    if (!newer) await this.set(key, record);
  }

  /**
   * Keeps the lease while a request runs, so that a slow token endpoint does
   * not let another process take over; a holder that dies stops renewing and
   * its lease runs out within `leaseDuration`.
   */
  #renewLease(key: string, versionstamp: string) {
    const { leaseDuration } = this.#config;
    let current = versionstamp;
    const timer = setInterval(async () => {
      const renewed = await this.#kv.atomic()
        .check({ key: leaseKey(this.#config, key), versionstamp: current })
        .set(leaseKey(this.#config, key), this.#newLease(), {
          expireIn: leaseDuration,
        })
        .commit()
        .catch(() => undefined); // a locked database: the next tick renews
      if (renewed?.ok) current = renewed.versionstamp;
    }, Math.max(1, Math.floor(leaseDuration / 3)));
    // The renewal must never keep a process alive.
    unrefTimer(timer);
    return {
      lease: () => ({
        key: leaseKey(this.#config, key),
        versionstamp: current,
      }),
      stop: () => clearInterval(timer),
    };
  }

  async #releaseLease(lease: Deno.AtomicCheck): Promise<void> {
    await unlocked(() =>
      this.#kv.atomic().check(lease).delete(lease.key).commit()
    ).catch(() => {}); // unreleased, it runs out within leaseDuration
  }

  #newLease(): Lease {
    const { holder, leaseDuration, now } = this.#config;
    return { holder, until: now() + leaseDuration };
  }

  async #seal(key: string, record: TokenRecord): Promise<Stored> {
    const plain = plainRecord(record);
    const encryptionKey = this.#config.encryptionKey;
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

  async #unseal(
    key: string,
    stored: Stored | null,
  ): Promise<TokenRecord | undefined> {
    const encryptionKey = this.#config.encryptionKey;
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
}

function recordKey(config: KvStoreConfig, key: string): Deno.KvKey {
  return [...config.prefix, key, "record"];
}

function leaseKey(config: KvStoreConfig, key: string): Deno.KvKey {
  return [...config.prefix, key, "lease"];
}

/** What to store after a request: a block keeps a token that is still valid. */
function published(
  result: TokenRecord,
  before: TokenRecord | undefined,
): TokenRecord {
  if (result.token !== undefined || before?.token === undefined) return result;
  return { ...result, token: before.token };
}

/** Keeps a record until its token expires or its block ends, whichever is later. */
function recordLifetime(record: TokenRecord, now: number): number {
  const end = Math.max(record.token?.expiresAt ?? 0, record.blockedUntil ?? 0);
  return Math.min(
    MAX_RECORD_LIFETIME,
    Math.max(MIN_RECORD_LIFETIME, Math.ceil(end - now)),
  );
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

function isLocked(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
}
