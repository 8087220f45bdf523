/**
 * OAuth 2.0 client-credentials tokens for the partner API: one request with
 * {@linkcode requestToken}, or a caching, single-flight, quota-aware
 * {@linkcode createTokenProvider} for a service.
 *
 * @example Getting a token from a provider
 * ```ts
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi();
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials });
 * const token = await provider.getToken();
 * const again = await provider.getToken();
 * if (token !== again || api.tokenRequests !== 1) throw new Error("not cached");
 * ```
 *
 * @module
 */

import { QuotaExceededError, TokenRequestError } from "./errors.ts";
import {
  parseQuotaHeader,
  QUOTA_HEADER,
  type QuotaBucket,
  quotaResetAfter,
} from "./quota.ts";
import { displayUrl, secureUrl } from "./_url.ts";
import { type Backoff, backoffDelay, delay, retryAfterMs } from "./_retry.ts";
import { redact } from "./_redact.ts";
import { checkNumber } from "./_check.ts";

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
 *   signal: AbortSignal.timeout(10_000),
 * };
 * if (options.signal === undefined) throw new Error();
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
   * The `fetch` to send the request with.
   *
   * @default {globalThis.fetch}
   */
  fetch?: typeof fetch;
  /** Aborts the request; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * The clock, in epoch milliseconds.
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
}

/**
 * A token as issued: a frozen object with data properties. When inspected
 * (`console.log`, `Deno.inspect`, `node:util` `inspect`) it shows
 * `accessToken` as `[redacted]`.
 *
 * @example Sending a token
 * ```ts
 * import type { IssuedToken } from "@partner-api/client/token";
 *
 * function authorization(token: IssuedToken): string {
 *   return `${token.tokenType} ${token.accessToken}`;
 * }
 * const token: IssuedToken = { accessToken: "abc", tokenType: "Bearer", expiresIn: 60, expiresAt: 0, quota: [] };
 * if (authorization(token) !== "Bearer abc") throw new Error();
 * ```
 */
export interface IssuedToken {
  /** The bearer token for the `Authorization` header. */
  readonly accessToken: string;
  /** Always `"Bearer"`. */
  readonly tokenType: "Bearer";
  /** Lifetime in seconds, as the server said. */
  readonly expiresIn: number;
  /** Epoch ms of expiry, counted from when the request was sent. */
  readonly expiresAt: number;
  /** The quota the answer reported; `[]` when absent or unreadable. */
  readonly quota: readonly QuotaBucket[];
}

/**
 * The quota as last seen, and when.
 *
 * @example How old a quota reading is
 * ```ts
 * import type { QuotaSnapshot } from "@partner-api/client/token";
 *
 * const seen: QuotaSnapshot = { buckets: [], observedAt: Date.now() - 5000 };
 * if (Date.now() - seen.observedAt < 5000) throw new Error();
 * ```
 */
export interface QuotaSnapshot {
  /** The buckets, in header order. */
  readonly buckets: readonly QuotaBucket[];
  /** Epoch ms (from the provider's clock) when they were read. */
  readonly observedAt: number;
}

/**
 * What a {@linkcode TokenStore} keeps for one client: a frozen object.
 *
 * @example A record after a 429
 * ```ts
 * import type { TokenRecord } from "@partner-api/client/token";
 *
 * const blocked: TokenRecord = { blockedUntil: Date.now() + 60_000 };
 * if (blocked.token !== undefined) throw new Error();
 * ```
 */
export interface TokenRecord {
  /** The current token, if any. */
  readonly token?: IssuedToken;
  /** The last quota seen. */
  readonly quota?: QuotaSnapshot;
  /** Epoch ms before which no token request may be sent (after a 429). */
  readonly blockedUntil?: number;
}

/**
 * Where a provider keeps its token, so that several providers (or processes,
 * with a shared store) use one token. Keys never contain the secret. A store
 * that fails is treated as empty: reads that throw count as misses, writes
 * that throw are ignored, so a paid-for token is never lost to it.
 *
 * @example A store on a Map, as one on Redis would look
 * ```ts
 * import type { TokenRecord, TokenStore } from "@partner-api/client/token";
 *
 * const records = new Map<string, TokenRecord>();
 * const store: TokenStore = {
 *   get: (key) => Promise.resolve(records.get(key)),
 *   set: (key, record) => Promise.resolve(void records.set(key, record)),
 *   delete: (key) => Promise.resolve(void records.delete(key)),
 * };
 * await store.set("k", { blockedUntil: 1 });
 * if ((await store.get("k"))?.blockedUntil !== 1) throw new Error();
 * ```
 */
