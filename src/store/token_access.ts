// A token provider's way to its store (for src/token): the key, one read or coordinated request per
// flight, atomic changes, writes. A failing store counts as empty and never costs a token.

import type {
  CoordinateOptions,
  TokenFailure,
  TokenRecord,
  TokenRenewal,
  TokenStore,
} from "./types.ts";
import {
  isIssuedToken,
  isTime,
  type QuotaSnapshot,
} from "../core/token_values.ts";
import type { QuotaBucket } from "../core/quota_types.ts";
import { storeKey } from "./_key.ts";
import { fieldsOf } from "../core/_check.ts";
import { answerWithin } from "../core/_deadlines.ts";

/** What the key of a client's record is made of; it holds the secret. */
export type StoreClient = Parameters<typeof storeKey>[0] & {
  readonly now: () => number;
};

/** A token request's result as a record; a 429 or a failure is kept to be rethrown. */
export type TokenRequest = () => Promise<TokenRecord>;

/** What a provider's flight needs of a record, for `StoreAccess.obtain`. */
export interface TokenNeed {
  /** Whether a stored record answers the need without a request. */
  answeredBy(record: TokenRecord): boolean;
  /** Takes what a stored record knows, even when it does not answer the need. */
  take(record: TokenRecord): void;
  /** The longest one token request may take, in ms. */
  readonly requestBudget: number;
}

/** One provider's access to its store (or to none). */
export class StoreAccess {
  readonly #store: TokenStore | undefined;
  readonly #endpoint: StoreClient;
  #key: Promise<string> | undefined;

  constructor(store: TokenStore | undefined, endpoint: StoreClient) {
    this.#store = store;
    this.#endpoint = endpoint;
    // The key's slow part (PBKDF2 under 32 characters, tens of ms) starts now, beside the process's start-up: a cold
    // start's first answer waits only for what is left of it.
    if (store !== undefined) this.key().catch(() => {});
  }

  get present(): boolean {
    return this.#store !== undefined;
  }

