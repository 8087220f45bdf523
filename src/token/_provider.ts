// Internal: the token provider. It carries out pure decisions over its state
// and `now()`: `decide()` (_policy.ts) for getToken, `unauthorizedVerdict()` for a 401.

import { QuotaExceededError, TokenRequestError } from "../core/errors.ts";
import type { QuotaBucket } from "../core/quota.ts";
import { SingleFlight } from "./_single_flight.ts";
import { LocalTimes, steadyClock, turnClock } from "../core/_clock.ts";
import { callListener, emit } from "../core/_emit.ts";
import { noteHanded } from "../core/_redact.ts";
import { quotaExceeded, requestWithRetries } from "./_protocol.ts";
import { given, tried, typeError } from "../core/_check.ts";
import { TokenCache } from "./_token_cache.ts";
import {
  decide,
  flightBudget,
  newerFromRecord,
  requestBudget,
  seenHere,
  settles,
  tokenTimes,
} from "./_policy.ts";
import {
  expiredOnArrival,
  failureRecord,
  flightAbandoned,
  forWay,
  repeatedFailure,
} from "./_failure.ts";
import {
  freshestToken,
  type LedgerToken,
  ledgerToken,
  renewedRecord,
  tokenFingerprint,
  unauthorizedVerdict,
} from "./ledger.ts";
import {
  type IssuedToken,
  issuedToken,
  type QuotaSnapshot,
  quotaSnapshot,
  storableToken,
} from "../core/token_values.ts";
import type {
  TokenFailure,
  TokenRecord,
  TokenRenewal,
} from "../store/types.ts";
import {
  laterOf,
  type StoreAccess,
  type TokenRequest,
} from "../store/token_access.ts";
import type { ProviderConfig } from "./_endpoint.ts";
import type { GetTokenOptions, TokenProvider, TokenTarget } from "./types.ts";

/** The provider behind {@linkcode createTokenProvider}. */
export class CachingTokenProvider implements TokenProvider {
  readonly #config: ProviderConfig;
  readonly #now: () => number;
  readonly #budget: number;
  readonly #flights = new SingleFlight<IssuedToken>();
  readonly #cache: TokenCache;
  #quota: QuotaSnapshot | undefined;
  #blockedUntil: number | undefined;
  /** The last failed token request (not a 429): its cooldown, and its error when it was ours. */
  #failure:
    | { readonly cooldown: TokenFailure; readonly error?: TokenRequestError }
    | undefined;
  /** A refusal of another way the store held when last read: one of this way after it is the fleet's, of both. */
  #otherWay: TokenFailure | undefined;
  /** The last 401 renewal this provider knows of (its own, or the fleet's). */
  #renewal: TokenRenewal | undefined;
  /** The last token dropped after a 401: never taken back from a store. */
  #rejected: LedgerToken | undefined;
  readonly #store: StoreAccess;
  /** The clock for getToken's first decision: read once per turn. */
  readonly #turnNow: () => number;
  /** The cooldowns, blocks and renewals this provider set, read on the steady clock: a step back holds nobody. */
  readonly #local: LocalTimes;
  /** Flight deadlines' clock (read as wall times at `now` for decide()): a wall clock's step starts no second request. */
  readonly #steady: () => number;

  constructor(config: ProviderConfig, store: StoreAccess) {
    this.#config = config;
    this.#store = store;
    this.#turnNow = turnClock(config.endpoint.now);
    this.#now = config.endpoint.now;
    this.#local = new LocalTimes(this.#now);
    this.#steady = turnClock(this.#now, steadyClock(this.#now));
    this.#cache = new TokenCache(this.#now, this.#steady, config.refreshMargin);
    const { backoff, endpoint } = config;
    const coordinating = config.store?.coordinate !== undefined;
    this.#budget = flightBudget(backoff, endpoint.timeout, coordinating);
  }

  get quota(): QuotaSnapshot | undefined {
    return this.#quota;
  }

  get target(): TokenTarget {
    const { url, audience } = this.#config.endpoint;
    return { tokenUrl: url.href, audience };
  }

