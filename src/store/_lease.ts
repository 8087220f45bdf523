// The lease protocol of the shared stores: whoever needs a token takes the lease (if nothing changed
// since it looked), requests, and publishes in the step that lets go; the others wait for that step.

import type { CoordinateOptions, TokenRecord, TokenStore } from "./types.ts";
import type { FleetStoreOptions } from "./fleet_options.ts";
import { publishedOver, storeOver, type Writes } from "./_record.ts";
import { delay, keepRefreshed } from "../core/_deadlines.ts";
import {
  checkNumber,
  type NumberRule,
  requireFunction,
  requireOptions,
  requireText,
  typeError,
} from "../core/_check.ts";
import { steadyClock } from "../core/_clock.ts";

/** What one look at the database saw. */
export interface LeaseView<Snapshot> {
  /** The record, if there is one this process can read. */
  readonly record: TokenRecord | undefined;
  /** Whether nobody holds the lease (or its holder's time ran out). */
  readonly leaseFree: boolean;
  /** What {@linkcode LeaseDatabase.take} checks has not changed. */
  readonly snapshot: Snapshot;
  /** Who holds the lease, when it is held: what a wake is named after. */
  readonly holder?: string;
}

/** A lease this process holds. */
export interface HeldLease {
  /** Extends the lease by its full duration, if it is still ours. */
  renew(): Promise<void>;
  /** The record as it stands, and what {@linkcode HeldLease.publish} checks. */
  read(): Promise<[TokenRecord | undefined, unknown]>;
  /** Writes `record` and lets the lease go in one step if the record is still `seen`: `false` if another write landed first, `undefined` if the lease was lost. */
  publish(record: TokenRecord, seen: unknown): Promise<boolean | undefined>;
  /** Lets the lease go, if it is still ours. */
  release(): Promise<void>;
}

/** A lease another process took first, or a record that changed. */
export interface LostLease {
  /** Who holds the lease, if the database could tell. */
  readonly holder?: string | undefined;
}

/** One shared database, as the lease protocol needs it. */
export interface LeaseDatabase<Snapshot> extends Writes {
  /** One consistent read of the record and the lease. */
  look(key: string, signal: AbortSignal): Promise<LeaseView<Snapshot>>;
  /** Takes the lease if nothing changed since `snapshot`; else who holds it, if known. */
  take(
    key: string,
    snapshot: Snapshot,
    signal: AbortSignal,
  ): Promise<HeldLease | LostLease>;
  /** Waits at most `ms` for `holder` to let go: the record then published. Absent where none can tell. */
  waitForRelease?(
    key: string,
    holder: string,
    ms: number,
    signal: AbortSignal,
  ): Promise<TokenRecord | undefined>;
}

/** The checked options of a shared store: its lease timing (ms), seal and name. */
export type FleetStoreConfig = Readonly<ReturnType<typeof fleetStoreConfig>>;

/** Checks the options every shared store takes. */
export function fleetStoreConfig(options: FleetStoreOptions, context: string) {
  requireOptions(options, context);
  const now = requireFunction(options.now, context, "now");
  const time = (
    field: "leaseDuration" | "maxWait" | "pollInterval",
    fallback: number,
    rule: NumberRule = "positive whole time in ms, at most 2147483647",
  ) => checkNumber(options[field], fallback, rule, context, field);
  const orNone = "non-negative whole time in ms, at most 2147483647";
  const key = options.encryptionKey;
  if (
    key !== undefined &&
    (!(key instanceof CryptoKey) || key.algorithm.name !== "AES-GCM" ||
      !key.usages.includes("encrypt") || !key.usages.includes("decrypt"))
  ) {
    const rule = "must be an AES-GCM CryptoKey for encrypt and decrypt";
    throw typeError(context, "encryptionKey", rule);
  }
  return {
    leaseDuration: time("leaseDuration", 10_000),
    maxWait: time("maxWait", 45_000, orNone),
    pollInterval: time("pollInterval", 50),
    encryptionKey: key,
    holder: options.holderId === undefined
      ? crypto.randomUUID()
      : requireText(options.holderId, context, "holderId"), // r168b F9: any value was taken
    // Epoch ms, for what the store keeps (records, leases).
    now: now ?? Date.now,
    // The same clock never going back, for how long a process waits.
    steady: steadyClock(now),
  };
}

export type RecordChange = Parameters<NonNullable<TokenStore["update"]>>[1];

/**
 * A set(), an update() or a publish gives up only past contention no fleet meets: each attempt lost was another write
 * that landed (Redis's update() gave up after 10, a count kept from discard(): 20 writers at once lost half).
 */
const CAS_ATTEMPTS = 100;
/**
 * The longest pause before a compare-and-set is tried again, in ms. Each loser trying again at once, one write landed
 * a round and the rest lost again: 200 store objects updating one Redis record at once gave up 98 times after
 * CAS_ATTEMPTS. A random pause (up to 2, 4, ... ms after each loss) spreads them: none gave up, the unluckiest took
 * 28 to 46 attempts in 4 runs (58 to 62 with at most 32 ms, with half again the scripts run in all). The first pauses
 * stay short: a few writers lose once or twice.
 */
const MAX_CAS_PAUSE = 64;

