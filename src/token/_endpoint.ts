// Internal: the token endpoint as the provider and requestToken use it:
// every option checked once, the request body and headers built once. It
// holds the secret, so it never leaves the token modules.

import { QUOTA_HEADER } from "../core/quota.ts";
import { displayUrl, secureUrl } from "../core/_url.ts";
import { redact, type Secret } from "../core/_redact.ts";
import {
  checkNumber,
  type OptionError,
  optionError,
  requireFunction,
  requireText,
} from "../core/_check.ts";
import { base64, basicPair } from "../core/_encoding.ts";
import { type SettingNames, settingNamesOf } from "./_hint.ts";

/**
 * Options of {@linkcode requestToken}.
 *
 * @example A token server that takes form bodies only
 * ```ts
 * import { requestToken, type TokenRequestOptions } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ tokenBodyFormats: ["form"] });
 * const options: TokenRequestOptions = {
 *   tokenUrl: api.environment.tokenUrl,
 *   audience: api.environment.audience,
 *   clientId: api.credentials.clientId,
 *   clientSecret: api.credentials.clientSecret,
 *   bodyFormat: "form",
 *   timeout: 10_000,
 * };
 * ok(api.isValidToken((await requestToken(options)).accessToken));
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
  /**
   * What each setting is called where it was configured, so that a failed
   * request's `hint` names what to check in the reader's own words:
   * `configFromEnv` sets the variables' names (`PARTNER_API_CLIENT_ID`, …).
   * A setting left out is named by its option (`clientId`).
   *
   * @default {the option names}
   */
  settingNames?: {
    readonly clientId?: string;
    readonly clientSecret?: string;
    readonly audience?: string;
    readonly tokenUrl?: string;
    readonly bodyFormat?: string;
    readonly clientAuthentication?: string;
  };
}

/** Everything needed to send token requests; it holds the secret, so it never leaves the token modules. */
export interface TokenEndpoint {
  readonly url: URL;
  /** The address as shown in messages: no user info, no secret. */
  readonly where: string;
  readonly audience: string;
  readonly clientId: string;
  readonly secret: string;
  /** The secret, client id and audience, as kept out of every text (each by its name). */
  readonly secrets: readonly Secret[];
  readonly contentType: string;
  readonly body: string;
  /** The HTTP Basic `Authorization` header, with `clientAuthentication: "basic"`. */
  readonly authorization: string | undefined;
  readonly fetch: typeof fetch;
  readonly now: () => number;
  readonly quotaHeader: string;
  readonly timeout: number;
  /** What each setting is called, for hints. */
  readonly names: SettingNames;
}

const DEFAULT_TIMEOUT = 30_000;

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
  const url = tokenUrlOf(options.tokenUrl, secret, context);
  const audience = requireText(options.audience, context, "audience");
  const clientId = requireText(options.clientId, context, "clientId");
  const userFetch = requireFunction(options.fetch, context, "fetch");
  return {
    url,
    where: redact(displayUrl(url), [secret]),
    audience,
    clientId,
    secret,
    secrets: [{ secret, clientId, audience }],
    ...requestParts(options, { clientId, secret, audience }, context),
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
      "positive time in ms, at most 2147483647",
      context,
      "timeout",
    ),
    names: settingNamesOf(options.settingNames, context),
  };
}

/** The token URL, checked; a secret pasted into it stays out of the error. */
function tokenUrlOf(value: unknown, secret: string, context: string): URL {
  try {
    return secureUrl(value as string | URL, context, "tokenUrl");
  } catch (error) {
    const { message, option, rule } = error as OptionError;
    throw Object.assign(new TypeError(redact(message, [secret])), {
      option,
      rule,
    });
  }
}

/** The request's body, its type and its `Authorization`, built once. */
function requestParts(
  options: Omit<TokenRequestOptions, "signal">,
  client: { clientId: string; secret: string; audience: string },
  context: string,
): Pick<TokenEndpoint, "contentType" | "body" | "authorization"> {
  const { clientId, secret, audience } = client;
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
  return {
    contentType: form
      ? "application/x-www-form-urlencoded"
      : "application/json",
    body: form
      ? new URLSearchParams(fields).toString()
      : JSON.stringify(fields),
    authorization: basic
      ? `Basic ${base64(basicPair(clientId, secret))}`
      : undefined,
  };
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