export interface TokenStore {
  /** Reads the record under `key`. */
  get(key: string): Promise<TokenRecord | undefined>;
  /** Replaces the record under `key`. */
  set(key: string, record: TokenRecord): Promise<void>;
  /** Removes the record under `key`. */
  delete(key: string): Promise<void>;
  /**
   * Optional: makes the processes sharing the store send one token request
   * between them. The provider calls it when it needs a new token; it returns
   * a stored record that `settled` accepts (another process's token, or its
   * quota block), or else the record of `request()`, which it stores before
   * letting any other process look. Without it, the provider requests
   * directly and stores the result with `set`.
   */
  coordinate?(key: string, options: CoordinateOptions): Promise<TokenRecord>;
}

/**
 * What {@linkcode TokenStore.coordinate} is given.
 *
 * @example The simplest coordination: always request
 * ```ts
 * import type { CoordinateOptions, TokenRecord } from "@partner-api/client/token";
 *
 * async function coordinate(_key: string, { settled, request }: CoordinateOptions): Promise<TokenRecord> {
 *   const stored: TokenRecord | undefined = undefined; // read it from the shared store
 *   return stored !== undefined && settled(stored) ? stored : await request();
 * }
 * const record = await coordinate("k", {
 *   settled: () => false,
 *   request: () => Promise.resolve({ blockedUntil: 1 }),
 *   signal: new AbortController().signal,
 * });
 * if (record.blockedUntil !== 1) throw new Error();
 * ```
 */
export interface CoordinateOptions {
  /** Whether a record answers the need: a token fresh enough, or a quota block in force. */
  settled(record: TokenRecord): boolean;
  /**
   * Sends one token request (with the provider's retries). Resolves with the
   * token's record, or after a 429 with a record of the quota block.
   */
  request(): Promise<TokenRecord>;
  /** Aborts when nobody waits for the token any more. */
  signal: AbortSignal;
}

/**
 * Retry policy for network errors, 408 and 5xx answers.
 *
 * @example Retrying harder at start-up
 * ```ts
 * import type { RetryOptions } from "@partner-api/client/token";
 *
 * const retry: RetryOptions = { retries: 5, initialDelay: 200, maxDelay: 5000 };
 * if (retry.retries !== 5) throw new Error();
 * ```
 */
export interface RetryOptions {
  /**
   * Retries after the first attempt.
   *
   * @default {2}
   */
  retries?: number;
  /**
   * Delay before the first retry in ms; doubles each time, with jitter.
   *
   * @default {500}
   */
  initialDelay?: number;
  /**
   * Longest wait in ms; a `Retry-After` asking for more ends the retries.
   *
   * @default {10000}
   */
  maxDelay?: number;
}

/**
 * Options of {@linkcode createTokenProvider}.
 *
 * @example A provider with a shorter margin and no retries
 * ```ts
 * import { createTokenProvider, type TokenProviderOptions } from "@partner-api/client/token";
 *
 * const options: TokenProviderOptions = {
 *   tokenUrl: "https://idp.partner.example/oauth/token",
 *   audience: "https://api.partner.example",
 *   clientId: "my-client",
 *   clientSecret: "from-a-secret-store",
 *   refreshMargin: 60_000,
 *   retry: false,
 * };
 * createTokenProvider(options); // sends nothing until getToken()
 * ```
 */
export interface TokenProviderOptions
  extends Omit<TokenRequestOptions, "signal"> {
  /**
   * Where tokens are kept.
   *
   * @default {none: the token lives in this provider only}
   */
  store?: TokenStore;
  /**
   * How long before expiry, in ms, a new token is fetched in the background
   * while the old one is still served. Never more than half the lifetime.
   *
   * @default {5 minutes, or a tenth of the lifetime when that is less}
   */
  refreshMargin?: number;
  /**
   * Retries of failed token requests, or `false` for none.
   *
   * @default {{ retries: 2, initialDelay: 500, maxDelay: 10000 }}
   */
  retry?: RetryOptions | false;
  /**
   * Time limit of one token request attempt, in ms.
   *
   * @default {30000}
   */
  requestTimeout?: number;
  /**
   * Called with every quota the token endpoint reports, e.g. to alert when
   * `remaining` runs low. What it throws is ignored, so that a token already
   * paid for is not lost.
   */
  onQuota?: (quota: QuotaSnapshot) => void;
  /**
   * The random source for retry jitter, in [0, 1).
   *
   * @default {Math.random}
   */
  random?: () => number;
  /**
   * Allows a provider in a browser page, where anyone can read the client
   * secret. Never set it for a real secret.
   *
   * @default {false}
   */
  dangerouslyAllowBrowser?: boolean;
}

