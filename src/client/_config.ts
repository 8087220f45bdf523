// A client's options, checked: its own environment copy, token provider, pacing and 401 ledger.

import { defineEnvironment, type Environment } from "../core/environment.ts";
import { createTokenProvider } from "../token/mod.ts";
import { backoffFrom, timeoutFrom } from "../core/_attempt_loop.ts";
import { renewalLedger } from "../token/ledger.ts";
import {
  fieldsOf,
  type OptionError,
  optionNames,
  rangeError,
  requireClock,
  requireFunction,
  requireKnownOptions,
  settingNamesOf,
  typeError,
} from "../core/_check.ts";
import { createRateLimiter } from "./rate_limit.ts";
import {
  checkPriority,
  RATE_LIMIT_OPTIONS,
  SERVICE_RATE_LIMIT,
} from "../core/_rate_options.ts";
import type { RateLimit, RateLimiter } from "../core/rate_limiter.ts";
import type { ClientOptions } from "./options.ts";
import { SharedDeadlines } from "../core/_deadlines.ts";
import { providerSecrets } from "../core/_redact.ts";
import { secretOutOfChecks } from "../core/_option_secrets.ts";

const CONTEXT = "Cannot create client";
/** The bases a client sends to, named in messages as `settingNames` says (by default as these options). */
const BASES = ["baseUrl", "pciBaseUrl"] as const;

const CLIENT_OPTIONS = optionNames<ClientOptions>()(
  "environment tokenProvider clientId clientSecret fetch timeout retry random now rateLimit priority onEvent settingNames quotaHeader bodyFormat clientAuthentication store refreshMargin onQuota waitUntil dangerouslyAllowBrowser",
);

const ENVIRONMENT_FIELD =
  "is the environment's: give it whole, as 'environment' (a provider takes its fields spread in; a client does not)";
/** Keys refused with what to write instead: the names of 0.1, and an environment's fields spread in. */
const INSTEAD: Record<string, string> = {
  requestTimeout: "is now 'timeout'",
  maxRetryAfter: "is now 'retry.maxRetryAfter'",
  baseUrl: ENVIRONMENT_FIELD,
  pciBaseUrl: ENVIRONMENT_FIELD,
  tokenUrl: ENVIRONMENT_FIELD,
  audience: ENVIRONMENT_FIELD,
};

/** The client's checked options: its own environment and what sending needs. */
export function clientConfig(options: ClientOptions) {
  // Its secret, and its provider's: a key may be either (both given are refused below).
  const { clientSecret, tokenProvider } = fieldsOf(options) ?? {};
  const held = providerSecrets.get(fieldsOf(tokenProvider) ?? {});
  const secret = held?.find((s) => typeof s === "object")?.secret;
  return secretOutOfChecks(clientSecret, () =>
    secretOutOfChecks(secret, () => {
      requireKnownOptions(options, CLIENT_OPTIONS, CONTEXT, "options", INSTEAD);
      return checkedConfig(options);
    }));
}

/** The checks past the option names. */
function checkedConfig(options: ClientOptions) {
  const environment = ownEnvironment(options.environment);
  const now = requireClock(options.now, CONTEXT) ?? Date.now;
  const random = requireFunction(options.random, CONTEXT, "random") ??
    Math.random;
  const rateLimiter = rateLimiterOf(options.rateLimit, now);
  const timeout = timeoutWithin(options.timeout, rateLimiter?.hold);
  // The client's own options first: a provider made below may start work (a store's key).
  const own = {
    fetch: requireFunction(options.fetch, CONTEXT, "fetch") ??
      ((input: RequestInfo | URL, init?: RequestInit) => fetch(input, init)),
    retry: { backoff: backoffFrom(options.retry, CONTEXT), random },
    /** Paces every attempt; `undefined` when pacing is off. */
    rateLimiter,
    /** The priority of calls that give none. */
    priority: checkPriority(options.priority, "auto", CONTEXT),
    /** Hears every attempt, retry, renewal and wait; `undefined`: nobody. */
    onEvent: requireFunction(options.onEvent, CONTEXT, "onEvent"),
    /** What each base is called where it was configured (`settingNames`), for messages. */
    baseNames: settingNamesOf(options.settingNames, BASES, CONTEXT),
  };
  const tokenProvider = tokenProviderOf(options, environment);
  return {
    environment,
    context: {
      ...own,
      tokenProvider,
      deadlines: new SharedDeadlines(timeout, now),
      /** Whether a 401 to this token may cost a fresh one: its provider's ledger, else the client's own. */
      renewAfterUnauthorized:
        typeof tokenProvider.reportUnauthorized === "function"
          ? (token: string) => tokenProvider.reportUnauthorized!(token)
          : renewalLedger(now, (token) => tokenProvider.invalidate(token)),
      now,
      /** The credentials of its `createTokenProvider` provider: kept out of errors, as each token is. */
      secrets: providerSecrets.get(tokenProvider) ?? [],
    },
  };
}

