// Internal: a failed token request: what it tells its reader to check (settings by their configured names and the
// URL requested, never a credential's value), its cooldown, and how the cooldown repeats it to callers.

import {
  TokenRequestError,
  type TokenRequestErrorInit,
} from "../core/errors.ts";
import { retryAfterMs } from "../core/_attempt_loop.ts";
import type { TokenFailure, TokenRecord } from "../store/types.ts";
import { cooldownAfter, MAX_COOLDOWN } from "./_policy.ts";
import type { ProviderConfig, TokenEndpoint } from "./_endpoint.ts";
import { isPermissionError, netPermissionFix } from "../core/_cause.ts";
import { given } from "../core/_check.ts";

/** What a hint is made from: the endpoint's names, address and audience, never its secret. */
type HintSource = Pick<TokenEndpoint, "names" | "where" | "url" | "audience">;

/** What to check after this failure (a refused permission first, as the flag); none when no setting can help. */
export function tokenHint(
  source: HintSource,
  failure: Pick<TokenRequestErrorInit, "reason" | "status" | "cause">,
): string | undefined {
  const { names, where } = source;
  const { reason, status } = failure;
  if (reason === "network") {
    return isPermissionError(failure.cause)
      ? netPermissionFix(source.url, `${names.tokenUrl}'s host`)
      : `check ${names.tokenUrl} (${where}) and the network`;
  }
  if (reason === "malformed") {
    return `check that ${names.tokenUrl} (${where}) is an OAuth 2.0 token endpoint`;
  }
  if (reason !== "status" || status === undefined) return undefined;
  if (status === 401 || status === 403) {
    return `check ${names.clientId}, ${names.clientSecret} and ${names.audience}, and that ${names.tokenUrl} is this environment's${
      otherEnvironment(source)
    }`;
  }
  if (status === 404 || status === 405 || status === 410) {
    return `nothing takes token requests at POST ${where}: check ${names.tokenUrl}`;
  }
  if (status === 400 || status === 415) {
    return `check ${names.bodyFormat} (json or form) and ${names.clientAuthentication} (body or basic): this server may want the request sent another way`;
  }
  return undefined;
}

/** Words that mark a host or audience as a test environment's. */
const TEST_ENVIRONMENT =
  /(?:^|[^a-z])(?:sandbox|staging|stage|test|testing|dev|uat|qa|preprod)(?:[^a-z]|$)/i;

/** When the audience and token URL look like a sandbox's and production's: such credentials fail like a wrong secret. */
function otherEnvironment(source: HintSource): string {
  const kind = (text: string) =>
    TEST_ENVIRONMENT.test(text) ? "a sandbox's" : "production's";
  const audience = kind(source.audience);
  const host = kind(source.url.hostname);
  if (audience === host) return "";
  return `; ${source.names.audience} looks like ${audience} and ${source.names.tokenUrl} like ${host}: are they from one environment, and the credentials too?`;
}

/** Each cooldown caller's own copy of the failure (none can change another's), from the record if remote. */
export function repeatedFailure(
  failure: TokenFailure,
  original: TokenRequestError | undefined,
  endpoint: HintSource,
): TokenRequestError {
  // Its fields and a copy of its cause; not its response, which stays with the first caller.
  if (original !== undefined) {
    return new TokenRequestError(original.message, {
      ...original,
      cause: copied(original.cause),
    });
  }
  const { reason, status, code } = failure;
  const hint = tokenHint(endpoint, failure);
  // "status 401", not "status, status 401" (the reason a status is).
  const answer = status === undefined
    ? reason
    : `${reason === "status" ? "" : `${reason}, `}status ${status}`;
  const way = failure.sentAs === undefined ? "" : ` as ${failure.sentAs}`;
  return new TokenRequestError(
    `Cannot get token: a token request of this client failed (${answer}); none is sent${way} before ${
      new Date(failure.until).toISOString()
    }${hint === undefined ? "" : `: ${hint}`}`,
    { reason, ...given({ status, code, hint }) },
  );
}

/** A copy of `cause`, its class and own fields (no getter runs): a caller changing its cause changes no other's. */
function copied(cause: unknown): unknown {
  if (cause === null || typeof cause !== "object") return cause;
  const fields = Object.getOwnPropertyDescriptors(cause);
  return Object.defineProperties(
    Object.create(Object.getPrototypeOf(cause)),
    fields,
  );
}

/**
 * The failure to keep after `error`, its cooldown escalated from the latest of the `earlier` ones (the provider's own,
 * another way's refusal from the store). None for a request the runtime refused (no permission): never sent, it needs
 * no rest, and a fleet must not wait for one process's missing flag.
 */
export function failureRecord(
  error: TokenRequestError,
  earlier: readonly (TokenFailure | undefined)[],
  { endpoint: { way }, backoff: { maxRetryAfter } }: ProviderConfig,
  now: number,
): TokenFailure | undefined {
  if (isPermissionError(error.cause)) return undefined;
  const { status = 0, response } = error;
  const retryAfter = response !== undefined && (status === 403 || status >= 500)
    ? retryAfterMs(response.headers, now)
    : undefined;
  const known = earlier.filter((failure) => failure !== undefined);
  const [previous] = known.toSorted((a, b) => b.until - a.until);
  return {
    ...cooldownAfter(previous, retryAfter, maxRetryAfter, now),
    reason: error.reason as TokenFailure["reason"],
    ...given({ status: error.status, code: error.code }),
    ...given({ sentAs: refusedWay(status, way, known, now) }),
  };
}

/**
 * The way a refusal holds: its own after a 400 or 415, unless it follows another way's within the escalation's reach:
 * then every way (the record keeps one cooldown: per way, processes sending by turns overwrote each other's).
 */
function refusedWay(
  status: number,
  way: string,
  earlier: readonly TokenFailure[],
  now: number,
): string | undefined {
  if (!refusesWay(status)) return undefined;
  const bothRefused = earlier.some((failure) =>
    refusesWay(failure.status) && failure.sentAs !== way &&
    now - failure.until < MAX_COOLDOWN
  );
  return bothRefused ? undefined : way;
}

/** A 400 or 415: the server refused how the request was asked (its hint names the body format and authentication). */
function refusesWay(status: number | undefined): boolean {
  return status === 400 || status === 415;
}

/**
 * `record` as a provider sending `way` reads it, and the refusal it does not heed: a 400's or 415's of another way
 * (following the hint, a user changes the way; a fleet member configured apart is not held by another's mistake).
 */
export function forWay(record: TokenRecord, way: string) {
  const { failure, ...rest } = record;
  const sentAs = failure?.sentAs;
  return sentAs !== undefined && sentAs !== way && refusesWay(failure!.status)
    ? { record: rest, otherWay: failure }
    : { record, otherWay: undefined };
}

/** A token whose lifetime ran out before it could be handed out (a slow answer, a suspended process): too short to use. */
export const expiredOnArrival = () =>
  new TokenRequestError(
    "Cannot get token: the token expired before it could be handed out (was the process suspended, or is the clock wrong?)",
    { reason: "malformed" },
  );

/** A flight that did not settle within its `budget` (ms): given up on, its callers fail. */
export const flightAbandoned = (budget: number) =>
  new TokenRequestError(
    `Cannot get token: the token request did not settle within ${budget} ms`,
    { reason: "timeout" },
  );