/**
 * Options of {@linkcode TokenProvider.getToken}.
 *
 * @example Giving up after a second
 * ```ts
 * import type { GetTokenOptions } from "@partner-api/client/token";
 *
 * const options: GetTokenOptions = { signal: AbortSignal.timeout(1000) };
 * if (options.signal === undefined) throw new Error();
 * ```
 */
export interface GetTokenOptions {
  /** Stops waiting; a request other callers still wait for goes on. */
  signal?: AbortSignal;
}

/**
 * A cache of one client's token. Holds no secret that inspection can see.
 *
 * @example Renewing a token the API rejected
 * ```ts
 * import { createTokenProvider, type TokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi();
 * const provider: TokenProvider = createTokenProvider({ ...api.environment, ...api.credentials });
 * const first = await provider.getToken();
 * await provider.invalidate(first.accessToken); // e.g. after a 401
 * if ((await provider.getToken()).accessToken === first.accessToken) throw new Error();
 * ```
 */
export interface TokenProvider {
  /**
   * A token that is valid now: the cached one, or a new one.
   *
   * @throws {QuotaExceededError} When a new token is needed before the quota resets.
   * @throws {TokenRequestError} When the token request fails.
   */
  getToken(options?: GetTokenOptions): Promise<IssuedToken>;
  /**
   * Drops `accessToken` (or the current token when omitted), e.g. after the
   * API answered 401, so that the next {@linkcode TokenProvider.getToken}
   * fetches a new one. A token that was already replaced is left alone.
   */
  invalidate(accessToken?: string): Promise<void>;
  /** The last quota the token endpoint reported, if any. */
  readonly quota: QuotaSnapshot | undefined;
}

const DEFAULT_BACKOFF: Backoff = Object.freeze({
  retries: 2,
  initialDelay: 500,
  maxDelay: 10_000,
});
const DEFAULT_REFRESH_MARGIN = 5 * 60_000;
const DEFAULT_REQUEST_TIMEOUT = 30_000;
const MAX_SKEW_GUARD = 2_000;
const BACKGROUND_RETRY_WINDOW = 10_000;
const QUOTA_FALLBACK_WAIT = 60_000;
const REDACTED = "[redacted]";

const INSPECT_DENO = Symbol.for("Deno.customInspect");
const INSPECT_NODE = Symbol.for("nodejs.util.inspect.custom");

type Inspect = (value: unknown, options?: unknown) => string;

function redactedView(token: IssuedToken): Record<string, unknown> {
  return { ...token, accessToken: REDACTED };
}

function issuedToken(fields: IssuedToken): IssuedToken {
  const token = {
    accessToken: fields.accessToken,
    tokenType: "Bearer" as const,
    expiresIn: fields.expiresIn,
    expiresAt: fields.expiresAt,
    quota: Object.freeze(
      fields.quota.map((bucket) => Object.freeze({ ...bucket })),
    ),
  };
  Object.defineProperties(token, {
    [INSPECT_DENO]: {
      value: (inspect: Inspect, options: unknown) =>
        `IssuedToken ${inspect(redactedView(token), options)}`,
    },
    [INSPECT_NODE]: {
      value: (_depth: number, options: unknown, inspect: Inspect) =>
        `IssuedToken ${inspect(redactedView(token), options)}`,
    },
  });
  return Object.freeze(token);
}

function requireText(value: unknown, context: string, field: string): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(
      `${context}: '${field}' must be a non-empty string: received ${
        value === "" ? '""' : typeof value
      }`,
    );
  }
  return value;
}

function requireFunction<T>(
  value: T | undefined,
  fallback: T,
  context: string,
  field: string,
): T {
  if (value === undefined) return fallback;
  if (typeof value !== "function") {
    throw new TypeError(
      `${context}: '${field}' must be a function: received ${typeof value}`,
    );
  }
  return value;
}

/** Everything needed to send token requests; it holds the secret, so it never leaves this module. */
interface TokenEndpoint {
  readonly url: URL;
  readonly audience: string;
  readonly clientId: string;
  readonly body: string;
  readonly secret: string;
  readonly fetch: typeof fetch;
  readonly now: () => number;
  readonly quotaHeader: string;
}

