// Internal: the Redis token store behind createRedisTokenStore. Each client's
// record rests under "<prefix>:{<digest>}:record", its lease under
// "<prefix>:{<digest>}:lease", and the step that lets a lease go is told on
// a short-lived stream "<prefix>:{<digest>}:lease:<lease value>" (one hash
// tag, so a cluster keeps them in one slot for the scripts). Values are JSON
// text: the sealed record, its nonce and ciphertext in base64.

import type {
  CoordinateOptions,
  FleetStoreOptions,
  TokenRecord,
  TokenStore,
} from "../store/mod.ts";
import {
  openRecord,
  recordLifetime,
  recordSeals,
  sealRecord,
} from "./_record.ts";
import {
  coordinateByLease,
  type HeldLease,
  type LeaseDatabase,
  type LeaseTiming,
  type LeaseView,
  type LostLease,
} from "./_lease.ts";
import { hexDigest } from "./_key.ts";
import { raceAbort } from "../core/_abort.ts";
import { delay } from "../core/_retry.ts";

/**
 * Sends one Redis command, e.g. `["GET", "k"]`, and resolves with its reply.
 *
 * @example With node-redis or ioredis
 * ```ts
 * import { createRedisTokenStore, type RedisCommand } from "@partner-api/client/redis";
 * import { equal } from "node:assert/strict";
 *
 * const sent: string[][] = [];
 * // With ioredis: (args) => redis.call(...args); with node-redis: (args) => client.sendCommand(args).
 * const command: RedisCommand = (args) => (sent.push(args), Promise.resolve(null));
 * equal(await createRedisTokenStore({ command }).get("client"), undefined); // no record yet
 * equal(sent[0]?.[0], "GET");
 * ```
 */
export type RedisCommand = (args: string[]) => Promise<unknown>;

/** A record as a look saw it: its text, and whether it could be read. */
interface Seen {
  readonly value: string;
  readonly readable: boolean;
}

/** The checked options of a {@linkcode RedisTokenStore}. */
export interface RedisStoreConfig extends LeaseTiming {
  readonly command: RedisCommand;
  readonly blockingCommand: RedisCommand | undefined;
  readonly prefix: string;
  readonly encryptionKey: FleetStoreOptions["encryptionKey"];
  readonly holder: string;
  readonly commandTimeout: number;
}

// Each script acts only if a value is still the one this process saw or
// wrote, so that no process overwrites or deletes another's work.
// TAKE first drops a record or lease key of another type (WRONGTYPE): it is
// not ours, and would otherwise hold every process off for good. A record
// the process could not read (ARGV[4] '1') may be taken over while it still
// is no sealed record: its bytes may not come back as the text seen (not
// UTF-8). Taken by another, it answers who holds it, so that a waiter can
// wait on it.
const TAKE = `for _, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key).ok
  if kind ~= 'none' and kind ~= 'string' then redis.call('DEL', key) end
end
local record = redis.call('GET', KEYS[1]) or ''
if record ~= ARGV[1] and (ARGV[4] ~= '1' or
  string.find(record, '"sealed"', 1, true)) then return 0 end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return 1 end
return redis.call('GET', KEYS[2]) or 0`;
const SWAP = `if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;
const RENEW = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])`;
// PUBLISH and RELEASE let the lease go and tell whoever waits on it (XREAD
// on KEYS[3], named after the lease) what was published, if anything
// (ARGV[2], else ''), then leave the stream to expire.
const RELEASED = `redis.call('DEL', KEYS[2])
redis.call('XADD', KEYS[3], '*', 'record', ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return 1`;
const PUBLISH = `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
${RELEASED}`;
const RELEASE = `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
${RELEASED}`;
const UPDATE_ATTEMPTS = 10;

/** A {@linkcode TokenStore} on Redis that coordinates a fleet with leases. */
export class RedisTokenStore implements TokenStore, LeaseDatabase<Seen> {
  readonly #config: RedisStoreConfig;
  readonly #seals: (key: string) => Promise<CryptoKey>;
  readonly #keys = new Map<
    string,
    Promise<{ record: string; lease: string }>
  >();