/** A copy made by `defineEnvironment`'s own rules: nobody can move it later. */
function ownEnvironment(environment: Environment): Environment {
  if (typeof environment !== "object" || environment === null) {
    const kind = environment === null ? "null" : typeof environment; // not its text: any length
    const rule = "must come from defineEnvironment()";
    throw typeError(CONTEXT, "environment", rule, kind);
  }
  try {
    return defineEnvironment({ ...environment });
  } catch (error) {
    // Its field and rule as the client's (`environment.baseUrl`), as code reading `option` and `rule` expects.
    const { option, rule, message } = error as Partial<OptionError>;
    if (option === undefined || rule === undefined) throw error; // a getter's own
    const received = message?.split(": received ")[1];
    throw typeError(CONTEXT, `environment.${option}`, rule, received);
  }
}

function tokenProviderOf(options: ClientOptions, environment: Environment) {
  const {
    environment: _,
    rateLimit: _pacing,
    priority: _priority,
    tokenProvider,
    clientId,
    clientSecret,
    ...settings
  } = options;
  const hasCredentials = clientId !== undefined || clientSecret !== undefined;
  // One of the two, never both.
  if (hasCredentials === (tokenProvider !== undefined)) {
    const credentials = "'clientId' and 'clientSecret'";
    const rule = hasCredentials
      ? `must not be given with ${credentials}`
      : `or ${credentials} must be given`;
    throw typeError(CONTEXT, "tokenProvider", rule);
  }
  if (tokenProvider !== undefined) {
    for (const method of ["getToken", "invalidate"] as const) {
      if (typeof tokenProvider[method] !== "function") {
        throw typeError(CONTEXT, "tokenProvider", `must have ${method}()`);
      }
    }
    const own = Object.keys(settings).find((key) => !CLIENT_OWN.has(key));
    const rule = "is a provider option: give it to createTokenProvider";
    if (own !== undefined) throw typeError(CONTEXT, own, rule);
    // A production provider in a sandbox client would send its token to sandbox hosts.
    const { target } = tokenProvider;
    if (
      target !== undefined && (target.tokenUrl !== environment.tokenUrl.href ||
        target.audience !== environment.audience)
    ) {
      // Fields for code, the addresses in the message for people.
      throw typeError(
        CONTEXT,
        "tokenProvider",
        "must be for the environment's token URL and audience",
        `a provider for ${target.tokenUrl} (audience ${target.audience}); the environment's are ${environment.tokenUrl.href} (audience ${environment.audience})`,
      );
    }
    return tokenProvider;
  }
  // Every other option is the provider's too: one vocabulary for both.
  return createTokenProvider({
    ...settings,
    environment,
    clientId: clientId as string,
    clientSecret: clientSecret as string,
  });
}

/** Options the client itself reads, also beside a provider of the caller's (`settingNames`: the bases' names). */
const CLIENT_OWN = new Set(
  "settingNames fetch timeout retry random now onEvent".split(" "),
);

/** The `timeout`, at most the limiter's `hold`: a slower answer would come after its slot was let go. */
function timeoutWithin(given: number | undefined, hold: number | undefined) {
  const timeout = timeoutFrom(given, CONTEXT);
  if (hold === undefined || timeout <= hold) return timeout;
  const rule =
    `must be at most ${hold} with this rateLimit: it counts a request never answered for ${hold} ms at most`;
  throw rangeError(CONTEXT, "timeout", rule, String(timeout));
}

/** The client's pacing: a limiter given, one made from a limit, or none. */
function rateLimiterOf(
  rateLimit: ClientOptions["rateLimit"],
  now: () => number,
): RateLimiter | undefined {
  if (rateLimit === false) return undefined;
  const methods = ["take", "answered", "refused"] as const;
  const limiter = rateLimit as Partial<RateLimiter> | undefined;
  const held = methods.filter((name) => typeof limiter?.[name] === "function");
  if (held.length === methods.length) return limiter as RateLimiter;
  // Some only: a limiter missing a method failed once a request had gone out.
  if (held.length > 0) {
    const rule = "must have take, answered and refused, as a RateLimiter has";
    throw typeError(CONTEXT, "rateLimit", rule);
  }
  if (rateLimit !== undefined) {
    requireKnownOptions(rateLimit, RATE_LIMIT_OPTIONS, CONTEXT, "rateLimit");
  }
  return createRateLimiter({
    ...(rateLimit as RateLimit | undefined ?? SERVICE_RATE_LIMIT),
    now,
  });
}