function tokenEndpoint(
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
    throw new TypeError(redact((error as Error).message, [secret]));
  }
  const audience = requireText(options.audience, context, "audience");
  const clientId = requireText(options.clientId, context, "clientId");
  return {
    url,
    audience,
    clientId,
    secret,
    body: JSON.stringify({
      client_id: clientId,
      client_secret: secret,
      audience,
      grant_type: "client_credentials",
    }),
    fetch: requireFunction(options.fetch, globalThis.fetch, context, "fetch"),
    now: requireFunction(options.now, Date.now, context, "now"),
    quotaHeader: requireText(
      options.quotaHeader ?? QUOTA_HEADER,
      context,
      "quotaHeader",
    ),
  };
}

const REQUEST_CONTEXT = "Cannot request token";

function readQuota(headers: Headers, name: string): QuotaBucket[] {
  try {
    return parseQuotaHeader(headers.get(name));
  } catch {
    // A garbled quota header must not cost the caller a token it paid for.
    return [];
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function oauthError(
  body: unknown,
  secret: string,
): { code?: string; description?: string } {
  if (typeof body !== "object" || body === null) return {};
  const { error, error_description: description } = body as Record<
    string,
    unknown
  >;
  return {
    ...(typeof error === "string" ? { code: redact(error, [secret]) } : {}),
    ...(typeof description === "string"
      ? { description: redact(description, [secret]) }
      : {}),
  };
}

function refusal(
  endpoint: TokenEndpoint,
  response: Response,
  text: string,
): TokenRequestError {
  const status = response.status;
  const oauth = oauthError(parseJson(text), endpoint.secret);
  const reason = [oauth.code, oauth.description].filter(Boolean).join(": ");
  const init = { status, ...oauth, response };
  if (status === 429) {
    const buckets = readQuota(response.headers, endpoint.quotaHeader);
    const resetAfter = quotaResetAfter(buckets);
    const wait = retryAfterMs(response.headers) ??
      (resetAfter === undefined ? QUOTA_FALLBACK_WAIT : resetAfter * 1000);
    const retryAt = endpoint.now() + wait;
    return new QuotaExceededError(
      `${REQUEST_CONTEXT}: quota exceeded until ${
        new Date(retryAt).toISOString()
      }${reason ? ` (${reason})` : ""}`,
      { ...init, buckets, retryAt },
    );
  }
  return new TokenRequestError(
    `${REQUEST_CONTEXT}: the token endpoint answered ${status}${
      reason ? ` ${reason}` : ""
    }`,
    init,
  );
}

function grantedToken(
  response: Response,
  text: string,
  sentAt: number,
  quota: QuotaBucket[],
): IssuedToken {
  const fail = (problem: string) =>
    new TokenRequestError(
      `${REQUEST_CONTEXT}: the token endpoint's answer ${problem}`,
      { status: response.status, response },
    );
  const body = parseJson(text);
  if (typeof body !== "object" || body === null) throw fail("is not JSON");
  const { access_token: accessToken, expires_in: expiresIn, token_type } =
    body as Record<string, unknown>;
  if (typeof accessToken !== "string" || accessToken === "") {
    throw fail("has no access_token");
  }
  if (
    typeof expiresIn !== "number" || !Number.isFinite(expiresIn) ||
    expiresIn <= 0
  ) {
    throw fail("has no positive expires_in");
  }
  if (typeof token_type !== "string" || token_type.toLowerCase() !== "bearer") {
    throw fail("has a token_type other than Bearer");
  }
  return issuedToken({
    accessToken,
    tokenType: "Bearer",
    expiresIn,
    expiresAt: sentAt + expiresIn * 1000,
    quota,
  });
}

async function sendTokenRequest(
  endpoint: TokenEndpoint,
  signal: AbortSignal | undefined,
): Promise<IssuedToken> {
  signal?.throwIfAborted();
  const sentAt = endpoint.now();
  const where = displayUrl(endpoint.url);
  let response: Response;
  let text: string;
  try {
    response = await endpoint.fetch(endpoint.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json",
      },
      body: endpoint.body,
      // A redirect would carry the secret to an address nobody checked.
      redirect: "manual",
      ...(signal === undefined ? {} : { signal }),
    });
  } catch (error) {
    signal?.throwIfAborted();
    throw new TokenRequestError(
      `${REQUEST_CONTEXT}: no answer from ${where}`,
      { cause: error },
    );
  }
  try {
    text = await response.text();
  } catch (error) {
    signal?.throwIfAborted();
    // No `status`: an answer cut off is a network failure, and retried as one.
    throw new TokenRequestError(
      `${REQUEST_CONTEXT}: the answer from ${where} (HTTP ${response.status}) was cut off`,
      { cause: error, response },
    );
  }
  if (!response.ok) throw refusal(endpoint, response, text);
  return grantedToken(
    response,
    text,
    sentAt,
    readQuota(response.headers, endpoint.quotaHeader),
  );
}

