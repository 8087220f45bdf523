// Internal: the token endpoint's wire protocol, oauth4webapi-style: build the
// endpoint once, *send* one request, *process* one answer. Processing is
// synchronous over a read body, so every answer shape is testable without a
// server.

import { QuotaExceededError, TokenRequestError } from "../core/errors.ts";
import { QUOTA_HEADER, type QuotaBucket } from "../core/quota.ts";
import { readQuotaBuckets } from "../core/_quota_parse.ts";
import { displayUrl, secureUrl } from "../core/_url.ts";
import {
  cleanCause,
  redact,
  type Secret,
  serverText,
} from "../core/_redact.ts";
import { retryAfterMs } from "../core/_retry.ts";
import { raceAbort, startDeadline } from "../core/_abort.ts";
import { readBounded } from "../core/_read_body.ts";
import {
  checkNumber,
  type OptionError,
  optionError,
  requireFunction,
  requireText,
} from "../core/_check.ts";
import { base64, basicPair } from "../core/_encoding.ts";
import { quotaRetryAt } from "./_policy.ts";
import {
  isAccessToken,
  type IssuedToken,
  issuedToken,
  MAX_EXPIRES_IN,
} from "./_value.ts";

/**
 * Options of {@linkcode requestToken}.
 *
 * @example Options from an environment and credentials
 * ```ts
 * import type { TokenRequestOptions } from "@partner-api/client/token";
 *
 * const options: TokenRequestOptions = {
 *   tokenUrl: "https://idp.partner.example/oauth/token",
 *   audience: "https://api.partner.example",
 *   clientId: "my-client",
 *   clientSecret: "from-a-secret-store",
 *   bodyFormat: "form",
 *   timeout: 10_000,
 * };
 * if (options.bodyFormat !== "form") throw new Error();
 * ```
 */
export interface TokenRequestOptions {
  /** The OAuth 2.0 token endpoint (https, or http on loopback). */
  tokenUrl: string | URL;
  /** The `audience` of the environment. */
  audience: string;
  /** The client id. */
  clientId: string;
  /** The client secret; it never appears in errors or logs. */
  clientSecret: string;
  /**
   * The `fetch` to send the request with; always called as a plain function.
   *
   * @default {globalThis.fetch}
   */
  fetch?: typeof fetch;
  /** Aborts the request; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * The clock, in epoch milliseconds. Every decision reads it.
   *
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * The name of the header carrying the quota.
   *
   * @default {"Idp-Client-Quota-Limit"}
   */
  quotaHeader?: string;
  /**
   * How the four fields are sent: `"json"` as the service specifies, or
   * `"form"` (`application/x-www-form-urlencoded`, RFC 6749 section 4.4.2)
   * for OAuth servers that accept only that.
   *
   * @default {"json"}
   */
  bodyFormat?: "json" | "form";
  /**
   * Time limit of one attempt in ms, until the whole answer is read.
   *
   * @default {30000}
   */
  timeout?: number;
  /**
   * How the client authenticates: `"body"` sends `client_id` and
   * `client_secret` in the body, as the service specifies; `"basic"` sends
   * them as HTTP Basic (each form-encoded first, RFC 6749 2.3.1) and leaves
   * them out of the body, for OAuth servers that accept nothing else.
   *
   * @default {"body"}
   */
  clientAuthentication?: "body" | "basic";
}

/** Everything needed to send token requests; it holds the secret, so it never leaves the token modules. */
export interface TokenEndpoint {
  readonly url: URL;
  /** The address as shown in messages: no user info, no secret. */
  readonly where: string;
  readonly audience: string;
  readonly clientId: string;
  readonly secret: string;
  /** The secret with its client id, as kept out of every text: Basic forms included. */
  readonly secrets: readonly Secret[];
  readonly contentType: string;
  readonly body: string;
  /** The HTTP Basic `Authorization` header, with `clientAuthentication: "basic"`. */
  readonly authorization: string | undefined;
  readonly fetch: typeof fetch;
  readonly now: () => number;
  readonly quotaHeader: string;
  readonly timeout: number;
}

/** The largest token answer read, in bytes; a token answer is a few hundred. */
export const MAX_TOKEN_BODY = 64 * 1024;
const DEFAULT_TIMEOUT = 30_000;
/** The lifetime of a token whose answer has no `expires_in`, in seconds. */
const DEFAULT_EXPIRES_IN = 3600;
const CONTEXT = "Cannot request token";

/**
 * Checks the options and builds the endpoint.
 *
 * @throws {TypeError} For a missing field, a bad `fetch`, `now` or
 * `bodyFormat`, or a `tokenUrl` that is not https (or http on loopback).
 * @throws {RangeError} For a `timeout` that is not a positive number.
 */
