// What the shared stores and the file store write for a record: a plain copy sealed with AES-GCM.

import { storableToken } from "../core/token_values.ts";
import type { TokenRecord, TokenStore } from "./types.ts";
import { given } from "../core/_check.ts";
import { aesKeyFrom, perKey } from "./_key.ts";
import { laterOf } from "./token_access.ts";

/** A record sealed with AES-GCM: the nonce and the ciphertext with its tag. */
export type SealedRecord = Readonly<Awaited<ReturnType<typeof sealRecord>>>;

/** The bound on a stored record, in bytes: a larger value is a broken record, not read whole. */
export const MAX_STORED_RECORD = 65_536;
const MIN_RECORD_LIFETIME = 1000;
/** A 401 renewal counts for an hour; kept a little longer for clocks that differ. */
const RENEWAL_KEPT = 2 * 3_600_000;
/** KV refuses an `expireIn` beyond about 68 years; a year is plenty. */
const MAX_RECORD_LIFETIME = 366 * 86_400_000;
const encoder = new TextEncoder();

/** Encrypts the record's plain copy (data properties only: the token's is not enumerable), with `version` inside, bound to `key`. */
export async function sealRecord(
  encryptionKey: CryptoKey,
  key: string,
  record: TokenRecord,
  version?: number,
) {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const { token, quota, blockedUntil, failure, renewal } = record;
  const plain = given({
    token: token && storableToken(token),
    quota: quota && {
      buckets: quota.buckets.map((bucket) => ({ ...bucket })),
      observedAt: quota.observedAt,
    },
    blockedUntil,
    failure: failure && { ...failure },
    renewal: renewal && { ...renewal },
    version: version || undefined,
  });
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: encoder.encode(key) },
    encryptionKey,
    encoder.encode(JSON.stringify(plain)),
  );
  return { iv, sealed: new Uint8Array(sealed) };
}

/** The record (with the version sealed in it), or `undefined` when another key sealed it or it was tampered with. */
export async function openRecord(
  encryptionKey: CryptoKey,
  key: string,
  { iv, sealed }: SealedRecord,
): Promise<(TokenRecord & { version?: unknown }) | undefined> {
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv, additionalData: encoder.encode(key) },
      encryptionKey,
      sealed,
    );
    return JSON.parse(new TextDecoder().decode(plain));
  } catch {
    return undefined; // another key, or tampered with: as if absent
  }
}

/**
 * One fleet store's seals: the key given, else one derived (HKDF) from each store key. Each write seals a version
 * newer than any seen, and set(), update() and the lease holder's publish land only over the record they read (a plain
 * write landing after newer ones left a version older than another object had seen). An older record (a store rolled
 * back, a record written back) is refused once a newer one was seen here (read, or written by a write that landed)
 * before the read began: a process that saw none (started after) cannot tell.
 */
export class RecordSeals {
  readonly #keys: (key: string) => Promise<CryptoKey>;
  readonly #highest = new Map<string, number>();
  readonly #turns = new Map<string, Promise<unknown>>();

  constructor(given: CryptoKey | undefined) {
    this.#keys = given === undefined
      ? perKey((key) => aesKeyFrom(key, "partner-api token record seal v1", ""))
      : () => Promise.resolve(given);
  }

  /**
   * `record` sealed one version past the highest seen, for `write`, which answers whether it landed: only then does
   * its version count as seen (raised before, a write that lost its compare-and-set left the highest above the record
   * stored, and open() refused that record: the store read as empty, and providers renewed again).
   */
  async write(
    key: string,
    record: TokenRecord,
    write: (sealed: SealedRecord) => Promise<boolean>,
  ): Promise<boolean> {
    const version = this.floor(key) + 1;
    const keyed = await this.#keys(key);
    const landed = await write(await sealRecord(keyed, key, record, version));
    // A newer one read meanwhile stays the highest.
    if (landed && version > this.floor(key)) this.#highest.set(key, version);
    return landed;
  }