/**
 * Sends one client-credentials token request: no cache, no retry.
 *
 * @param options Token endpoint, audience, credentials, and optionally
 * `fetch`, `signal`, `now` and the quota header's name.
 * @returns The token, with its expiry and the quota the answer reported.
 * @throws {TypeError} Before any request, when an option is invalid (e.g. a
 * plain-http `tokenUrl` outside loopback).
 * @throws {QuotaExceededError} When the endpoint answers 429.
 * @throws {TokenRequestError} For any other failure: network, a non-2xx
 * answer, or an answer without a usable bearer token.
 *
 * @example Requesting a token from the fake service
 * ```ts
 * import { requestToken } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
 * const token = await requestToken({ ...api.environment, ...api.credentials });
 * if (token.quota[0]?.remaining !== 9) throw new Error("quota not read");
 * ```
 */
export async function requestToken(
  options: TokenRequestOptions,
): Promise<IssuedToken> {
  const endpoint = tokenEndpoint(options, REQUEST_CONTEXT);
  return await sendTokenRequest(endpoint, options.signal);
}

/**
 * Creates a token store that lives in this process's memory. A provider
 * without a store keeps its token to itself; pass one store to several
 * providers to share their token.
 *
 * @returns An empty store.
 *
 * @example Two providers sharing one token
 * ```ts
 * import { createMemoryTokenStore, createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi();
 * const store = createMemoryTokenStore();
 * const options = { ...api.environment, ...api.credentials, store };
 * await createTokenProvider(options).getToken();
 * await createTokenProvider(options).getToken();
 * if (api.tokenRequests !== 1) throw new Error("not shared");
 * ```
 */
export function createMemoryTokenStore(): TokenStore {
  const records = new Map<string, TokenRecord>();
  return {
    get: (key) => Promise.resolve(records.get(key)),
    set: (key, record) => {
      records.set(key, Object.freeze({ ...record }));
      return Promise.resolve();
    },
    delete: (key) => {
      records.delete(key);
      return Promise.resolve();
    },
  };
}

function isBrowserPage(): boolean {
  return "document" in globalThis && !("Deno" in globalThis) &&
    !("process" in globalThis);
}

const PROVIDER_CONTEXT = "Cannot create token provider";

function nonNegative(
  value: number | undefined,
  fallback: number,
  field: string,
): number {
  return checkNumber(
    value,
    fallback,
    "non-negative finite number",
    PROVIDER_CONTEXT,
    field,
  );
}

function backoffFrom(retry: RetryOptions | false | undefined): Backoff {
  if (retry === false) return { ...DEFAULT_BACKOFF, retries: 0 };
  const given = retry ?? {};
  const backoff = {
    retries: checkNumber(
      given.retries,
      DEFAULT_BACKOFF.retries,
      "non-negative integer",
      PROVIDER_CONTEXT,
      "retries",
    ),
    initialDelay: nonNegative(
      given.initialDelay,
      DEFAULT_BACKOFF.initialDelay,
      "initialDelay",
    ),
    maxDelay: nonNegative(given.maxDelay, DEFAULT_BACKOFF.maxDelay, "maxDelay"),
  };
  return backoff;
}

/** Runtimes refuse a request they lack permission for with these; retrying cannot help. */
const PERMISSION_ERRORS = new Set(["NotCapable", "PermissionDenied"]);

function isRetryable(error: unknown): error is TokenRequestError {
  if (!(error instanceof TokenRequestError)) return false;
  if (error instanceof QuotaExceededError) return false;
  if (PERMISSION_ERRORS.has((error.cause as Error | undefined)?.name ?? "")) {
    return false;
  }
  const status = error.status;
  return status === undefined || status === 408 || status >= 500;
}

/** When a token stops being handed out and when its refresh starts. */
interface TokenTimes {
  readonly usableUntil: number;
  readonly refreshAt: number;
}