  /** The store's record if it answers the provider's `need` for a token, else the record of one request (coordinated where the store can); and whether the store already has it. */
  async obtain(
    request: TokenRequest,
    signal: AbortSignal,
    need: TokenNeed,
  ): Promise<{ readonly record: TokenRecord; readonly saved: boolean }> {
    const store = this.#store;
    if (store === undefined) return { record: await request(), saved: true };
    const key = await this.key();
    const shared = store.coordinate !== undefined;
    // A plain store is read once: a record due for refresh still has a token to serve if the request fails.
    const coordinate = store.coordinate?.bind(store) ??
      ((key: string, { settled, request }: CoordinateOptions) =>
        answered(() => store.get(key)).then((stored) =>
          stored !== undefined && settled(stored) ? stored : request()
        ));
    // One request a flight, however often a store's coordinate asks.
    let requested: Promise<TokenRecord> | undefined;
    const ask = () => requested ??= request();
    let accepted = false;
    const options: CoordinateOptions = {
      settled: (record) => {
        // What it knows counts even if it does not answer: its token if the request fails, its ledger.
        const known = this.#trusted(record) ?? {};
        need.take(known);
        return accepted = need.answeredBy(known);
      },
      request: ask,
      signal,
      requestBudget: need.requestBudget,
    };
    try {
      let record = await coordinate(key, options);
      const answers = () => need.answeredBy(this.#trusted(record) ?? {});
      // Settled on, it stopped answering on its way back (a block ended): asked again, the request goes through it.
      if (accepted && requested === undefined && !answers()) {
        record = await coordinate(key, options);
      }
      const trusted = this.#trusted(record) ?? {};
      if (need.answeredBy(trusted)) {
        return { record: trusted, saved: shared || requested === undefined };
      }
      // A record that does not settle: the request's own, or a coordinate that broke its contract (no record settled,
      // no request answered), which counts as a failing store.
      const asked = requested !== undefined;
      return { record: await ask(), saved: shared && asked };
    } catch (error) {
      // A failing store counts as empty, and one that fails once the request was sent (while it runs too) still
      // yields what the request brings: the token paid for, or its own typed failure.
      if (requested !== undefined) {
        return { record: await requested, saved: shared };
      }
      if (signal.aborted) throw error;
      return { record: await request(), saved: shared };
    }
  }

  /** Changes the record atomically where the store can; else over the provider's own `local` one. */
  async change(
    change: (record: TokenRecord | undefined) => TokenRecord | undefined,
    local: () => TokenRecord,
  ): Promise<TokenRecord | undefined> {
    const store = this.#store;
    if (store !== undefined) {
      try {
        const key = await this.key();
        if (store.update !== undefined) {
          let called = false;
          const updated = await answered(() =>
            store.update!(key, (record) => {
              called = true;
              return change(this.#trusted(record));
            })
          );
          if (called) return this.#trusted(updated); // else it broke its contract: a failing store
        } else {
          const stored = this.#trusted(await answered(() => store.get(key)));
          const next = change(stored);
          if (next !== undefined) await answered(() => store.set(key, next));
          return next ?? stored;
        }
      } catch {
        // A failing store counts as empty: what this provider knows decides.
      }
    }
    return change(local());
  }

  /** Writes `record`; a failing store is ignored (it must not lose the token). */
  async save(record: TokenRecord): Promise<void> {
    const store = this.#store;
    if (store === undefined) return;
    await this.key().then((key) => answered(() => store.set(key, record)))
      .catch(() => {});
  }

  key(): Promise<string> {
    return this.#key ??= storeKey(this.#endpoint);
  }

  /** What of a stored record this provider may act on at its `now` (right shape, plausible times); the rest counts as absent. */
  #trusted(value: unknown): TokenRecord | undefined {
    const record = fieldsOf(value);
    if (record === undefined) return undefined;
    const { token, quota, blockedUntil, failure, renewal } = record;
    const latest = this.#endpoint.now() + FLEET_CLOCK_SLACK;
    return {
      ...(isIssuedToken(token) &&
        token.expiresAt <= latest + token.expiresIn * 1000 && {
        // Its quota unread where an entry is no bucket (a store that mangled it): the token is still good.
        token: isBuckets(token.quota) ? token : { ...token, quota: [] },
      }),
      // A reading dated ahead (another clock, or garbage) would hide every later real one.
      ...(isQuotaSnapshot(quota) && quota.observedAt <= latest && { quota }),
      ...(isTime(blockedUntil) && { blockedUntil }),
      ...(isFailure(failure) && { failure: wayKept(failure) }),
      ...(isRenewal(renewal) && renewal.at <= latest && { renewal }),
    };
  }
}

/**
 * How long one plain store call (get, set, update) may take, in ms: past it the store counts as failing (as empty), and
 * holds no caller and loses no token paid for (`coordinate` has the flight's budget: a holder may take that long).
 */
const STORE_WAIT = 5000;
const STORE_LATE = "the token store did not answer in time";

/** The store's answer, or a failure once STORE_WAIT passed. */
function answered<T>(call: () => Promise<T>): Promise<T> {
  return answerWithin(call, STORE_WAIT, STORE_LATE);
}

/** How far the clocks of a fleet's processes may differ, in ms. */
export const FLEET_CLOCK_SLACK = 5 * 60_000;

/** The later of `mine` and `theirs` by `time` (`mine` when as late, else the one given): of two failures or renewals. */
export function laterOf<T>(
  mine: T | undefined,
  theirs: T | undefined,
  time: (value: T) => number,
): T | undefined {
  if (theirs === undefined) return mine;
  return mine === undefined || time(theirs) > time(mine) ? theirs : mine;
}

function isQuotaSnapshot(value: unknown): value is QuotaSnapshot {
  const { buckets, observedAt } = fieldsOf(value) ?? {};
  return isTime(observedAt) && isBuckets(buckets);
}

function isBuckets(value: unknown): value is QuotaBucket[] {
  return Array.isArray(value) && value.every((entry) => {
    const { bucket, limit, remaining, resetAfter } = fieldsOf(entry) ?? {};
    return typeof bucket === "string" && isTime(limit) &&
      isTime(remaining) && isTime(resetAfter);
  });
}

const FAILURE_REASONS = new Set(["network", "timeout", "status", "malformed"]);

function isFailure(value: unknown): value is TokenFailure {
  const { until, failures, reason, status, code } = fieldsOf(value) ?? {};
  return isTime(until) && isTime(failures) && failures >= 1 &&
    FAILURE_REASONS.has(reason as string) &&
    (status === undefined || isTime(status)) &&
    (code === undefined || typeof code === "string");
}

/** The failure without a `sentAs` that is no text: it then holds every way, as one written before there was any. */
function wayKept({ sentAs, ...failure }: TokenFailure): TokenFailure {
  return typeof sentAs === "string" ? { ...failure, sentAs } : failure;
}

function isRenewal(value: unknown): value is TokenRenewal {
  const { at, expiresAt, token } = fieldsOf(value) ?? {};
  return isTime(at) && isTime(expiresAt) && typeof token === "string";
}
