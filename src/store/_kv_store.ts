// Internal: the KV token store behind createKvTokenStore. Records rest under
// [...prefix, digest, "record"], leases under [...prefix, digest, "lease"],
// where digest is a SHA-256 digest of the store key: the key itself holds a
// part derived from the secret, from which the records' seal derives.

import type { CoordinateOptions, TokenRecord, TokenStore } from "./types.ts";
import type { FleetStoreOptions } from "./fleet_options.ts";
import { delay } from "../core/_deadlines.ts";
import {
  openVersioned,
  recordLifetime,
  recordSeals,
  RecordVersions,
  type SealedRecord,
  sealRecord,
} from "./_record.ts";
import { hexDigest } from "./_key.ts";
import {
  coordinateByLease,
  type HeldLease,
  type LeaseDatabase,
  type LeaseTiming,
  type LeaseView,
  type LostLease,
} from "./_lease.ts";

/** A take lost: KV cannot say to whom at no cost (look again). */
const LOST: LostLease = Object.freeze({});

/** The checked options of a {@linkcode KvTokenStore}. */
export interface KvStoreConfig extends LeaseTiming {
  readonly prefix: readonly (string | number)[];
  readonly encryptionKey: FleetStoreOptions["encryptionKey"];
  readonly holder: string;
}

/** A lease: who holds it and until when (KV's own expiry is not prompt). */
interface Lease {
  readonly holder: string;
  readonly until: number;
}

/** A record as it rests in KV: sealed with AES-GCM. */
type Stored = SealedRecord;

/** The KV keys of one client's record and lease. */
interface Names {
  readonly record: Deno.KvKey;
  readonly lease: Deno.KvKey;
}

/** The two entries one look read, checked again when taking the lease. */
type Entries = readonly [Deno.AtomicCheck, Deno.AtomicCheck];

const LOCKED_RETRIES = 100;

/** A {@linkcode TokenStore} on Deno KV that coordinates a fleet with leases. */
export class KvTokenStore implements TokenStore, LeaseDatabase<Entries> {
  readonly #kv: Deno.Kv;
  readonly #config: KvStoreConfig;
  readonly #seals: (key: string) => Promise<CryptoKey>;
  readonly #names = new Map<string, Promise<Names>>();
  readonly #versions = new RecordVersions();
  /** Per key, the last lease seen, and when (steady clock). */
  readonly #leasesSeen = new Map<
    string,
    { readonly lease: string; readonly at: number }
  >();

  constructor(kv: Deno.Kv, config: KvStoreConfig) {
    this.#kv = kv;
    this.#config = config;
    this.#seals = recordSeals(config.encryptionKey);
  }

  async get(key: string): Promise<TokenRecord | undefined> {
    const { record } = await this.#keysOf(key);
    const entry = await unlocked(() => this.#kv.get<Stored>(record));
    return await this.#unseal(key, entry.value);
  }

  async set(key: string, record: TokenRecord): Promise<void> {
    // Read first: the version written must be newer than the one stored.
    await this.get(key).catch(() => {});
    const sealed = await this.#seal(key, record);
    const names = await this.#keysOf(key);
    await unlocked(() =>
      this.#kv.set(names.record, sealed, {
        expireIn: recordLifetime(record, this.#config.now()),
      })
    );
  }

  /** Compare-and-set on the entry's versionstamp: another process's write makes `change` run again. */
  async update(
    key: string,
    change: (record: TokenRecord | undefined) => TokenRecord | undefined,
  ): Promise<TokenRecord | undefined> {
    const names = await this.#keysOf(key);
    for (let attempt = 0; attempt < LOCKED_RETRIES; attempt++) {
      const entry = await unlocked(() => this.#kv.get<Stored>(names.record));
      const record = await this.#unseal(key, entry.value);
      const next = change(record);
      if (next === undefined) return record;
      const sealed = await this.#seal(key, next);
      const done = await unlocked(() =>
        this.#kv.atomic().check(entry).set(
          names.record,
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
    const names = await this.#keysOf(key);
    const [stored, lease] = await unlocked(
      () => this.#kv.getMany<[Stored, unknown]>([names.record, names.lease]),
      signal,
    );
    return {
      record: await this.#unseal(key, stored.value),
      // A lease of any other shape is not one of ours: taking it replaces it.
      leaseFree: !isLease(lease.value) || this.#leaseOver(key, lease.value),
      snapshot: [stored, lease],
    };
  }

  async take(
    key: string,
    [stored, lease]: Entries,
    signal: AbortSignal,
  ): Promise<HeldLease | LostLease> {
    const names = await this.#keysOf(key);
    const taken = await unlocked(
      () =>
        this.#kv.atomic().check(stored).check(lease)
          .set(names.lease, this.#newLease(), {
            expireIn: this.#config.leaseDuration,
          })
          .commit(),
      signal,
    );
    return taken.ok ? this.#held(key, names, taken.versionstamp) : LOST;
  }

  /** The lease we took, known by the versionstamp of its last write. */
  #held(key: string, names: Names, versionstamp: string): HeldLease {
    const lease = { key: names.lease, versionstamp };
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
            .set(names.record, sealed, {
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

  /** Where `key`'s record and lease rest: under a digest of the key, which holds a secret part. */
  #keysOf(key: string): Promise<Names> {
    let names = this.#names.get(key);
    if (names === undefined) {
      const { prefix } = this.#config;
      names = hexDigest(key, 16).then((digest) => ({
        record: [...prefix, digest, "record"],
        lease: [...prefix, digest, "lease"],
      }));
      this.#names.set(key, names);
    }
    return names;
  }

  /**
   * Whether a lease is over: its time is up by this process's clock, or it
   * has been seen unchanged (not renewed) for a whole lease. A clock stepped
   * back (or a holder's clock ahead) cannot make a dead holder's lease hold
   * the fleet for the hours the clocks differ.
   */
  #leaseOver(key: string, lease: Lease): boolean {
    const { now, steady, leaseDuration } = this.#config;
    if (lease.until <= now()) return true;
    const seen = `${lease.holder} ${lease.until}`;
    let sighting = this.#leasesSeen.get(key);
    if (sighting?.lease !== seen) {
      sighting = { lease: seen, at: steady() };
      this.#leasesSeen.set(key, sighting);
    }
    return steady() - sighting.at >= leaseDuration;
  }

  #newLease(): Lease {
    const { holder, leaseDuration, now } = this.#config;
    return { holder, until: now() + leaseDuration };
  }

  async #seal(key: string, record: TokenRecord): Promise<SealedRecord> {
    const version = this.#versions.next(key);
    return await sealRecord(await this.#seals(key), key, record, version);
  }

  async #unseal(
    key: string,
    stored: Stored | null,
  ): Promise<TokenRecord | undefined> {
    // Anything else under the key (a plain record of 0.2, a value of another
    // program) counts as absent, and the next write replaces it.
    if (typeof stored !== "object" || stored === null) return undefined;
    if (
      !(stored.iv instanceof Uint8Array && stored.sealed instanceof Uint8Array)
    ) return undefined;
    const opened = await openVersioned(await this.#seals(key), key, stored);
    // Older than one seen: a replayed copy (a store rolled back), refused.
    if (opened === undefined) return undefined;
    return this.#versions.accept(key, opened.version)
      ? opened.record
      : undefined;
  }
}

function isLease(value: unknown): value is Lease {
  return typeof value === "object" && value !== null &&
    typeof (value as Lease).until === "number";
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