function tokenTimes(
  token: IssuedToken,
  refreshMargin: number | undefined,
): TokenTimes {
  const lifetime = token.expiresIn * 1000;
  const usableUntil = token.expiresAt -
    Math.min(MAX_SKEW_GUARD, lifetime / 20);
  const margin = Math.min(
    refreshMargin ?? Math.min(DEFAULT_REFRESH_MARGIN, lifetime / 10),
    lifetime / 2,
  );
  return {
    usableUntil,
    refreshAt: Math.min(usableUntil, token.expiresAt - margin),
  };
}

function isIssuedToken(value: unknown): value is IssuedToken {
  if (typeof value !== "object" || value === null) return false;
  const token = value as Record<string, unknown>;
  return typeof token.accessToken === "string" && token.accessToken !== "" &&
    typeof token.expiresIn === "number" && token.expiresIn > 0 &&
    typeof token.expiresAt === "number" && Array.isArray(token.quota);
}

/** One token request that any number of callers wait for. */
interface Flight {
  readonly promise: Promise<IssuedToken>;
  readonly controller: AbortController;
  /** Callers still waiting; when the last one gives up, the request stops. */
  holders: number;
}

/**
 * Creates a token provider: it caches the token, lets any number of
 * concurrent callers share one request, refreshes in the background ahead of
 * expiry while still serving the valid token, retries network errors, 408 and
 * 5xx with backoff, and after a 429 sends no request until the quota resets.
 *
 * Every decision is made from `now()` at the moment `getToken` is called; no
 * timer keeps a process alive. The secret stays in a closure: inspecting or
 * serializing the provider shows none of it.
 *
 * @param options Token endpoint, audience, credentials and policies.
 * @returns The provider.
 * @throws {TypeError} When an option is invalid (e.g. a plain-http
 * `tokenUrl` outside loopback), or in a browser page without
 * `dangerouslyAllowBrowser`.
 * @throws {RangeError} When a duration or retry count is out of range.
 *
 * @example Alerting when the quota runs low
 * ```ts
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 3 } });
 * const alerts: string[] = [];
 * const provider = createTokenProvider({
 *   ...api.environment,
 *   ...api.credentials,
 *   onQuota: ({ buckets }) => {
 *     for (const b of buckets) if (b.remaining < 3) alerts.push(`${b.bucket}: ${b.remaining} left`);
 *   },
 * });
 * await provider.getToken();
 * if (alerts[0] !== "per_hour: 2 left") throw new Error(alerts.join());
 * ```
 */