/** Compare-and-set: `write` fails when another process wrote since `read`, and `change` runs again. */
export async function updateBy<Seen>(
  change: RecordChange,
  read: () => Promise<[TokenRecord | undefined, Seen]>,
  write: (next: TokenRecord, seen: Seen) => Promise<boolean>,
  action: "set" | "update" = "update",
): Promise<TokenRecord | undefined> {
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    if (attempt > 0) {
      await delay(Math.random() * Math.min(2 ** attempt, MAX_CAS_PAUSE));
    }
    const [record, seen] = await read();
    const next = change(record);
    if (next === undefined) return record;
    if (await write(next, seen)) return next;
  }
  throw new Error(`Cannot ${action} the token record: it keeps changing`);
}

/** A record `settled` accepts, or the lease taken and a request; past `maxWait` and the budget, a request alone. */
export async function coordinateByLease<Snapshot>(
  database: LeaseDatabase<Snapshot>,
  timing: FleetStoreConfig,
  key: string,
  { settled, request, signal, requestBudget }: CoordinateOptions,
): Promise<TokenRecord> {
  const { steady: now, maxWait, pollInterval } = timing;
  // Never give up on another process's request before it may have ended.
  const deadline = now() + Math.max(maxWait, requestBudget);
  // Look again after 1 ms (a token request often takes a few), then less often, up to pollInterval (1 ms at least).
  let wait = 1;
  let lookedAgain = false;
  while (true) {
    signal.throwIfAborted();
    const view = await database.look(key, signal);
    const { record, leaseFree, snapshot } = view;
    if (record !== undefined && settled(record)) return record;
    let holder = view.holder;
    if (leaseFree) {
      const taken = await database.take(key, snapshot, signal);
      if ("publish" in taken) {
        const held = { lease: taken, leaseDuration: timing.leaseDuration };
        return await requestHolding(database, key, held, record, request);
      }
      // Lost, or the record changed: wait on the new holder or look again; lost twice, wait first (no tight loop).
      holder = taken.holder;
      if (holder === undefined && !lookedAgain) {
        lookedAgain = true;
        continue;
      }
    }
    lookedAgain = false;
    const left = deadline - now();
    if (left <= 0) {
      return await storeOver(database, key, await request(), record);
    }
    if (holder !== undefined && database.waitForRelease !== undefined) {
      // Woken by the holder's step; a dead holder wakes nobody, its lease runs out within leaseDuration.
      const ms = Math.min(left, timing.leaseDuration);
      const since = now();
      const released = await database.waitForRelease(key, holder, ms, signal);
      if (released !== undefined && settled(released)) return released;
      if (released !== undefined) continue;
      // Back with nothing sooner than a poll would look again (a connection that does not block): the poll's wait,
      // or this loop starved every timer of the process, 619,319 commands in 2.5 s (r174b F1, F2; r175b: an answer
      // of 2 ms each ran it at network speed).
      const rest = wait - (now() - since);
      if (rest > 0) await delay(rest, signal);
    } else await delay(wait, signal);
    wait = Math.min(wait * 2, pollInterval);
  }
}

/** Requests while holding the lease; publishes the result as it lets go. */
async function requestHolding(
  database: LeaseDatabase<unknown>,
  key: string,
  { lease, leaseDuration }: { lease: HeldLease; leaseDuration: number },
  before: TokenRecord | undefined,
  request: () => Promise<TokenRecord>,
): Promise<TokenRecord> {
  // Renewed while the request runs: a slow token endpoint must not let another process take over.
  const renewEvery = Math.max(1, Math.floor(leaseDuration / 3));
  const stop = keepRefreshed(renewEvery, () => lease.renew()); // a busy database: the next tick renews
  let result: TokenRecord;
  try {
    result = await request();
  } catch (error) {
    stop();
    await lease.release().catch(() => {}); // else it runs out by itself
    throw error;
  }
  stop();
  let [lastRead, record] = [before, publishedOver(result, before)];
  try {
    let lost = false;
    // Over the record as it stands (a 401's renewal is not held off by the lease: what it changed meanwhile stands),
    // and only over the record read: sealed over an older read, it landed older than what another process had seen
    // since, which then read the store as empty. Read again (tried twice) while another write lands first.
    await updateBy(
      (stored) => record = publishedOver(result, lastRead = stored),
      () => lease.read().catch(() => lease.read()),
      async (next, seen) => {
        const landed = await lease.publish(next, seen);
        lost = landed === undefined;
        return landed !== false;
      },
    );
    // The lease was lost (the process stalled): store only what the record lacks, a newer token or a later block or
    // cooldown (merged over its token).
    const beyond = (mine = -Infinity, theirs = -Infinity) => mine > theirs;
    const keeps = (stored: TokenRecord | undefined) =>
      !beyond(result.token?.expiresAt, stored?.token?.expiresAt) &&
      !beyond(result.blockedUntil, stored?.blockedUntil) &&
      !beyond(result.failure?.until, stored?.failure?.until);
    if (lost) record = await storeOver(database, key, result, lastRead, keeps);
  } catch {
    // The token is paid for: stored if the database answers now (its reads failed twice), handed out, the others let in.
    await database.set(key, record).catch(() => {});
    await lease.release().catch(() => {});
  }
  return record;
}
