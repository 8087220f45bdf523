// The Redis token store: "<prefix>:{<digest>}:record", "…:lease", and a short-lived stream
// "…:lease:<lease>" telling waiters the lease was let go (one hash tag: one cluster slot).

import type { CoordinateOptions, TokenRecord, TokenStore } from "./types.ts";
import {
  MAX_STORED_RECORD,
  recordLifetime,
  RecordSeals,
  type SealedRecord,
} from "./_record.ts";
import type { RedisCommand } from "./redis_command.ts";
import {
  leaseHolder,
  leaseValue,
  plainScript,
  type redisOptions,
  type ScriptName,
  scriptReply,
  SCRIPTS,
  sendWithin,
  text,
} from "./_redis_commands.ts";
import {
  coordinateByLease,
  type FleetStoreConfig,
  type LeaseDatabase,
  type RecordChange,
  updateBy,
} from "./_lease.ts";
import { entryNames } from "./_key.ts";
import { delay, raceAbort } from "../core/_deadlines.ts";
import { base64 } from "../core/_encoding.ts";

/** A record as a look or a read saw it: its text, and whether it could be read. */
interface Seen {
  readonly value: string;
  readonly readable: boolean;
}

type RedisStoreConfig =
  & FleetStoreConfig
  & Readonly<ReturnType<typeof redisOptions>>
  & { readonly blockingCommand: RedisCommand | undefined };

/** A {@linkcode TokenStore} on Redis that coordinates a fleet with leases. */
export class RedisTokenStore implements TokenStore, LeaseDatabase<Seen> {
  readonly #config: RedisStoreConfig;
  readonly #seals: RecordSeals;
  readonly #keysOf: ReturnType<typeof entryNames<string>>;
  /** Redis refused EVAL: the scripts' steps go by plain commands. */
  #plain = false;
  /** Whether a wait holds the blocking connection now. */
  #blocked = false;
  /** The last entry a wait read, so that the next waits for a newer one. */
  #lastWake: { stream: string; id: string } | undefined;
  /** Present when the store has a connection to block on. */
  readonly waitForRelease?: NonNullable<LeaseDatabase<Seen>["waitForRelease"]>;
  /** One command within the time limit; a plain function, as the scripts' plain steps take it. */
  readonly #send = (args: string[]): Promise<unknown> =>
    sendWithin(this.#config.command, args, this.#config.commandTimeout);

  constructor(config: RedisStoreConfig) {
    this.#config = config;
    this.#seals = new RecordSeals(config.encryptionKey);
    this.#keysOf = entryNames((digest, entry) =>
      `${config.prefix}:{${digest}}:${entry}`
    );
    const blocking = config.blockingCommand;
    if (blocking !== undefined) {
      this.waitForRelease = (key, holder, ms, signal) =>
        this.#waitOn(blocking, key, holder, ms, signal);
    }
  }