export function createTokenProvider(
  options: TokenProviderOptions,
): TokenProvider {
  const endpoint = tokenEndpoint(options, PROVIDER_CONTEXT);
  if (isBrowserPage() && options.dangerouslyAllowBrowser !== true) {
    throw new TypeError(
      `${PROVIDER_CONTEXT}: this looks like a browser page, where anyone can read the client secret; request tokens from a backend (or set 'dangerouslyAllowBrowser' if this really is one)`,
    );
  }
  // Without a store, the provider's own state is the in-memory cache.
  const store = options.store;
  const key = JSON.stringify([
    endpoint.url.href,
    endpoint.audience,
    endpoint.clientId,
  ]);
  const backoff = backoffFrom(options.retry);
  const refreshMargin = options.refreshMargin === undefined
    ? undefined
    : nonNegative(options.refreshMargin, 0, "refreshMargin");
  const requestTimeout = nonNegative(
    options.requestTimeout,
    DEFAULT_REQUEST_TIMEOUT,
    "requestTimeout",
  );
  const random = requireFunction(
    options.random,
    Math.random,
    PROVIDER_CONTEXT,
    "random",
  );
  const onQuota = requireFunction(
    options.onQuota,
    undefined,
    PROVIDER_CONTEXT,
    "onQuota",
  );
  const now = endpoint.now;

  let current:
    | { token: IssuedToken; times: TokenTimes; ready: Promise<IssuedToken> }
    | undefined;
  let loading: Promise<void> | undefined;
  let quota: QuotaSnapshot | undefined;
  let blockedUntil: number | undefined;
  let flight: Flight | undefined;
  let backgroundFailedAt = -Infinity;

  function snapshot(buckets: readonly QuotaBucket[]): QuotaSnapshot {
    return Object.freeze({
      buckets: Object.freeze([...buckets]),
      observedAt: now(),
    });
  }

  function observeQuota(buckets: readonly QuotaBucket[]): void {
    if (buckets.length === 0) return;
    quota = snapshot(buckets);
    try {
      onQuota?.(quota);
    } catch {
      // Documented: a failing callback must not lose a token already paid for.
    }
  }

  function adopt(token: IssuedToken): void {
    // One settled promise per token keeps the warm path allocation-free.
    const ready = Promise.resolve(token);
    current = { token, times: tokenTimes(token, refreshMargin), ready };
  }

  function loadOnce(): Promise<void> {
    // Concurrent cold callers share one store read as they share one request.
    loading ??= loadRecord().finally(() => {
      loading = undefined;
    });
    return loading;
  }

  function record(): TokenRecord {
    return {
      ...(current === undefined ? {} : { token: current.token }),
      ...(quota === undefined ? {} : { quota }),
      ...(blockedUntil === undefined ? {} : { blockedUntil }),
    };
  }

  async function saveRecord(): Promise<void> {
    if (store === undefined) return;
    try {
      await store.set(key, record());
    } catch {
      // Documented on TokenStore: a failing store must not lose the token.
    }
  }

  /**
   * Takes what a record knows that this provider does not: a later token, a
   * quota block still in force, a quota seen since. A later token without a
   * block lifts the local block: the quota has reset for whoever got it.
   */
  function merge(record: TokenRecord): void {
    const at = now();
    const blockInForce = record.blockedUntil !== undefined &&
      at < record.blockedUntil;
    if (
      isIssuedToken(record.token) &&
      record.token.expiresAt > (current?.token.expiresAt ?? -Infinity)
    ) {
      adopt(issuedToken(record.token));
      if (!blockInForce) blockedUntil = undefined;
    }
    if (blockInForce) {
      blockedUntil = Math.max(blockedUntil ?? -Infinity, record.blockedUntil!);
    }
    if (
      record.quota !== undefined &&
      record.quota.observedAt >= (quota?.observedAt ?? -Infinity) &&
      JSON.stringify(record.quota.buckets) !== JSON.stringify(quota?.buckets)
    ) {
      observeQuota(record.quota.buckets);
    }
  }

  async function loadRecord(): Promise<void> {
    if (store === undefined) return;
    let stored: TokenRecord | undefined;
    try {
      stored = await store.get(key);
    } catch {
      return;
    }
    if (stored !== undefined) merge(stored);
  }

  function quotaExceeded(until: number): QuotaExceededError {
    return new QuotaExceededError(
      `Cannot get token: quota exceeded until ${
        new Date(until).toISOString()
      }; no token request is sent before then`,
      {
        status: 429,
        code: "too_many_requests",
        buckets: quota?.buckets ?? [],
        retryAt: until,
      },
    );
  }

  function expiredOnArrival(): TokenRequestError {
    return new TokenRequestError(
      "Cannot get token: the token expired before it could be handed out (was the process suspended, or is the clock wrong?)",
    );
  }

  function handOut(token: IssuedToken): IssuedToken {
    if (now() < tokenTimes(token, refreshMargin).usableUntil) return token;
    throw expiredOnArrival();
  }

  async function attempt(signal: AbortSignal): Promise<IssuedToken> {
    const timeout = new AbortController();
    const timer = setTimeout(
      () =>
        timeout.abort(
          new DOMException("token request timed out", "TimeoutError"),
        ),
      requestTimeout,
    );
    try {
      return await sendTokenRequest(
        endpoint,
        AbortSignal.any([signal, timeout.signal]),
      );
    } catch (error) {
      if (!timeout.signal.aborted || signal.aborted) throw error;
      throw new TokenRequestError(
        `${REQUEST_CONTEXT}: no answer within ${requestTimeout} ms`,
        { cause: error },
      );
    } finally {
      clearTimeout(timer);
    }
  }

  async function requestWithRetries(signal: AbortSignal): Promise<IssuedToken> {
    for (let retry = 0;; retry++) {
      try {
        return await attempt(signal);
      } catch (error) {
        if (!isRetryable(error) || retry >= backoff.retries) throw error;
        const asked = error.response && retryAfterMs(error.response.headers);
        if (asked !== undefined && asked > backoff.maxDelay) throw error;
        await delay(asked ?? backoffDelay(backoff, retry, random), signal);
      }
    }
  }

  /**
   * Sends the token request. A 429 becomes a record of the block rather than
   * an error, so that a shared store can publish it to every process.
   */
  async function obtain(signal: AbortSignal): Promise<TokenRecord> {
    try {
      const token = await requestWithRetries(signal);
      return { token, ...quotaRecord(token.quota) };
    } catch (error) {
      if (error instanceof QuotaExceededError) {
        return { blockedUntil: error.retryAt, ...quotaRecord(error.buckets) };
      }
      if (error instanceof TokenRequestError && error.response) {
        observeQuota(readQuota(error.response.headers, endpoint.quotaHeader));
      }
      throw error;
    }
  }

  function quotaRecord(buckets: readonly QuotaBucket[]): TokenRecord {
    return buckets.length === 0 ? {} : { quota: snapshot(buckets) };
  }

  /** Whether a stored record already gives this provider what it needs. */
  function settled(record: TokenRecord): boolean {
    const at = now();
    if (record.blockedUntil !== undefined && at < record.blockedUntil) {
      return true;
    }
    return isIssuedToken(record.token) &&
      at < tokenTimes(record.token, refreshMargin).refreshAt;
  }

  async function accept(
    record: TokenRecord,
    stored: boolean,
  ): Promise<IssuedToken> {
    merge(record);
    if (!stored) await saveRecord();
    const at = now();
    if (current !== undefined && at < current.times.usableUntil) {
      return current.token;
    }
    if (blockedUntil !== undefined && at < blockedUntil) {
      throw quotaExceeded(blockedUntil);
    }
    throw expiredOnArrival();
  }

  async function fly(signal: AbortSignal): Promise<IssuedToken> {
    if (store?.coordinate === undefined) {
      return accept(await obtain(signal), false);
    }
    const record = await store.coordinate(key, {
      settled,
      request: () => obtain(signal),
      signal,
    });
    return accept(record, true);
  }

  function startFlight(holders: number): Flight {
    const controller = new AbortController();
    const started: Flight = {
      controller,
      holders,
      promise: fly(controller.signal).then(
        (token) => {
          if (flight === started) flight = undefined;
          return token;
        },
        (error) => {
          if (flight === started) flight = undefined;
          throw error;
        },
      ),
    };
    flight = started;
    return started;
  }

  function join(joined: Flight, signal: AbortSignal | undefined) {
    joined.holders++;
    if (signal === undefined) return joined.promise.then(handOut);
    return new Promise<IssuedToken>((resolve, reject) => {
      const leave = () => {
        reject(signal.reason);
        if (--joined.holders === 0) joined.controller.abort(signal.reason);
      };
      signal.addEventListener("abort", leave, { once: true });
      joined.promise.then(handOut).then(resolve, reject).then(() =>
        signal.removeEventListener("abort", leave)
      );
    });
  }

  function refreshInBackground(at: number): void {
    if (
      flight !== undefined ||
      (blockedUntil !== undefined && at < blockedUntil) ||
      at < backgroundFailedAt + BACKGROUND_RETRY_WINDOW
    ) return;
    // A background flight holds itself: no caller's abort can stop it.
    startFlight(1).promise.catch(() => {
      backgroundFailedAt = now();
    });
  }

  async function getTokenSlowly(
    signal: AbortSignal | undefined,
  ): Promise<IssuedToken> {
    if (flight === undefined && store !== undefined) await loadOnce();
    signal?.throwIfAborted();
    const at = now();
    if (current !== undefined && at < current.times.usableUntil) {
      if (at >= current.times.refreshAt) refreshInBackground(at);
      return current.token;
    }
    if (flight !== undefined) return await join(flight, signal);
    if (blockedUntil !== undefined && at < blockedUntil) {
      throw quotaExceeded(blockedUntil);
    }
    return await join(startFlight(0), signal);
  }

  return {
    getToken(getOptions?: GetTokenOptions): Promise<IssuedToken> {
      const signal = getOptions?.signal;
      if (
        current !== undefined && !signal?.aborted &&
        now() < current.times.refreshAt
      ) {
        return current.ready;
      }
      return getTokenSlowly(signal);
    },
    async invalidate(accessToken?: string): Promise<void> {
      const matches = (token: IssuedToken | undefined) =>
        token !== undefined &&
        (accessToken === undefined || token.accessToken === accessToken);
      if (matches(current?.token)) current = undefined;
      try {
        const stored = await store?.get(key);
        if (stored !== undefined && matches(stored.token)) {
          const { token: _dropped, ...rest } = stored;
          await store?.set(key, rest);
        }
      } catch {
        // Documented on TokenStore: a failing store counts as empty.
      }
    },
    get quota(): QuotaSnapshot | undefined {
      return quota;
    },
  };
}