  /** `step` once this store object's steps before it for `key` settled: its set() calls land in the order made. */
  inTurn<R>(key: string, step: () => Promise<R>): Promise<R> {
    const turn = (this.#turns.get(key) ?? Promise.resolve()).then(step, step);
    this.#turns.set(key, turn.catch(() => {}));
    return turn;
  }

  /** The highest version of `key` seen so far: what a read takes before it asks the store, for open(). */
  floor(key: string): number {
    return this.#highest.get(key) ?? 0;
  }

  /**
   * The record, unless older than `floor`, the highest seen before the read began (not the highest now: a concurrent
   * read or write may have raised it since the record was read). Refused, the store reads as empty.
   */
  async open(key: string, sealed: SealedRecord, floor: number) {
    const opened = await openRecord(await this.#keys(key), key, sealed);
    if (typeof opened !== "object" || opened === null) return undefined;
    const { version, ...record } = opened;
    // 0.3's records carry no version: 0.
    const seen = Number.isSafeInteger(version) ? version as number : 0;
    if (seen < floor) return undefined;
    if (seen > this.floor(key)) this.#highest.set(key, seen);
    return record;
  }
}

/** What to store after a request, {@linkcode publishedOver} the record as it stands once it answered (`read`, tried twice, else `before`). */
export async function published(
  result: TokenRecord,
  before: TokenRecord | undefined,
  read: () => Promise<TokenRecord | undefined>,
): Promise<TokenRecord> {
  // Read again once: a failed read (one dropped command) fell back to `before`, losing a renewal made meanwhile.
  return publishedOver(result, await read().catch(read).catch(() => before));
}

/** What a request's result is stored through. */
export type Writes =
  & Pick<TokenStore, "set">
  & Required<Pick<TokenStore, "update">>;

/**
 * Stores a request's `result` {@linkcode publishedOver} the record as it stands, in one update() (nothing if `keeps`
 * the one stored): a read, then a set(), wrote over a 401's renewal or a block another process landed in between. A
 * failing update() is tried again (a dropped command), then a set() over the record last read (else `before`), unless
 * `keeps` it: the token is paid for. Resolves with the result over the record last read.
 */
export async function storeOver(
  store: Writes,
  key: string,
  result: TokenRecord,
  before: TokenRecord | undefined,
  keeps = (_stored: TokenRecord | undefined, _next: TokenRecord) => false,
): Promise<TokenRecord> {
  let [lastRead, record] = [before, publishedOver(result, before)];
  const change = (stored: TokenRecord | undefined) => {
    record = publishedOver(result, lastRead = stored);
    return keeps(stored, record) ? undefined : record;
  };
  const update = () => store.update(key, change);
  await update().catch(update).catch(() =>
    change(lastRead) && store.set(key, record)
  ).catch(() => {});
  return record;
}

/**
 * A request's `result` over the record `current`ly stored: its token kept when the result has none (a failed refresh,
 * a 429's block; one a 401 dropped meanwhile stays dropped), and the later of two 401 renewals, of two quota blocks
 * and, unless the result is a token, of two failures (another process may have stored one meanwhile).
 */
export function publishedOver(
  result: TokenRecord,
  current: TokenRecord | undefined,
): TokenRecord {
  const token = result.token ?? current?.token;
  const renewal = laterOf(result.renewal, current?.renewal, ({ at }) => at);
  // Only a token ends a failure, as in a provider: dropped under a 429's block, the next cooldown began again at 10 s.
  const failure = result.token
    ? undefined
    : laterOf(result.failure, current?.failure, ({ until }) => until);
  const blocked = [result.blockedUntil, current?.blockedUntil];
  const blockedUntil = Math.max(...blocked.map((at) => at ?? -Infinity));
  return {
    ...result,
    ...(token && { token }),
    ...(renewal && { renewal }),
    ...(failure && { failure }),
    ...(blockedUntil > -Infinity && { blockedUntil }),
  };
}

/** How long to keep a record, in ms: until its token, block, cooldown and 401 renewal are over. */
export function recordLifetime(record: TokenRecord, now: number): number {
  const end = Math.max(
    record.token?.expiresAt ?? 0,
    record.blockedUntil ?? 0,
    // A failure counts towards the next one's cooldown for 15 minutes after.
    (record.failure?.until ?? 0) + 15 * 60_000,
    (record.renewal?.at ?? 0) + RENEWAL_KEPT,
  );
  const lifetime = Math.max(MIN_RECORD_LIFETIME, Math.ceil(end - now));
  return Math.min(MAX_RECORD_LIFETIME, lifetime);
}
