// What the send path works with: what a client's requests share, and one request.

import type { TokenProvider } from "../token/mod.ts";
import type { AttemptLimits } from "../core/_deadlines.ts";
import type { EventListener } from "../core/events.ts";
import type { RateLimiter } from "./rate_limit.ts";
import type { RatePriority } from "../core/_rate_options.ts";
import type { RetryPolicy } from "./_policy.ts";
import type { Secret } from "../core/_redact.ts";

/** What every request of one client shares. */
export interface SendContext {
  readonly tokenProvider: TokenProvider;
  readonly fetch: typeof fetch;
  readonly retry: RetryPolicy;
  readonly deadlines: AttemptLimits;
  /** The provider's 401 ledger: whether a 401 to this token may cost a fresh one (then invalidated). */
  readonly renewAfterUnauthorized: (accessToken: string) => Promise<boolean>;
  /** Paces every attempt; `undefined` when pacing is off. */
  readonly rateLimiter: RateLimiter | undefined;
  /** The priority of calls that give none. */
  readonly priority: RatePriority;
  /** Hears every attempt, retry, renewal and wait; `undefined`: nobody. */
  readonly onEvent: EventListener | undefined;
  readonly now: () => number;
  /** What each base is called where it was configured (`settingNames`), for messages. */
  readonly baseNames: { readonly [kind in Exchange<unknown>["kind"]]: string };
  /** The credentials of its `createTokenProvider` provider: kept out of errors, as each token is. */
  readonly secrets: readonly Secret[];
}

/** One request to send. */
export interface Exchange<T> {
  /** The base the token is bound to; redirects are followed under it only. */
  readonly base: URL;
  /** Which base that is, for events. */
  readonly kind: "api" | "pci";
  readonly url: URL;
  readonly init: RequestInit;
  /** Start of error messages, e.g. "Cannot fetch". */
  readonly context: string;
  /** What must finish within the attempt's time limit (a page's body), given what its errors must not hold (built when read); an `ApiError` here is final. */
  readonly finish: (
    response: Response,
    sent: { readonly secrets: readonly Secret[] },
    attempts: number,
  ) => T | Promise<T>;
}
