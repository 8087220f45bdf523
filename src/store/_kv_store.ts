// The KV token store: records under [...prefix, digest, "record"], leases under [..., "lease"].

import type { CoordinateOptions, TokenRecord, TokenStore } from "./types.ts";
import { fieldsOf, rangeError, typeError } from "../core/_check.ts";
import { UTF8 } from "../core/_encoding.ts";
import { answerWithin, delay } from "../core/_deadlines.ts";
import { unchangedFor } from "../core/_clock.ts";
import { recordLifetime, RecordSeals, type SealedRecord } from "./_record.ts";
import { entryNames } from "./_key.ts";
import {
  coordinateByLease,
  type FleetStoreConfig,
  type LeaseDatabase,
  type LeaseView,
  type LostLease,
  type RecordChange,
  updateBy,
} from "./_lease.ts";

const LOCKED_RETRIES = 100;
/** How long one KV operation may take, in ms, as a Redis command by default: a KV that stopped answering holds nobody. */
const KV_WAIT = 2000;
/** The failure of a KV operation past its wait: the token store's and the limiter's. */
export const KV_LATE = "Deno KV did not answer in time";

/** A take lost: KV cannot say to whom at no cost (look again). */
const LOST: LostLease = Object.freeze({});
/** The two entries one look read, checked again when taking the lease. */
type Entries = readonly [Deno.AtomicCheck, Deno.AtomicCheck];

/** Refuses anything but a Deno KV database, and any runtime but Deno. */
export function requireKv(kv: Deno.Kv, context: string, elsewhere: string) {
  if ("Deno" in globalThis && typeof kv?.atomic === "function") return;
  const rule = `must be a Deno KV database (this ${elsewhere})`;
  throw typeError(context, "kv", rule);
}

const PREFIX_RULE =
  "must be an array of strings, numbers, bigints, booleans or Uint8Arrays";

/** A `prefix` option (`fallback` when undefined) leaving `room` bytes of KV's 2,048 for the parts added to it. */
export function kvPrefix(
  prefix: unknown,
  fallback: Deno.KvKey,
  room: number,
  context: string,
): Deno.KvKey {
  if (prefix === undefined) return fallback;
  if (!Array.isArray(prefix)) {
    throw typeError(context, "prefix", PREFIX_RULE, typeof prefix);
  }
  const rule = `must take at most ${2048 - room} bytes as a KV key`;
  // A part takes a byte at least: a longer array is refused before it is walked (new Array(1e8) took 11 s: r179 R8).
  if (prefix.length > 2048 - room) {
    throw rangeError(context, "prefix", rule, `${prefix.length} parts`);
  }
  // Every index, holes too (reduce skips them: [1, , 2] passed, and every write failed: r178a F5).
  const bytes = Array.from(prefix).reduce(
    (sum: number, part) => sum + keyPartBytes(part),
    room,
  );
  if (Number.isNaN(bytes)) throw typeError(context, "prefix", PREFIX_RULE);
  if (bytes > 2048) {
    throw rangeError(context, "prefix", rule, `${bytes - room}`);
  }
  return [...prefix];
}

/** A key part's size as KV encodes it (a tuple element: tag, escaped bytes, end; 9 for a number); NaN for no key part. */
function keyPartBytes(part: unknown): number {
  if (typeof part === "number") return 9;
  if (typeof part === "boolean") return 1;
  if (typeof part === "bigint") {
    const digits = (part < 0n ? -part : part).toString(16).replace(/^0$/, "");
    const length = Math.ceil(digits.length / 2);
    // KV takes a bigint of at most 255 bytes (10n ** 700n failed every write).
    return length > 255 ? NaN : length + (length > 8 ? 2 : 1);
  }
  const bytes = typeof part === "string" ? UTF8.encode(part) : part;
  if (!(bytes instanceof Uint8Array)) return NaN;
  return 2 + bytes.length + bytes.filter((byte) => byte === 0).length;
}

/** A {@linkcode TokenStore} on Deno KV that coordinates a fleet with leases. */
export class KvTokenStore implements TokenStore, LeaseDatabase<Entries> {
  readonly #kv: Deno.Kv;
  readonly #config: FleetStoreConfig;
  readonly #seals: RecordSeals;
  readonly #keysOf: ReturnType<typeof entryNames<Deno.KvKey>>;
  /** Per key, how long (steady clock) its lease has been seen as it is. */
  readonly #leaseUnchanged: (key: string, lease: string) => number;

  constructor(
    kv: Deno.Kv,
    config: FleetStoreConfig & { readonly prefix: Deno.KvKey },
  ) {
    this.#kv = kv;
    this.#config = config;
    this.#seals = new RecordSeals(config.encryptionKey);
    this.#leaseUnchanged = unchangedFor(config.steady);
    const { prefix } = config;
    this.#keysOf = entryNames((digest, entry) => [...prefix, digest, entry]);
  }