export function tokenEndpoint(
  options: Omit<TokenRequestOptions, "signal">,
  context: string,
): TokenEndpoint {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`${context}: expected an options object`);
  }
  const secret = requireText(options.clientSecret, context, "clientSecret");
  let url: URL;
  try {
    url = secureUrl(options.tokenUrl, context, "tokenUrl");
  } catch (error) {
    // The message quotes the address; a secret pasted into it stays hidden.
    const { message, option, rule } = error as OptionError;
    throw Object.assign(new TypeError(redact(message, [secret])), {
      option,
      rule,
    });
  }
  const audience = requireText(options.audience, context, "audience");
  const clientId = requireText(options.clientId, context, "clientId");
  const basic = oneOf(
    options.clientAuthentication,
    ["body", "basic"],
    context,
    "clientAuthentication",
  ) === "basic";
  const fields = {
    ...(basic ? {} : { client_id: clientId, client_secret: secret }),
    audience,
    grant_type: "client_credentials",
  };
  const form = oneOf(
    options.bodyFormat,
    ["json", "form"],
    context,
    "bodyFormat",
  ) === "form";
  const userFetch = requireFunction(options.fetch, context, "fetch");
  return {
    url,
    where: redact(displayUrl(url), [secret]),
    audience,
    clientId,
    secret,
    secrets: [{ secret, clientId }],
    contentType: form
      ? "application/x-www-form-urlencoded"
      : "application/json",
    body: form
      ? new URLSearchParams(fields).toString()
      : JSON.stringify(fields),
    authorization: basic
      ? `Basic ${base64(basicPair(clientId, secret))}`
      : undefined,
    // A plain call: some runtimes throw "Illegal invocation" for fetch
    // called as a method of another object.
    fetch: userFetch ?? ((input, init) => fetch(input, init)),
    now: requireFunction(options.now, context, "now") ?? Date.now,
    quotaHeader: requireText(
      options.quotaHeader ?? QUOTA_HEADER,
      context,
      "quotaHeader",
    ),
    timeout: checkNumber(
      options.timeout,
      DEFAULT_TIMEOUT,
      "positive finite number",
      context,
      "timeout",
    ),
  };
}

/**
 * One attempt: send, then process, within the endpoint's timeout.
 *
 * @throws {TokenRequestError} With `reason` saying what failed.
 * @throws {QuotaExceededError} For a 429.
 * @throws The signal's reason when `signal` aborts.
 */
export async function attemptTokenRequest(
  endpoint: TokenEndpoint,
  signal: AbortSignal | undefined,
): Promise<IssuedToken> {
  signal?.throwIfAborted();
  const deadline = startDeadline(endpoint.timeout, signal);
  try {
    const sentAt = endpoint.now();
    const response = await raceAbort(
      sendTokenRequest(endpoint, deadline.signal),
      deadline.signal,
      discardBody,
    );
    const text = await raceAbort(
      readTokenBody(endpoint, response),
      deadline.signal,
    );
    return processTokenAnswer(endpoint, response, text, sentAt);
  } catch (error) {
    signal?.throwIfAborted();
    if (!deadline.timedOut) throw error;
    throw new TokenRequestError(
      `${CONTEXT}: no answer from ${endpoint.where} within ${endpoint.timeout} ms`,
      { reason: "timeout", cause: deadline.signal.reason },
    );
  } finally {
    deadline.clear();
  }
}

/**
 * Sends the request. Never follows a redirect: it would carry the secret to
 * an address nobody checked.
 *
 * @throws {TokenRequestError} `reason: "network"` when no answer arrives.
 */
export async function sendTokenRequest(
  endpoint: TokenEndpoint,
  signal: AbortSignal,
): Promise<Response> {
  const send = endpoint.fetch;
  try {
    return await send(endpoint.url, {
      method: "POST",
      headers: {
        "content-type": endpoint.contentType,
        accept: "application/json",
        ...(endpoint.authorization === undefined
          ? {}
          : { authorization: endpoint.authorization }),
      },
      body: endpoint.body,
      redirect: "manual",
      signal,
    });
  } catch (error) {
    signal.throwIfAborted();
    throw new TokenRequestError(
      `${CONTEXT}: no answer from ${endpoint.where}${
        causeText(error, endpoint)
      }`,
      { reason: "network", cause: cleanCause(error, endpoint.secrets) },
    );
  }
}

/**
 * Reads at most {@linkcode MAX_TOKEN_BODY} bytes of the answer, and refuses a
 * larger one without reading the rest.
 *
 * @throws {TokenRequestError} `"malformed"` when too large, `"network"` when cut off.
 */
export async function readTokenBody(
  endpoint: TokenEndpoint,
  response: Response,
): Promise<string> {
  let text: string | undefined;
  try {
    text = await readBounded(response, MAX_TOKEN_BODY);
  } catch (error) {
    // No `status`: an answer cut off is a network failure, and retried as one.
    throw new TokenRequestError(
      `${CONTEXT}: the answer from ${endpoint.where} (HTTP ${response.status}) was cut off${
        causeText(error, endpoint)
      }`,
      {
        reason: "network",
        cause: cleanCause(error, endpoint.secrets),
        response,
      },
    );
  }
  if (text === undefined) {
    throw new TokenRequestError(
      `${CONTEXT}: the answer from ${endpoint.where} is larger than ${MAX_TOKEN_BODY} bytes`,
      { status: response.status, reason: "malformed", response },
    );
  }
  return text;
}

