// Internal: the token provider. Its state is five private fields; every
// decision is `decide()` over that state and `now()`, and this class only
// carries decisions out.

import { QuotaExceededError, TokenRequestError } from "../core/errors.ts";
import type { QuotaBucket } from "../core/quota.ts";
import { SingleFlight } from "./_single_flight.ts";
import { renewalLedger } from "./_renewal.ts";
import { requestWithRetries } from "./_attempts.ts";
import { emit } from "../core/_emit.ts";
import { quotaExceeded } from "./_protocol.ts";
import {
  decide,
  FAILURE_COOLDOWN,
  flightBudget,
  newerFromRecord,
  requestBudget,
  settles,
  type TokenTimes,
  tokenTimes,
} from "./_policy.ts";
import {
  type IssuedToken,
  issuedToken,
  type QuotaSnapshot,
  quotaSnapshot,
  storableToken,
} from "./_value.ts";
import type { TokenRecord, TokenStore } from "../store/mod.ts";
import { storeKey } from "../store/_key.ts";
import type {
  GetTokenOptions,
  ProviderConfig,
  TokenProvider,
  TokenTarget,
} from "./_options.ts";

interface Cached {
  readonly token: IssuedToken;
  readonly times: TokenTimes;
  /** One settled promise per token keeps the warm path allocation-free. */
  readonly ready: Promise<IssuedToken>;
}

/** A token request's result as a record; a 429 is kept to be rethrown. */
type Request = () => Promise<TokenRecord>;

/** What a flight settled on, and whether the store already has it. */
interface Obtained {
  readonly record: TokenRecord;
  readonly saved: boolean;
}

/** The provider behind {@linkcode createTokenProvider}. */
export class CachingTokenProvider implements TokenProvider {
  readonly #config: ProviderConfig;
  readonly #now: () => number;
  readonly #budget: number;
  readonly #requestBudget: number;
  readonly #flights = new SingleFlight<IssuedToken>();
  readonly #renewal: (accessToken: string) => Promise<boolean>;
  #cached: Cached | undefined;
  #quota: QuotaSnapshot | undefined;
  #blockedUntil: number | undefined;
  /** The last token request's failure (not a 429), and until when it is repeated. */
  #failure: { readonly error: unknown; readonly until: number } | undefined;
  /** The last token invalidated: never taken back from a store. */
  #rejected: string | undefined;
  #key: Promise<string> | undefined;