  async get(key: string): Promise<TokenRecord | undefined> {
    const { record } = await this.#keysOf(key);
    return (await this.#current(key, record))[0];
  }

  set(key: string, record: TokenRecord): Promise<void> {
    // Over the value as read, as update(): a plain write landed sealed older than what another object had seen meanwhile,
    // which then read the newest record as absent (outside attack r151 F7).
    return this.#seals.inTurn(key, async () => {
      await this.#update(key, () => record, "set");
    });
  }

  update(key: string, change: RecordChange) {
    return this.#update(key, change, "update");
  }

  /** Compare-and-set on the value as read. */
  async #update(key: string, change: RecordChange, action: "set" | "update") {
    const { record } = await this.#keysOf(key);
    const read = () => this.#current(key, record);
    const swap = (next: TokenRecord, seen: Seen) =>
      this.#seals.write(key, next, async (sealed) => {
        const args = [seen.value, ...this.#value(sealed, next)];
        return await this.#script("swap", [record], args) === 1;
      });
    return await updateBy(change, read, swap, action);
  }

  coordinate(key: string, options: CoordinateOptions): Promise<TokenRecord> {
    return coordinateByLease(this, this.#config, key, options);
  }

  async look(key: string) {
    const keys = await this.#keysOf(key);
    // Two reads, not MGET: the record's is bounded. The take checks the record again.
    const floor = this.#seals.floor(key);
    const value = await this.#read(keys.record);
    const lease = leaseHolder(await this.#textOf(["GET", keys.lease]));
    const record = await this.#decode(key, value, floor);
    return {
      record,
      leaseFree: lease === undefined, // Redis expires leases on time
      snapshot: seenOf(value, record),
      ...(lease === undefined ? {} : { holder: lease }),
    };
  }

  async take(key: string, seen: Seen) {
    const keys = await this.#keysOf(key);
    const ms = String(this.#config.leaseDuration);
    const lease = leaseValue(this.#config.holder);
    const args = [seen.value, lease, ms, seen.readable ? "0" : "1"];
    const taken = await this.#script("take", [keys.record, keys.lease], args);
    if (taken !== 1) return { holder: text(taken) };
    const told = [keys.record, keys.lease, `${keys.lease}:${lease}`];
    return {
      renew: async () => {
        await this.#script("renew", [keys.lease], [lease, ms]);
      },
      read: () => this.#current(key, keys.record),
      publish: async (record: TokenRecord, seen: Seen) => {
        const checked = [seen.value, seen.readable ? "0" : "1"];
        let answer: unknown;
        await this.#seals.write(key, record, async (sealed) => {
          const args = [lease, ...this.#value(sealed, record), ms, ...checked];
          return (answer = await this.#script("publish", told, args)) === 1;
        });
        // -1: another write landed first (read again); else the lease was lost.
        return answer === 1 ? true : answer === -1 ? false : undefined;
      },
      release: async () => {
        await this.#script("release", told, [lease, "", "", ms]);
      },
    };
  }

  /**
   * Blocks until `holder` lets the lease go (an entry on its stream), at most `ms` and `pollInterval`: the record
   * published, if any. One wait holds the connection; others meanwhile poll.
   */
  async #waitOn(
    blocking: RedisCommand,
    key: string,
    holder: string,
    ms: number,
    signal: AbortSignal,
  ): Promise<TokenRecord | undefined> {
    const { lease } = await this.#keysOf(key);
    const { pollInterval, commandTimeout } = this.#config;
    const block = Math.max(1, Math.ceil(Math.min(ms, pollInterval)));
    const stream = `${lease}:${holder}`;
    // After an entry already read, only a newer one wakes: never a loop on the same entry.
    const after = this.#lastWake?.stream === stream ? this.#lastWake.id : "0-0";
    const floor = this.#seals.floor(key);
    let reply: unknown;
    try {
      if (this.#blocked) throw new Error("the blocking connection is in use");
      this.#blocked = true;
      const read = ["XREAD", "COUNT", "1", "BLOCK", String(block), "STREAMS"];
      reply = await raceAbort(
        sendWithin(blocking, [...read, stream, after], commandTimeout + block)
          .finally(() => this.#blocked = false),
        signal,
      );
    } catch {
      signal.throwIfAborted();
      await delay(block, signal);
      return undefined;
    }
    // One entry, `[[stream, [[id, ["record", value]]]]]` ("" when let go without a record).
    const entry = (reply as unknown[][][][] | null)?.[0]?.[1]?.[0];
    const id = Array.isArray(entry) ? text(entry[0]) : undefined;
    if (id === undefined) return undefined;
    this.#lastWake = { stream, id };
    const fields = entry![1];
    const value = Array.isArray(fields) ? text(fields[1]) : undefined;
    return await this.#decode(key, value || undefined, floor);
  }

  /** The record as read, and what a compare-and-set checks. */
  async #current(
    key: string,
    name: string,
  ): Promise<[TokenRecord | undefined, Seen]> {
    const floor = this.#seals.floor(key);
    const value = await this.#read(name);
    const record = await this.#decode(key, value, floor);
    return [record, seenOf(value, record)];
  }

  /** A script by EVAL; once Redis refuses EVAL, the same steps by plain commands. */
  async #script(name: ScriptName, keys: string[], args: string[]) {
    if (this.#plain) return await plainScript(name, keys, args, this.#send);
    const tail = [String(keys.length), ...keys, ...args];
    let reply: unknown;
    try {
      reply = await this.#send(["EVAL", SCRIPTS[name], ...tail]);
    } catch (error) {
      if (!/NOPERM|unknown command/i.test(String(error))) throw error;
      this.#plain = true;
      return await plainScript(name, keys, args, this.#send);
    }
    return scriptReply(name, reply);
  }

  /** The record's text, read only as far as a record may go. */
  async #read(record: string): Promise<string | undefined> {
    const range = ["GETRANGE", record, "0", String(MAX_STORED_RECORD)];
    // GETRANGE answers "" for a missing key; a value past the bound is broken, never read whole.
    return await this.#textOf(range) || undefined;
  }

  /** A reply's text; a key of another type holds no record or lease (the take replaces it). */
  async #textOf(command: string[]): Promise<string | undefined> {
    const reply = await this.#send(command).catch((error) => {
      if (!/WRONGTYPE/.test(String(error))) throw error;
    });
    return text(reply);
  }

  /** The value and `PX` lifetime of a `SET` of `record`, sealed. */
  #value({ iv, sealed }: SealedRecord, record: TokenRecord): [string, string] {
    const value = JSON.stringify({ iv: base64(iv), sealed: base64(sealed) });
    return [value, String(recordLifetime(record, this.#config.now()))];
  }

  /** The record in `value`, read after the highest version seen was `floor`. */
  async #decode(key: string, value: string | undefined, floor: number) {
    if (value === undefined || value.length > MAX_STORED_RECORD) {
      return undefined;
    }
    try {
      const stored = JSON.parse(value);
      if (typeof stored?.iv !== "string") return undefined;
      return await this.#seals.open(key, {
        iv: fromBase64(stored.iv),
        sealed: fromBase64(stored.sealed),
      }, floor);
    } catch {
      return undefined; // not ours, or damaged: as if absent
    }
  }
}

/** What a compare-and-set checks of a record read: `value` as text ("" if absent), whether it held `record`. */
function seenOf(
  value: string | undefined,
  record: TokenRecord | undefined,
): Seen {
  return {
    value: value ?? "",
    readable: value === undefined || record !== undefined,
  };
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}