/**
 * Turns a read answer into a token, or into the error it means.
 *
 * @throws {QuotaExceededError} For a 429.
 * @throws {TokenRequestError} `"status"` for another non-2xx answer,
 * `"malformed"` for a 2xx answer without a usable bearer token.
 */
export function processTokenAnswer(
  endpoint: TokenEndpoint,
  response: Response,
  text: string,
  sentAt: number,
): IssuedToken {
  const quota = readQuotaBuckets(response.headers.get(endpoint.quotaHeader));
  if (!response.ok) throw refusal(endpoint, response, text, quota);
  const malformed = (problem: string) =>
    new TokenRequestError(
      `${CONTEXT}: the answer from ${endpoint.where} ${problem}`,
      { status: response.status, reason: "malformed", response },
    );
  const body = parseJson(text);
  if (typeof body !== "object" || body === null) throw malformed("is not JSON");
  const { access_token: accessToken, expires_in, token_type } = body as Record<
    string,
    unknown
  >;
  if (!isAccessToken(accessToken)) {
    // Never quoted: it may be a real token with a stray character.
    throw malformed("has no access_token of visible ASCII characters");
  }
  const expiresIn = lifetime(expires_in);
  if (!(expiresIn >= 1) || expiresIn > MAX_EXPIRES_IN) {
    throw malformed(`has no expires_in from 1 to ${MAX_EXPIRES_IN} seconds`);
  }
  if (typeof token_type !== "string" || token_type.toLowerCase() !== "bearer") {
    throw malformed("has a token_type other than Bearer");
  }
  return issuedToken({
    accessToken,
    tokenType: "Bearer",
    expiresIn,
    expiresAt: sentAt + expiresIn * 1000,
    quota,
  });
}

/**
 * The one builder of {@linkcode QuotaExceededError}: for a 429 just received
 * and for a block still in force.
 */
export function quotaExceeded(
  retryAt: number,
  buckets: readonly QuotaBucket[],
  details: {
    status?: number;
    code?: string;
    description?: string;
    response?: Response;
  } = {},
): QuotaExceededError {
  const said = [details.code, details.description].filter(Boolean).join(": ");
  return new QuotaExceededError(
    `Cannot get token: quota exceeded until ${
      new Date(retryAt).toISOString()
    }; no token request is sent before then${said ? ` (${said})` : ""}`,
    {
      status: 429,
      code: "too_many_requests",
      ...details,
      buckets,
      retryAt,
    },
  );
}

function refusal(
  endpoint: TokenEndpoint,
  response: Response,
  text: string,
  quota: readonly QuotaBucket[],
): TokenRequestError {
  const status = response.status;
  const oauth = oauthError(parseJson(text), endpoint.secrets);
  if (status === 429) {
    const now = endpoint.now();
    const retryAt = quotaRetryAt(
      retryAfterMs(response.headers, now),
      quota,
      now,
    );
    return quotaExceeded(retryAt, quota, { ...oauth, response });
  }
  const said = [oauth.code, oauth.description].filter(Boolean).join(": ");
  return new TokenRequestError(
    `${CONTEXT}: the token endpoint answered ${status}${
      said ? ` ${said}` : ""
    }`,
    { status, ...oauth, reason: "status", response },
  );
}

function oauthError(
  body: unknown,
  secrets: readonly Secret[],
): { code?: string; description?: string } {
  if (typeof body !== "object" || body === null) return {};
  const { error, error_description: description } = body as Record<
    string,
    unknown
  >;
  return {
    ...(typeof error === "string" ? { code: serverText(error, secrets) } : {}),
    ...(typeof description === "string"
      ? { description: serverText(description, secrets) }
      : {}),
  };
}

function causeText(error: unknown, endpoint: TokenEndpoint): string {
  const message = error instanceof Error ? error.message : String(error);
  return message === "" ? "" : ` (${serverText(message, endpoint.secrets)})`;
}

/** Cancels the body of an answer that arrived after the caller gave up. */
function discardBody(response: Response): void {
  response.body?.cancel().catch(() => {});
}

/**
 * `expires_in` as seconds: a number, or a string of digits (several OAuth
 * servers send `"3599"`); absent (optional in RFC 6749 5.1) means an hour.
 * Anything else is `NaN`, which no range check accepts.
 */
function lifetime(value: unknown): number {
  if (value === undefined) return DEFAULT_EXPIRES_IN;
  if (typeof value === "number") return value;
  return typeof value === "string" && /^[0-9]{1,9}$/.test(value)
    ? Number(value)
    : NaN;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** An option that is one of `values`; the first is the default. */
function oneOf<T extends string>(
  value: unknown,
  values: readonly T[],
  context: string,
  option: string,
): T {
  if (value === undefined) return values[0]!;
  if (values.includes(value as T)) return value as T;
  throw optionError(
    TypeError,
    context,
    option,
    `must be ${values.map((v) => `"${v}"`).join(" or ")}`,
    String(value),
  );
}