  getToken(options?: GetTokenOptions): Promise<IssuedToken> {
    const signal = options?.signal;
    // Else each join would fail on it and join again, for ever.
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      const rule = "must be an AbortSignal";
      return Promise.reject(typeError("Cannot get token", "signal", rule));
    }
    const now = this.#turnNow();
    const cached = this.#cache.at(now);
    if (cached === undefined) {
      // A burst of cold callers joins the flight without a call each.
      const flight = this.#flights.current;
      if (
        signal === undefined && flight !== undefined &&
        this.#steady() < flight.deadline
      ) return this.#flights.join(flight, undefined);
    } else if (now < cached.times.refreshAt && !signal?.aborted) {
      return cached.ready;
    }
    return this.#carryOut(signal, now);
  }

  /** The 401 ledger, kept where the token lives (the fleet's record, else here): see `unauthorizedVerdict()`. */
  async reportUnauthorized(accessToken: string): Promise<boolean> {
    const cached = this.#cache.held?.token;
    // Already replaced here: retrying with the new token costs nothing.
    if (cached !== undefined && cached.accessToken !== accessToken) return true;
    const refused = ledgerToken(accessToken, cached, this.#rejected);
    const now = this.#now();
    let verdict: "retry" | "renew" | "keep" = "keep";
    const judge = (record: TokenRecord | undefined) => {
      const known = laterOf(this.#renewal, record?.renewal, ({ at }) => at);
      const renewal = this.#local.readIn(known, "at", now);
      const stored = record?.token;
      const mine = this.#cache.held?.token;
      const current = freshestToken(stored, mine, this.#rejected);
      verdict = unauthorizedVerdict({ renewal, current, stored }, refused, now);
      return verdict === "renew"
        ? renewedRecord(record, refused, this.#local.mark(now, now))
        : undefined;
    };
    const record = await this.#store.change(judge, () => this.#record());
    if (record !== undefined) this.#takeRecord(record);
    if (verdict === "keep") return false;
    this.#cache.drop(accessToken);
    this.#rejected = refused;
    return true;
  }

  /** Drops `accessToken` (or the current token) through the same ledger as a 401. */
  async invalidate(accessToken?: string): Promise<void> {
    const target = accessToken ?? this.#cache.held?.token.accessToken;
    if (target !== undefined) await this.reportUnauthorized(target);
  }

  /** Carries out `decide()`; not async, so a burst of callers costs no frames. */
  #carryOut(signal: AbortSignal | undefined, now: number) {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const flight = this.#flights.current;
    const cached = this.#cache.held;
    const flightDeadline = flight && now + flight.deadline - this.#steady();
    // What decide() would answer ("join"), without building its state per caller.
    if (
      flightDeadline !== undefined && now < flightDeadline &&
      (cached === undefined || now >= cached.times.usableUntil)
    ) return this.#flights.join(flight!, signal);
    const blockedUntil = this.#local.read(this.#blockedUntil, now);
    const decision = decide({
      times: cached?.times,
      flightDeadline,
      blockedUntil,
      failedUntil: this.#local.read(this.#failure?.cooldown.until, now),
    }, now);
    switch (decision) {
      case "fresh":
        return cached!.ready;
      case "refresh":
        this.#refreshInBackground(now);
        return cached!.ready;
      case "join":
        return this.#flights.join(flight!, signal);
      case "blocked":
        // From this read of the block: a second read of the steady clock may find it over.
        return Promise.reject(this.#blockedAt(now, blockedUntil));
      case "failed":
        return Promise.reject(this.#failureError());
      case "request":
        return this.#flights.join(this.#startFlight(), signal);
    }
  }

  #startFlight() {
    return this.#flights.start({
      run: (signal) => this.#runFlight(signal),
      deadline: this.#steady() + this.#budget,
      budget: this.#budget,
      abandoned: () => flightAbandoned(this.#budget),
      rejoin: (signal) => this.getToken(signal ? { signal } : {}),
    });
  }

  #refreshInBackground(now: number): void {
    const listener = this.#config.onEvent;
    if (listener !== undefined) {
      const expiresInMs = this.#cache.held!.expiresAt - now;
      emit(listener, { type: "token.refresh", expiresInMs });
    }
    // Its failure is kept like any other; the old token is served meanwhile.
    const done = this.#startFlight().promise.then(() => {}, () => {});
    // A runtime that refuses the promise still gets the refresh attempted.
    tried(() => this.#config.waitUntil?.(done));
  }

  /** One flight: the store (read once, and again as a request's answer is stored over it), else one request with retries. */
  async #runFlight(signal: AbortSignal): Promise<IssuedToken> {
    const { backoff, endpoint } = this.#config;
    // The request's own refusal or failure (one request a flight), rethrown when no token comes.
    let thrown: TokenRequestError | undefined;
    const attempt: TokenRequest = async () => {
      try {
        const token = await requestWithRetries(
          endpoint,
          this.#config,
          signal,
          (now) => {
            this.#cache.attempting();
            return this.#blockedAt(now);
          },
        );
        if (this.#now() >= tokenTimes(token, undefined).usableUntil) {
          // Too late to use (slow, or suspended): a failure that cools the fleet down (else a token a call).
          thrown = expiredOnArrival();
          return { ...this.#failed(thrown), ...this.#quotaRecord(token.quota) };
        }
        this.#failure = this.#otherWay = undefined;
        this.#cache.requested(token);
        // Without a store the token is kept as built: nothing copies it.
        const kept = !this.#store.present ? token : storableToken(token);
        return { token: kept, ...this.#quotaRecord(token.quota) };
      } catch (error) {
        if (!(error instanceof TokenRequestError)) throw error;
        thrown = error;
        if (error instanceof QuotaExceededError) {
          return {
            blockedUntil: this.#local.mark(error.retryAt, this.#now()),
            ...this.#quotaRecord(error.buckets),
          };
        }
        return this.#failed(error);
      }
    };
    // The fleet's 401 ledger goes with every record this provider writes.
    const request: TokenRequest = async () =>
      given({ ...await attempt(), renewal: this.#renewal });
    const { record, saved } = await this.#store.obtain(request, signal, {
      answeredBy: (record) => this.#answersNeed(record),
      take: (record) => this.#takeRecord(record),
      requestBudget: requestBudget(backoff, endpoint.timeout),
    });
    this.#takeRecord(record);
    if (!saved) await this.#store.save(this.#record());
    return await this.#handOut(thrown);
  }

  /** A failed request's record: its cooldown, kept before the flight settles (none slips in), and for the fleet. */
  #failed(error: TokenRequestError): TokenRecord {
    const at = this.#now();
    // A refusal other than 429 may still report the quota (read once, by the protocol).
    if (error.quota) this.#observeQuota(quotaSnapshot(error.quota, at));
    // Escalated by the time really passed since the last ended (a step forward passes none); after another way's
    // refusal too (both ways refused: one cooldown for the fleet).
    const earlier = [this.#failure?.cooldown, this.#otherWay].map((failure) =>
      this.#local.readIn(failure, "until", at, "onSteady")
    );
    const cooldown = failureRecord(error, earlier, this.#config, at);
    if (cooldown === undefined) throw error; // never sent: no permission
    this.#local.mark(cooldown.until, at);
    // Copied now: a caller may change the one it gets (a handler's status); later callers' copies stay true.
    const kept = repeatedFailure(cooldown, error, this.#config.endpoint);
    this.#failure = { cooldown, error: kept };
    return { failure: cooldown };
  }

  /** The token to hand out after a flight, or why there is none. */
  async #handOut(thrown: TokenRequestError | undefined): Promise<IssuedToken> {
    const now = this.#now();
    const cached = this.#cache.moved(now);
    if (cached !== undefined && now < cached.times.usableUntil) {
      return cached.token;
    }
    if (thrown !== undefined) throw thrown;
    const blocked = this.#blockedAt(now);
    if (blocked !== undefined) throw blocked;
    // Another process's failure, read from the store: its cooldown holds here.
    const failedUntil = this.#local.read(this.#failure?.cooldown.until, now);
    if (now < (failedUntil ?? -Infinity)) throw this.#failureError();
    // Its lifetime ran out on the way (the store's round trips too): a failure that cools down.
    const late = expiredOnArrival();
    this.#failed(late);
    await this.#store.save(this.#record()); // the fleet's cooldown too
    throw late;
  }

  #takeRecord(stored: TokenRecord): void {
    const now = this.#now();
    const record = this.#seenHere(stored, now);
    this.#otherWay = forWay(stored, this.#config.endpoint.way).otherWay;
    const news = newerFromRecord(record, {
      expiresAt: this.#cache.held?.expiresAt,
      blockedUntil: this.#blockedUntil,
      quota: this.#quota,
      rejected: this.#rejected?.accessToken,
      failure: this.#failure?.cooldown,
      renewal: this.#renewal,
    }, now);
    this.#renewal = news.renewal;
    if (news.failure !== this.#failure?.cooldown) {
      this.#failure = news.failure && { cooldown: news.failure };
    }
    if (news.token !== undefined) {
      this.#cache.take(issuedToken(news.token), now);
      noteHanded(this, news.token.accessToken); // before a client of it sends it: a refused path hides it
    }
    const listener = this.#config.onEvent;
    const blocked = news.blockedUntil;
    if (
      listener !== undefined && blocked !== undefined &&
      blocked !== this.#blockedUntil && blocked > this.#now()
    ) emit(listener, { type: "quota.blocked", retryAt: blocked });
    this.#blockedUntil = blocked;
    if (news.quota !== undefined) this.#observeQuota(news.quota);
  }

  #observeQuota(quota: QuotaSnapshot): void {
    this.#quota = quotaSnapshot(quota.buckets, quota.observedAt);
    if (this.#config.onQuota) callListener(this.#config.onQuota, this.#quota);
  }

  #quotaRecord(buckets: readonly QuotaBucket[]): TokenRecord {
    return buckets.length === 0
      ? {}
      : { quota: quotaSnapshot(buckets, this.#now()) };
  }

  /** Whether `record` answers the need, its block's and cooldown's end as this process's own read them (on its steady clock). */
  #answersNeed(stored: TokenRecord): boolean {
    const now = this.#now();
    const record = this.#seenHere(stored, now);
    const blockedUntil = this.#local.read(record.blockedUntil, now);
    const failure = this.#local.readIn(record.failure, "until", now);
    const read = { ...record, ...given({ blockedUntil, failure }) };
    const { refreshMargin } = this.#config;
    return settles(read, now, refreshMargin, this.#rejected?.accessToken);
  }

  /**
   * A stored record as this provider reads it: its own token's times as moved here, a cooldown of its way only. The
   * token refused here, stored under the fleet's renewal of it, came back (an endpoint caching tokens): taken again.
   */
  #seenHere(stored: TokenRecord, now: number): TokenRecord {
    const refused = this.#rejected?.accessToken;
    const { token, renewal } = stored;
    if (
      refused !== undefined && token?.accessToken === refused &&
      renewal?.token === tokenFingerprint(refused)
    ) this.#rejected = undefined;
    const { record } = forWay(stored, this.#config.endpoint.way);
    return seenHere(record, this.#cache.moved(now));
  }

  /** The quota block's refusal while it lasts at `now` (`until`: its end, as read). */
  #blockedAt(now: number, until = this.#local.read(this.#blockedUntil, now)) {
    return now < (until ?? -Infinity)
      ? quotaExceeded(until!, this.#quota?.buckets ?? [])
      : undefined;
  }

  /** The cooldown's failure, as an error of the caller's own. */
  #failureError(): TokenRequestError {
    const { cooldown, error } = this.#failure!;
    return repeatedFailure(cooldown, error, this.#config.endpoint);
  }

  /** What this provider knows, as a record to store. */
  #record(): TokenRecord {
    return given({
      token: this.#cache.held && storableToken(this.#cache.held.token),
      quota: this.#quota,
      blockedUntil: this.#blockedUntil,
      failure: this.#failure?.cooldown,
      renewal: this.#renewal,
    });
  }
}