  async get(key: string): Promise<TokenRecord | undefined> {
    const { record } = await this.#keysOf(key);
    return (await this.#current(key, record))[0];
  }

  set(key: string, record: TokenRecord): Promise<void> {
    // Over the entry as read, as update(): a plain write landed sealed older than what another object had seen meanwhile,
    // which then read the newest record as absent (outside attack r151 F7).
    return this.#seals.inTurn(key, async () => {
      await this.#update(key, () => record, "set");
    });
  }

  update(key: string, change: RecordChange) {
    return this.#update(key, change, "update");
  }

  /** Compare-and-set on the entry's versionstamp. */
  async #update(key: string, change: RecordChange, action: "set" | "update") {
    const { record } = await this.#keysOf(key);
    const read = () => this.#current(key, record);
    const swap = (next: TokenRecord, entry: Deno.AtomicCheck) =>
      this.#swap(key, record, next, [entry]);
    return await updateBy(change, read, swap, action);
  }

  coordinate(key: string, options: CoordinateOptions): Promise<TokenRecord> {
    return coordinateByLease(this, this.#config, key, options);
  }

  /** One consistent read of both: a token published between two reads would look missing. */
  async look(key: string, signal: AbortSignal): Promise<LeaseView<Entries>> {
    const names = await this.#keysOf(key);
    const both = [names.record, names.lease] as const;
    const read = () => this.#kv.getMany<[SealedRecord, unknown]>(both);
    const floor = this.#seals.floor(key);
    const [stored, lease] = await unlocked(read, signal);
    return {
      record: await this.#open(key, stored.value, floor),
      leaseFree: this.#leaseOver(key, lease.value),
      snapshot: [stored, lease],
    };
  }

  async take(key: string, [stored, seen]: Entries, signal: AbortSignal) {
    const names = await this.#keysOf(key);
    const { holder, leaseDuration, now } = this.#config;
    // Its length goes with it: a member whose own lease is shorter waits out this one (r178a F2).
    const write = (check: Deno.AtomicOperation) =>
      check.set(names.lease, {
        holder,
        until: now() + leaseDuration,
        ms: leaseDuration,
      }, { expireIn: leaseDuration }).commit();
    const taken = await unlocked(
      () => write(this.#kv.atomic().check(stored).check(seen)),
      signal,
    );
    if (!taken.ok) return LOST;
    // The lease we took, known by the versionstamp of its last write.
    const lease = { key: names.lease, versionstamp: taken.versionstamp };
    return {
      renew: async () => {
        const renewed = await write(this.#kv.atomic().check(lease));
        if (renewed.ok) lease.versionstamp = renewed.versionstamp;
      },
      read: () => this.#current(key, names.record),
      publish: async (record: TokenRecord, entry: Deno.AtomicCheck) => {
        const letGo = (write: Deno.AtomicOperation) => write.delete(lease.key);
        const checks = [lease, entry];
        if (await this.#swap(key, names.record, record, checks, letGo)) {
          return true;
        }
        // Refused: the lease was lost, or another write landed first (read again).
        const now = await unlocked(() => this.#kv.get(lease.key));
        return now.versionstamp === lease.versionstamp ? false : undefined;
      },
      release: async () => {
        await unlocked(() =>
          this.#kv.atomic().check(lease).delete(lease.key).commit()
        );
      },
    };
  }

  /** Writes `record` sealed under `name` if `checks` hold, `also` in the same commit; whether it landed. */
  #swap(
    key: string,
    name: Deno.KvKey,
    record: TokenRecord,
    checks: Deno.AtomicCheck[],
    also = (write: Deno.AtomicOperation) => write,
  ): Promise<boolean> {
    return this.#seals.write(key, record, async (sealed) => {
      const swap = () =>
        also(this.#kv.atomic().check(...checks)).set(name, sealed, {
          expireIn: recordLifetime(record, this.#config.now()),
        }).commit();
      return (await unlocked(swap)).ok;
    });
  }

  /** The record as read, and its entry, which a compare-and-set checks. */
  async #current(
    key: string,
    name: Deno.KvKey,
  ): Promise<[TokenRecord | undefined, Deno.KvEntryMaybe<SealedRecord>]> {
    const floor = this.#seals.floor(key);
    const entry = await unlocked(() => this.#kv.get<SealedRecord>(name));
    return [await this.#open(key, entry.value, floor), entry];
  }

  /**
   * Whether a lease (its holder, until when, and its length: KV's own expiry is not prompt) is over: seen unchanged
   * here for a whole lease, its length or this member's, whichever is longer (its holder renews it three times a
   * lease). Never by its `until` against this member's clock: one 7 s ahead took a live lease and sent a second token
   * request (r178a F1); a lease a process left when it died is taken a lease after it is first seen.
   */
  #leaseOver(key: string, lease: unknown): boolean {
    const { holder, until, ms } = fieldsOf(lease) ?? {};
    // A lease of any other shape is not one of ours: taking it replaces it.
    if (typeof until !== "number") return true;
    const { leaseDuration: own, maxWait } = this.#config;
    const stated = typeof ms === "number" && ms > own ? ms : own;
    // Judged within a waiter's patience where the holder's renewals (a third of its lease) allow: a lease longer than
    // maxWait, its holder dead, cost each waiter a request at maxWait (review r179 R3).
    const length = Math.min(stated, Math.max(maxWait / 2, stated / 2));
    return this.#leaseUnchanged(key, `${holder} ${until}`) >= length;
  }

  /** Anything but a sealed record (0.2's plain one, another program's value) counts as absent. */
  async #open(key: string, stored: SealedRecord | null, floor: number) {
    return stored?.iv instanceof Uint8Array &&
        stored.sealed instanceof Uint8Array
      ? await this.#seals.open(key, stored, floor)
      : undefined;
  }
}

/** Runs a KV operation (within KV_WAIT) again while another process holds a local database's write lock (ms). */
async function unlocked<T>(operation: () => Promise<T>, signal?: AbortSignal) {
  for (let attempt = 0;; attempt++) {
    try {
      return await answerWithin(operation, KV_WAIT, KV_LATE);
    } catch (error) {
      const locked = error instanceof Error &&
        /database is locked/i.test(error.message);
      if (!locked || attempt >= LOCKED_RETRIES) throw error;
      await delay(2 + Math.random() * 10, signal);
    }
  }
}