  /** Whether a wait holds the blocking connection now. */
  #blocked = false;
  /** The last entry a wait read, so that the next waits for a newer one. */
  #lastWake: { stream: string; id: string } | undefined;
  /** Present when the store has a connection to block on. */
  readonly waitForRelease?: LeaseDatabase<Seen>["waitForRelease"];

  constructor(config: RedisStoreConfig) {
    this.#config = config;
    this.#seals = recordSeals(config.encryptionKey);
    const blocking = config.blockingCommand;
    if (blocking !== undefined) {
      this.waitForRelease = (key, holder, ms, signal) =>
        this.#waitOn(blocking, key, holder, ms, signal);
    }
  }

  async get(key: string): Promise<TokenRecord | undefined> {
    const { record } = await this.#keysOf(key);
    return await this.#decode(key, text(await this.#send(["GET", record])));
  }

  async set(key: string, record: TokenRecord): Promise<void> {
    const keys = await this.#keysOf(key);
    await this.#send(["SET", keys.record, ...await this.#value(key, record)]);
  }

  /** Compare-and-set on the value as read: another process's write makes `change` run again. */
  async update(
    key: string,
    change: (record: TokenRecord | undefined) => TokenRecord | undefined,
  ): Promise<TokenRecord | undefined> {
    const keys = await this.#keysOf(key);
    for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
      const seen = text(await this.#send(["GET", keys.record]));
      const record = await this.#decode(key, seen);
      const next = change(record);
      if (next === undefined) return record;
      const [value, , lifetime] = await this.#value(key, next);
      const done = await this.#script(SWAP, [keys.record], [
        seen ?? "",
        value,
        lifetime,
      ]);
      if (done === 1) return next;
    }
    throw new Error("Cannot update the token record: it keeps changing");
  }

  coordinate(key: string, options: CoordinateOptions): Promise<TokenRecord> {
    return coordinateByLease(this, this.#config, key, options);
  }

  async look(key: string): Promise<LeaseView<Seen>> {
    const keys = await this.#keysOf(key);
    const reply = await this.#send(["MGET", keys.record, keys.lease]);
    const [value, lease] = Array.isArray(reply) ? reply.map(text) : [];
    const record = await this.#decode(key, value);
    return {
      record,
      leaseFree: lease === undefined, // Redis expires leases on time
      snapshot: {
        value: value ?? "",
        readable: value === undefined || record !== undefined,
      },
      ...(lease === undefined ? {} : { holder: lease }),
    };
  }

  async take(key: string, seen: Seen): Promise<HeldLease | LostLease> {
    const keys = await this.#keysOf(key);
    const { holder, leaseDuration } = this.#config;
    const lease = `${crypto.randomUUID()} ${holder}`;
    const taken = await this.#script(TAKE, [keys.record, keys.lease], [
      seen.value,
      lease,
      String(leaseDuration),
      seen.readable ? "0" : "1",
    ]);
    if (taken !== 1) return { holder: text(taken) };
    const told = [keys.record, keys.lease, `${keys.lease}:${lease}`];
    const toldFor = String(leaseDuration);
    return {
      renew: async () => {
        await this.#script(RENEW, [keys.lease], [lease, String(leaseDuration)]);
      },
      publish: async (record) => {
        const [value, , lifetime] = await this.#value(key, record);
        const done = await this.#script(PUBLISH, told, [
          lease,
          value,
          lifetime,
          toldFor,
        ]);
        return done === 1;
      },
      release: async () => {
        await this.#script(RELEASE, told, [lease, "", "", toldFor]);
      },
    };
  }

  /**
   * Blocks on `blocking`'s connection until the lease `holder` is let go
   * (an entry on its stream, there already if it was), for at most `ms`
   * and `pollInterval` (a holder that died, or one of a version that tells
   * nobody, wakes no one): the record published with it, if any. One
   * wait at a time holds the connection: another meanwhile, and a failing
   * Redis, wait like a poll, never retried at once.
   */
  async #waitOn(
    blocking: RedisCommand,
    key: string,
    holder: string,
    ms: number,
    signal: AbortSignal,
  ): Promise<TokenRecord | undefined> {
    const { lease } = await this.#keysOf(key);
    const block = Math.max(
      1,
      Math.ceil(Math.min(ms, this.#config.pollInterval)),
    );
    const stream = `${lease}:${holder}`;
    // After an entry already read (one that held no record for us), only a
    // newer one wakes: never a loop on the same entry.
    const after = this.#lastWake?.stream === stream ? this.#lastWake.id : "0-0";
    let reply: unknown;
    try {
      if (this.#blocked) throw new Error("the blocking connection is in use");
      this.#blocked = true;
      reply = await raceAbort(
        this.#send(
          ["XREAD", "COUNT", "1", "BLOCK", String(block), "STREAMS"]
            .concat(stream, after),
          blocking,
          block,
        ).finally(() => this.#blocked = false),
        signal,
      );
    } catch {
      signal.throwIfAborted();
      await delay(Math.min(block, this.#config.pollInterval), signal);
      return undefined;
    }
    const entry = entryIn(reply);
    if (entry !== undefined) this.#lastWake = { stream, id: entry.id };
    return await this.#decode(key, entry?.record);
  }

  #script(source: string, keys: string[], args: string[]): Promise<unknown> {
    return this.#send(["EVAL", source, String(keys.length), ...keys, ...args]);
  }

  /**
   * One command, within `commandTimeout` (and the time it blocks for): a
   * client that queues commands while Redis is away would otherwise hold
   * every waiting caller.
   */
  #send(
    args: string[],
    command = this.#config.command,
    blocks = 0,
  ): Promise<unknown> {
    const reply = Promise.resolve().then(() => command(args));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`Redis did not answer ${args[0]} in time`)),
        this.#config.commandTimeout + blocks,
      );
      reply.then(resolve, reject).finally(() => clearTimeout(timer));
    });
  }

  /** The value and `PX` arguments of a `SET` of `record`, sealed. */
  async #value(
    key: string,
    record: TokenRecord,
  ): Promise<[value: string, px: "PX", lifetime: string]> {
    const { now } = this.#config;
    const sealing = await this.#seals(key);
    const stored = encodeSealed(await sealRecord(sealing, key, record));
    return [
      JSON.stringify(stored),
      "PX",
      String(recordLifetime(record, now())),
    ];
  }

  async #decode(
    key: string,
    value: string | undefined,
  ): Promise<TokenRecord | undefined> {
    if (value === undefined) return undefined;
    try {
      const stored = JSON.parse(value);
      if (typeof stored?.iv !== "string") return undefined;
      return await openRecord(await this.#seals(key), key, {
        iv: fromBase64(stored.iv),
        sealed: fromBase64(stored.sealed),
      });
    } catch {
      return undefined; // not ours, or damaged: as if absent
    }
  }

  #keysOf(key: string): Promise<{ record: string; lease: string }> {
    let keys = this.#keys.get(key);
    if (keys === undefined) {
      keys = hexDigest(key, 16).then((digest) => ({
        record: `${this.#config.prefix}:{${digest}}:record`,
        lease: `${this.#config.prefix}:{${digest}}:lease`,
      }));
      this.#keys.set(key, keys);
    }
    return keys;
  }
}

/**
 * The entry of an XREAD reply of one (`[[stream, [[id, ["record", value]]]]]`):
 * its id, and the record published with it (none when the lease was let go
 * without one); `undefined` when the wait ended without an entry.
 */
function entryIn(
  reply: unknown,
): { id: string; record: string | undefined } | undefined {
  const entry = (reply as unknown[][][][] | null)?.[0]?.[1]?.[0];
  const id = Array.isArray(entry) ? text(entry[0]) : undefined;
  if (id === undefined) return undefined;
  const fields = entry![1];
  const value = Array.isArray(fields) ? text(fields[1]) : undefined;
  return { id, record: value === "" ? undefined : value };
}

/** A reply as text: clients answer strings, or bytes when asked to. */
function text(reply: unknown): string | undefined {
  if (typeof reply === "string") return reply;
  if (reply instanceof Uint8Array) return new TextDecoder().decode(reply);
  return undefined;
}

function encodeSealed(
  { iv, sealed }: { iv: Uint8Array; sealed: Uint8Array },
): { iv: string; sealed: string } {
  return { iv: toBase64(iv), sealed: toBase64(sealed) };
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}
