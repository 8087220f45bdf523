// Internal: the KV token store behind createKvTokenStore. Records rest under
// [...prefix, key, "record"], leases under [...prefix, key, "lease"].

import type {
  CoordinateOptions,
  TokenRecord,
  TokenStore,
} from "../store/mod.ts";
import { delay } from "../core/_retry.ts";
import {
  openRecord,
  plainRecord,
  recordLifetime,
  type SealedRecord,
  sealRecord,
} from "./_record.ts";
import {
  coordinateByLease,
  type HeldLease,
  type LeaseDatabase,
  type LeaseTiming,
  type LeaseView,
} from "./_lease.ts";

/** The checked options of a {@linkcode KvTokenStore}. */
export interface KvStoreConfig extends LeaseTiming {
  readonly prefix: readonly (string | number)[];
  readonly encryptionKey: CryptoKey | undefined;
  readonly holder: string;
}

/** A lease: who holds it and until when (KV's own expiry is not prompt). */
interface Lease {
  readonly holder: string;
  readonly until: number;
}

/** A record as it rests in KV: plain, or sealed with AES-GCM. */
type Stored = { readonly plain: TokenRecord } | SealedRecord;

/** The two entries one look read, checked again when taking the lease. */
type Entries = readonly [Deno.AtomicCheck, Deno.AtomicCheck];

const LOCKED_RETRIES = 100;

/** A {@linkcode TokenStore} on Deno KV that coordinates a fleet with leases. */
export class KvTokenStore implements TokenStore, LeaseDatabase<Entries> {
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

  /** Compare-and-set on the entry's versionstamp: another process's write makes `change` run again. */
  async update(
    key: string,
    change: (record: TokenRecord | undefined) => TokenRecord | undefined,
  ): Promise<TokenRecord | undefined> {
    for (let attempt = 0; attempt < LOCKED_RETRIES; attempt++) {
      const entry = await unlocked(() =>
        this.#kv.get<Stored>(recordKey(this.#config, key))
      );
      const record = await this.#unseal(key, entry.value);
      const next = change(record);
      if (next === undefined) return record;
      const sealed = await this.#seal(key, next);
      const done = await unlocked(() =>
        this.#kv.atomic().check(entry).set(
          recordKey(this.#config, key),
          sealed,
          { expireIn: recordLifetime(next, this.#config.now()) },
        ).commit()
      );
      if (done.ok) return next;
    }
    throw new Error("Cannot update the token record: it keeps changing");
  }

  coordinate(key: string, options: CoordinateOptions): Promise<TokenRecord> {
    return coordinateByLease(this, this.#config, key, options);
  }

  /**
   * One consistent read of both, and a lease taken only if neither changed
   * since: otherwise a token published between two reads would look
   * missing, and be requested again.
   */
  async look(key: string, signal: AbortSignal): Promise<LeaseView<Entries>> {
    const [stored, lease] = await unlocked(
      () =>
        this.#kv.getMany<[Stored, unknown]>([
          recordKey(this.#config, key),
          leaseKey(this.#config, key),
        ]),
      signal,
    );
    return {
      record: await this.#unseal(key, stored.value),
      // A lease of any other shape is not one of ours: taking it replaces it.
      leaseFree: !isLease(lease.value) ||
        lease.value.until <= this.#config.now(),
      snapshot: [stored, lease],
    };
  }

  async take(
    key: string,
    [stored, lease]: Entries,
    signal: AbortSignal,
  ): Promise<HeldLease | undefined> {
    const taken = await unlocked(
      () =>
        this.#kv.atomic().check(stored).check(lease)
          .set(leaseKey(this.#config, key), this.#newLease(), {
            expireIn: this.#config.leaseDuration,
          })
          .commit(),
      signal,
    );
    return taken.ok ? this.#held(key, taken.versionstamp) : undefined;
  }

  /** The lease we took, known by the versionstamp of its last write. */
  #held(key: string, versionstamp: string): HeldLease {
    const lease = { key: leaseKey(this.#config, key), versionstamp };
    return {
      renew: async () => {
        const renewed = await this.#kv.atomic().check(lease)
          .set(lease.key, this.#newLease(), {
            expireIn: this.#config.leaseDuration,
          })
          .commit();
        if (renewed.ok) lease.versionstamp = renewed.versionstamp;
      },
      publish: async (record) => {
        const sealed = await this.#seal(key, record);
        const done = await unlocked(() =>
          this.#kv.atomic().check(lease)
            .set(recordKey(this.#config, key), sealed, {
              expireIn: recordLifetime(record, this.#config.now()),
            })
            .delete(lease.key)
            .commit()
        );
        return done.ok;
      },
      release: async () => {
        await unlocked(() =>
          this.#kv.atomic().check(lease).delete(lease.key).commit()
        );
      },
    };
  }

  #newLease(): Lease {
    const { holder, leaseDuration, now } = this.#config;
    return { holder, until: now() + leaseDuration };
  }

  async #seal(key: string, record: TokenRecord): Promise<Stored> {
    const encryptionKey = this.#config.encryptionKey;
    if (encryptionKey === undefined) return { plain: plainRecord(record) };
    return await sealRecord(encryptionKey, key, record);
  }

  async #unseal(
    key: string,
    stored: Stored | null,
  ): Promise<TokenRecord | undefined> {
    const encryptionKey = this.#config.encryptionKey;
    // Anything else under the key counts as absent, and the next write replaces it.
    if (typeof stored !== "object" || stored === null) return undefined;
    if ("plain" in stored) return encryptionKey ? undefined : stored.plain;
    if (encryptionKey === undefined) return undefined;
    if (
      !(stored.iv instanceof Uint8Array && stored.sealed instanceof Uint8Array)
    ) {
      return undefined;
    }
    return await openRecord(encryptionKey, key, stored);
  }
}

function isLease(value: unknown): value is Lease {
  return typeof value === "object" && value !== null &&
    typeof (value as Lease).until === "number";
}

function recordKey(config: KvStoreConfig, key: string): Deno.KvKey {
  return [...config.prefix, key, "record"];
}

function leaseKey(config: KvStoreConfig, key: string): Deno.KvKey {
  return [...config.prefix, key, "lease"];
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