  constructor(config: ProviderConfig) {
    this.#config = config;
    this.#now = config.endpoint.now;
    this.#budget = flightBudget(
      config.backoff,
      config.endpoint.timeout,
      config.store?.coordinate !== undefined,
    );
    this.#requestBudget = requestBudget(
      config.backoff,
      config.endpoint.timeout,
    );
    this.#renewal = renewalLedger(this.#now, (token) => this.invalidate(token));
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
    const cached = this.#cached;
    const now = this.#now();
    if (
      cached !== undefined && now < cached.times.refreshAt && !signal?.aborted
    ) {
      return cached.ready;
    }
    return this.#carryOut(signal, now);
  }

  /**
   * The 401 ledger, shared by every client over this provider: the first 401
   * in an hour invalidates its token; every other one keeps it. A 401 to a
   * token already replaced costs nothing: the caller retries with the new one.
   */
  reportUnauthorized(accessToken: string): Promise<boolean> {
    const current = this.#cached?.token.accessToken;
    if (current !== undefined && current !== accessToken) {
      return Promise.resolve(true);
    }
    return this.#renewal(accessToken);
  }

  async invalidate(accessToken?: string): Promise<void> {
    const target = accessToken ?? this.#cached?.token.accessToken;
    if (target === undefined) return;
    if (this.#cached?.token.accessToken === target) this.#cached = undefined;
    this.#rejected = target;
    const store = this.#config.store;
    if (store?.discard === undefined) return;
    try {
      await store.discard(await this.#storeKey(), target);
    } catch {
      // A failing store counts as empty; the token is already forgotten here.
    }
  }

  /** Carries out `decide()`; not async, so a burst of callers costs no frames. */
  #carryOut(
    signal: AbortSignal | undefined,
    now: number,
  ): Promise<IssuedToken> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const flight = this.#flights.current;
    const cached = this.#cached;
    // A burst of callers while a flight runs, with no token to serve: what
    // decide() answers ("join"), without building its state per caller.
    if (
      flight !== undefined && now < flight.deadline &&
      (cached === undefined || now >= cached.times.usableUntil)
    ) return this.#flights.join(flight, signal);
    const decision = decide({
      times: cached?.times,
      flightDeadline: flight?.deadline,
      blockedUntil: this.#blockedUntil,
      failedUntil: this.#failure?.until,
    }, now);
    switch (decision) {
      case "fresh":
        return this.#cached!.ready;
      case "refresh":
        this.#refreshInBackground(now);
        return this.#cached!.ready;
      case "join":
        return this.#flights.join(flight!, signal);
      case "blocked":
        return Promise.reject(this.#blockedError(this.#blockedUntil!));
      case "failed":
        return Promise.reject(this.#failure!.error);
      case "request":
        return this.#flights.join(this.#startFlight(now, false), signal);
    }
  }

  #startFlight(now: number, held: boolean) {
    const budget = this.#budget;
    return this.#flights.start({
      run: (signal) => this.#runFlight(signal),
      deadline: now + budget,
      budget,
      held,
      abandoned: () =>
        new TokenRequestError(
          `Cannot get token: the token request did not settle within ${budget} ms`,
          { reason: "timeout" },
        ),
      rejoin: (signal) => this.getToken(signal ? { signal } : {}),
    });
  }

  #refreshInBackground(now: number): void {
    const listener = this.#config.onEvent;
    if (listener !== undefined) {
      const expiresInMs = this.#cached!.token.expiresAt - now;
      emit(listener, { type: "token.refresh", expiresInMs });
    }
    // A background flight holds itself: no caller's abort can stop it. Its
    // failure is kept like any other (see #runFlight), and the old token served.
    const done = this.#startFlight(now, true).promise.then(() => {}, () => {});
    try {
      this.#config.waitUntil?.(done);
    } catch {
      // A runtime that refuses the promise still gets the refresh attempted.
    }
  }

  /** One flight: the store (read at most once), else one request with retries. */
  async #runFlight(signal: AbortSignal): Promise<IssuedToken> {
    let refusal: QuotaExceededError | undefined;
    const request: Request = async () => {
      try {
        return this.#tokenRecord(
          await requestWithRetries(
            this.#config,
            signal,
            () => this.#blockedUntil,
            (until) => this.#blockedError(until),
          ),
        );
      } catch (error) {
        if (!(error instanceof QuotaExceededError)) {
          this.#observeFailure(error);
          if (error instanceof TokenRequestError) {
            // Recorded before the flight settles: no caller can slip a
            // request in between.
            this.#failure = { error, until: this.#now() + FAILURE_COOLDOWN };
          }
          throw error;
        }
        refusal = error;
        return {
          blockedUntil: error.retryAt,
          ...this.#quotaRecord(error.buckets),
        };
      }
    };
    const { record, saved } = await this.#obtainRecord(request, signal);
    this.#takeRecord(record);
    if (!saved) await this.#save();
    return this.#handOut(refusal);
  }

  async #obtainRecord(
    request: Request,
    signal: AbortSignal,
  ): Promise<Obtained> {
    const store = this.#config.store;
    if (store === undefined) return { record: await request(), saved: true };
    const key = await this.#storeKey();
    if (store.coordinate !== undefined) {
      return await this.#coordinate(store, key, request, signal);
    }
    const stored = await Promise.resolve().then(() => store.get(key)).catch(
      () => undefined, // a failing store counts as empty
    );
    if (stored === undefined) return { record: await request(), saved: false };
    // Even a record due for refresh has a token to serve if the request fails.
    this.#takeRecord(stored);
    if (this.#answersNeed(stored)) return { record: stored, saved: true };
    return { record: await request(), saved: false };
  }

  /**
   * Lets a shared store coordinate the request. A store that fails after our
   * own request succeeded still yields that token; one that fails before
   * anyone asked counts as empty.
   */
  async #coordinate(
    store: TokenStore,
    key: string,
    request: Request,
    signal: AbortSignal,
  ): Promise<Obtained> {
    let asked = false;
    let own: TokenRecord | undefined;
    try {
      const record = await store.coordinate!(key, {
        settled: (record) => this.#answersNeed(record),
        request: async () => {
          asked = true;
          return own = await request();
        },
        signal,
        requestBudget: this.#requestBudget,
      });
      return { record, saved: true };
    } catch (error) {
      if (own !== undefined) return { record: own, saved: true };
      if (asked || signal.aborted) throw error;
      return { record: await request(), saved: true };
    }
  }

  /** The token to hand out after a flight, or why there is none. */
  #handOut(refusal: QuotaExceededError | undefined): IssuedToken {
    const now = this.#now();
    const cached = this.#cached;
    if (cached !== undefined && now < cached.times.usableUntil) {
      return cached.token;
    }
    if (refusal !== undefined) throw refusal;
    if (this.#blockedUntil !== undefined && now < this.#blockedUntil) {
      throw this.#blockedError(this.#blockedUntil);
    }
    // "malformed": the answer's lifetime was too short to use it.
    throw new TokenRequestError(
      "Cannot get token: the token expired before it could be handed out (was the process suspended, or is the clock wrong?)",
      { reason: "malformed" },
    );
  }

  #takeRecord(record: TokenRecord): void {
    const news = newerFromRecord(record, {
      expiresAt: this.#cached?.token.expiresAt,
      blockedUntil: this.#blockedUntil,
      quota: this.#quota,
      rejected: this.#rejected,
    }, this.#now());
    if (news.token !== undefined) {
      this.#failure = undefined;
      const token = issuedToken(news.token);
      this.#cached = {
        token,
        times: tokenTimes(token, this.#config.refreshMargin),
        ready: Promise.resolve(token),
      };
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
    try {
      this.#config.onQuota?.(this.#quota);
    } catch {
      // Documented: a failing callback must not lose a token already paid for.
    }
  }

  /** A refusal other than 429 may still report the quota (read once, by the protocol). */
  #observeFailure(error: unknown): void {
    if (error instanceof TokenRequestError && error.quota !== undefined) {
      this.#observeQuota(quotaSnapshot(error.quota, this.#now()));
    }
  }

  #tokenRecord(token: IssuedToken): TokenRecord {
    // Without a store the token is kept as built: nothing copies it.
    const kept = this.#config.store === undefined
      ? token
      : storableToken(token);
    return { token: kept, ...this.#quotaRecord(token.quota) };
  }

  #quotaRecord(buckets: readonly QuotaBucket[]): TokenRecord {
    return buckets.length === 0
      ? {}
      : { quota: quotaSnapshot(buckets, this.#now()) };
  }

  #answersNeed(record: TokenRecord): boolean {
    return settles(
      record,
      this.#now(),
      this.#config.refreshMargin,
      this.#rejected,
    );
  }

  /** Writes what this provider knows; a failing store is ignored. */
  async #save(): Promise<void> {
    const store = this.#config.store;
    if (store === undefined) return;
    const record: TokenRecord = {
      ...(this.#cached ? { token: storableToken(this.#cached.token) } : {}),
      ...(this.#quota ? { quota: this.#quota } : {}),
      ...(this.#blockedUntil === undefined
        ? {}
        : { blockedUntil: this.#blockedUntil }),
    };
    try {
      await store.set(await this.#storeKey(), record);
    } catch {
      // Documented on TokenStore: a failing store must not lose the token.
    }
  }

  #storeKey(): Promise<string> {
    return this.#key ??= storeKey(this.#config.endpoint);
  }

  #blockedError(until: number): QuotaExceededError {
    return quotaExceeded(until, this.#quota?.buckets ?? []);
  }
}
