// Internal: the token a provider holds, read on two clocks (`timesAfterStep()`): a step of the wall clock never makes
// an expired token usable.

import { type CachedToken, timesAfterStep, tokenTimes } from "./_policy.ts";
import { tokenFingerprint } from "./ledger.ts";
import { readsMonotoneClock } from "../core/_clock.ts";
import type { IssuedToken } from "../core/token_values.ts";

/**
 * The steady expiry of each token this process's providers requested, by fingerprint: another provider taking it from
 * a store shared in the process reads it as the requester does, not from a wall clock that may have stepped back.
 */
const SENT = new Map<string, number>();

/** The cached token of one provider, and the steady expiries of those it requested. */
export class TokenCache {
  #cached: CachedToken | undefined;
  /** When the warm path last looked at the clocks, on the wall clock. */
  #lookedAt = -Infinity;
  /** The token of this provider's last request, by fingerprint, and its expiry on the steady clock. */
  #sent: { readonly fingerprint: string; readonly at: number } | undefined;
  /** The steady clock as the last token attempt was sent. */
  #attemptAt = -Infinity;
  readonly #steady: () => number;
  readonly #refreshMargin: number | undefined;
  /** Its steady clock is the process's monotone one, which every provider on the system's clocks shares. */
  readonly #shared: boolean;

  constructor(
    now: () => number,
    steady: () => number,
    refreshMargin: number | undefined,
  ) {
    this.#steady = steady;
    this.#refreshMargin = refreshMargin;
    this.#shared = readsMonotoneClock(now);
  }

  /** The token held, as last looked at. */
  get held(): CachedToken | undefined {
    return this.#cached;
  }

  /** For getToken's warm path: looked at once a wall-clock second, so it reads no second clock in between. */
  at(now: number): CachedToken | undefined {
    if (now >= this.#lookedAt && now < this.#lookedAt + 1_000) {
      return this.#cached;
    }
    this.#lookedAt = now;
    return this.moved(now);
  }

  /** The token held, its times where the clocks put them now: each flight's checks read it. */
  moved(now: number): CachedToken | undefined {
    const cached = this.#cached;
    return this.#cached = cached && timesAfterStep(cached, now, this.#steady());
  }

  /** Holds `token`: the steady expiry of one requested here (or in this process), else its wall one read `now`. */
  take(token: IssuedToken, now: number): void {
    const fingerprint = tokenFingerprint(token.accessToken);
    const own = this.#sent?.fingerprint === fingerprint
      ? this.#sent.at
      : undefined;
    const sent = own ?? (this.#shared ? SENT.get(fingerprint) : undefined);
    const steady = this.#steady();
    const cached = {
      token,
      times: tokenTimes(token, this.#refreshMargin),
      ready: Promise.resolve(token),
      expiresAt: token.expiresAt,
      steadyExpiresAt: sent ?? steady + token.expiresAt - now,
    };
    this.#cached = timesAfterStep(cached, now, steady);
  }

  /** Drops the token held if it is `accessToken`. */
  drop(accessToken: string): void {
    if (this.#cached?.token.accessToken === accessToken) {
      this.#cached = undefined;
    }
  }

  /** Called as each token attempt is sent, where its wall-clock expiry starts: the steady one starts there too. */
  attempting(): void {
    this.#attemptAt = this.#steady();
  }

  /** Notes `token`, brought by this provider's request: its steady expiry counts from its attempt's sending, never later. */
  requested(token: IssuedToken): void {
    // Retries come first: the lifetime counts from the attempt that brought it (attempting() was called as it went).
    const sentAt = this.#attemptAt;
    const at = sentAt + token.expiresIn * 1000;
    const fingerprint = tokenFingerprint(token.accessToken);
    this.#sent = { fingerprint, at };
    if (this.#shared) {
      // For the process's other providers, dropping those past (at most one per live token).
      for (const [key, until] of SENT) if (until <= sentAt) SENT.delete(key);
      SENT.set(fingerprint, at);
    }
  }
}
