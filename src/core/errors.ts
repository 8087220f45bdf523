/**
 * Typed errors for what the token endpoint and the API answer.
 *
 * None of them ever holds the client secret or an access token: not in the
 * message, not in a property, not in `cause`. The raw `Response` is kept as a
 * non-enumerable `response` property so that logging an error never prints
 * it, while a caller who needs a header can still read it.
 *
 * @example Telling a quota stop from other token failures
 * ```ts
 * import { QuotaExceededError, TokenRequestError } from "@partner-api/client/errors";
 * import { requestToken } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok } from "node:assert/strict";
 *
 * function describe(error: unknown): string {
 *   if (error instanceof QuotaExceededError) return "quota exhausted: wait for retryAt";
 *   if (error instanceof TokenRequestError) return `token failure: ${error.reason}`;
 *   return "other";
 * }
 * await using api = await startFakePartnerApi({ quota: { perHour: 1 } });
 * const options = { ...api.environment, ...api.credentials };
 * await requestToken(options); // the hour's only token
 * const error = await requestToken(options).catch((error: unknown) => error);
 * equal(describe(error), "quota exhausted: wait for retryAt");
 * ok(error instanceof TokenRequestError); // a QuotaExceededError is one too
 * ```
 *
 * @module
 */

import type { QuotaBucket } from "./quota.ts";

/** The longest message an error of this module carries, whatever the service sent. */
const MAX_MESSAGE = 2000;

function capped(message: string): string {
  return message.length <= MAX_MESSAGE
    ? message
    : `${message.slice(0, MAX_MESSAGE - 1)}…`;
}

/**
 * What kind of failure a {@linkcode TokenRequestError} is:
 *
 * - `"network"`: no answer (refused, reset, DNS, cut off mid-body);
 * - `"timeout"`: no answer within the time limit of one attempt;
 * - `"status"`: the endpoint answered with a non-2xx status (not 429);
 * - `"malformed"`: a 2xx answer without a usable token (not JSON, too large,
 *   a bad `access_token`, `expires_in` or `token_type`);
 * - `"quota"`: the quota is exhausted (a {@linkcode QuotaExceededError}).
 *
 * @example Deciding what to tell an operator
 * ```ts
 * import type { TokenFailureReason, TokenRequestError } from "@partner-api/client/errors";
 * import { requestToken } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * const advice: Record<TokenFailureReason, string> = {
 *   network: "check the network",
 *   timeout: "the token endpoint is slow",
 *   status: "check the credentials",
 *   malformed: "the token endpoint misbehaves",
 *   quota: "wait for the quota to reset",
 * };
 * await using api = await startFakePartnerApi();
 * const wrongSecret = { ...api.environment, clientId: api.credentials.clientId, clientSecret: "wrong" };
 * await rejects(requestToken(wrongSecret), (error: TokenRequestError) => {
 *   return advice[error.reason] === "check the credentials";
 * });
 * ```
 */
export type TokenFailureReason =
  | "network"
  | "timeout"
  | "status"
  | "malformed"
  | "quota";

/**
 * What a {@linkcode TokenRequestError} is built from.
 *
 * @example Building an error in a custom token flow
 * ```ts
 * import { TokenRequestError, type TokenRequestErrorInit } from "@partner-api/client/errors";
 * import { equal } from "node:assert/strict";
 *
 * const init: TokenRequestErrorInit = { status: 400, code: "invalid_request" };
 * const error = new TokenRequestError("refused", init);
 * equal(error.reason, "status"); // from the status, as no reason was given
 * equal(error.code, "invalid_request");
 * ```
 */
export interface TokenRequestErrorInit extends ErrorOptions {
  /** HTTP status of the token endpoint's answer, when there was one. */
  status?: number;
  /** OAuth `error` code from the answer's body, e.g. `access_denied`. */
  code?: string;
  /** OAuth `error_description` from the answer's body. */
  description?: string;
  /** The answer itself, kept non-enumerable. */
  response?: Response;
  /** The quota the answer reported, when it did. */
  quota?: readonly QuotaBucket[];
  /**
   * What kind of failure this is.
   *
   * @default {"quota" for a QuotaExceededError, else "status" with a status, else "network"}
   */
  reason?: TokenFailureReason;
}

/**
 * What a {@linkcode QuotaExceededError} is built from.
 *
 * @example Building a quota error in a test double
 * ```ts
 * import { QuotaExceededError, type QuotaExceededErrorInit, TokenRequestError } from "@partner-api/client/errors";
 * import { equal, ok } from "node:assert/strict";
 *
 * const init: QuotaExceededErrorInit = { status: 429, buckets: [], retryAt: Date.now() + 60_000 };
 * const error = new QuotaExceededError("over quota", init);
 * equal(error.reason, "quota");
 * ok(error instanceof TokenRequestError);
 * ```
 */
export interface QuotaExceededErrorInit extends TokenRequestErrorInit {
  /** The quota buckets the answer reported. */
  buckets: readonly QuotaBucket[];
  /** Epoch milliseconds before which no token request can succeed. */
  retryAt: number;
}

/**
 * What an {@linkcode ApiError} is built from.
 *
 * @example Building an API error in a test double
 * ```ts
 * import { ApiError, type ApiErrorInit } from "@partner-api/client/errors";
 * import { equal } from "node:assert/strict";
 *
 * const init: ApiErrorInit = { status: 503, url: "https://api.partner.example/api/x", bodyExcerpt: "busy" };
 * const error = new ApiError("unavailable", init);
 * equal(error.reason, "status");
 * equal(error.attempts, 1);
 * equal(new ApiError("no answer", { status: 0, url: init.url }).reason, "network");
 * ```
 */
export interface ApiErrorInit extends ErrorOptions {
  /** HTTP status of the API's answer; 0 when none arrived. */
  status: number;
  /**
   * What kind of failure this is.
   *
   * @default {"network" for status 0, else "status"}
   */
  reason?: ApiFailureReason;
  /**
   * Requests made for this call or page.
   *
   * @default {1}
   */
  attempts?: number;
  /** The address that was requested (never holds a token). */
  url: string;
  /** The start of the answer's body, already cleaned of tokens. */
  bodyExcerpt?: string;
  /** The answer itself, kept non-enumerable. */
  response?: Response;
}

/**
 * What kind of failure an {@linkcode ApiError} is.
 *
 * @example Retrying later only what may pass later
 * ```ts
 * import type { ApiError, ApiFailureReason } from "@partner-api/client/errors";
 * import { createClient } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * const transient: ApiFailureReason[] = ["network", "timeout"];
 * await using api = await startFakePartnerApi();
 * api.injectApiFaults({ kind: "body", body: "<html>maintenance</html>" });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * await rejects(client.list("organizations").next(), (error: ApiError) => {
 *   return error.reason === "malformed" && !transient.includes(error.reason);
 * });
 * ```
 */
export type ApiFailureReason = "network" | "timeout" | "status" | "malformed";

function apiReason(status: number): ApiFailureReason {
  return status === 0 ? "network" : "status";
}

function hideResponse(target: Error, response: Response | undefined): void {
  if (response === undefined) return;
  Object.defineProperty(target, "response", {
    value: response,
    enumerable: false,
    writable: false,
    configurable: true,
  });
}

/**
 * The base of every error this module raises about the service: catch it to
 * handle token and API failures alike, and decide on `reason`, never on the
 * message.
 *
 * @example Handling every failure of the service in one place
 * ```ts
 * import { PartnerApiError } from "@partner-api/client/errors";
 * import { createClient } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const client = createClient({
 *   environment: api.environment,
 *   clientId: api.credentials.clientId,
 *   clientSecret: "wrong",
 * });
 * await rejects(client.fetch("organizations"), (error) => {
 *   return error instanceof PartnerApiError && error.reason === "status"; // the token was refused
 * });
 * ```
 */
export class PartnerApiError extends Error {
  /** What kind of failure this is; each subclass lists its reasons. */
  readonly reason: string;

  /**
   * Creates the error.
   *
   * @param message What failed, without secrets; cut to 2,000 characters.
   * @param reason What kind of failure this is.
   * @param options The cause, if any.
   */
  constructor(message: string, reason: string, options: ErrorOptions = {}) {
    super(
      capped(message),
      options.cause === undefined ? {} : { cause: options.cause },
    );
    this.name = "PartnerApiError";
    this.reason = reason;
  }
}

/**
 * A token request failed: the network, the endpoint's answer or its body.
 *
 * @example Reading the OAuth error code
 * ```ts
 * import { TokenRequestError } from "@partner-api/client/errors";
 * import { requestToken } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const wrongSecret = { ...api.environment, clientId: api.credentials.clientId, clientSecret: "wrong" };
 * await rejects(requestToken(wrongSecret), (error) => {
 *   return error instanceof TokenRequestError && error.status === 401 && error.code === "access_denied";
 * });
 * ```
 */
export class TokenRequestError extends PartnerApiError {
  /** HTTP status of the answer; absent when no answer arrived. */
  readonly status?: number;
  /** OAuth `error` code of the answer, e.g. `invalid_request`. */
  readonly code?: string;
  /** OAuth `error_description` of the answer. */
  readonly description?: string;
  /** The quota the refusal reported, when it did (a 401 or 400 may). */
  readonly quota?: readonly QuotaBucket[];
  /** What kind of failure this is: decide on it, not on the message. */
  declare readonly reason: TokenFailureReason;
  /** The endpoint's answer (non-enumerable; its body is already read). */
  declare readonly response?: Response;

  /**
   * Creates the error.
   *
   * @param message What failed, without secrets.
   * @param init Status, OAuth code and description, reason, cause and response.
   */
  constructor(message: string, init: TokenRequestErrorInit = {}) {
    super(
      message,
      init.reason ?? (init.status === undefined ? "network" : "status"),
      init,
    );
    this.name = "TokenRequestError";
    if (init.status !== undefined) this.status = init.status;
    if (init.code !== undefined) this.code = init.code;
    if (init.description !== undefined) this.description = init.description;
    if (init.quota !== undefined && init.quota.length > 0) {
      this.quota = init.quota;
    }
    hideResponse(this, init.response);
  }
}

/**
 * The token endpoint refused a request because a quota bucket is empty
 * (HTTP 429). Retrying before {@linkcode QuotaExceededError.retryAt} is
 * useless: buckets reset on the UTC hour and day.
 *
 * @example Waiting for the reset
 * ```ts
 * import { QuotaExceededError } from "@partner-api/client/errors";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 1 } });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials });
 * const first = await provider.getToken();
 * await provider.invalidate(first.accessToken); // e.g. after a 401
 * const error = await provider.getToken().catch((error: unknown) => error);
 * ok(error instanceof QuotaExceededError);
 * ok(error.retryAt > Date.now());
 * equal(error.buckets[0]?.remaining, 0);
 * await provider.getToken().catch(() => {}); // refused before the reset without a request
 * equal(api.tokenRequests, 2);
 * ```
 */
export class QuotaExceededError extends TokenRequestError {
  /** The buckets the refusal reported, in header order. */
  readonly buckets: readonly QuotaBucket[];
  /** Epoch milliseconds from which a token request may succeed again. */
  readonly retryAt: number;

  /**
   * Creates the error.
   *
   * @param message What was refused, without secrets.
   * @param init Buckets, reset time, status and response.
   */
  constructor(message: string, init: QuotaExceededErrorInit) {
    super(message, { ...init, reason: "quota" });
    this.name = "QuotaExceededError";
    this.buckets = Object.freeze([...init.buckets]);
    this.retryAt = init.retryAt;
  }
}

/**
 * An API request failed: it got no answer (`status` 0) after its retries,
 * an answer with a status that is not a success, or a list page that
 * cannot be read.
 *
 * @example Handling a missing resource
 * ```ts
 * import { ApiError } from "@partner-api/client/errors";
 * import { createClient } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * await rejects(client.list("invoices").next(), (error) => {
 *   return error instanceof ApiError && error.status === 404 && error.reason === "status";
 * });
 * ```
 */
export class ApiError extends PartnerApiError {
  /**
   * What kind of failure this is: `"network"` (no answer), `"timeout"` (no
   * answer in time), `"status"` (a non-2xx answer), `"malformed"` (a 2xx
   * page that is not JSON, holds no items, too many, or is too large).
   */
  declare readonly reason: ApiFailureReason;
  /** Requests made for this call or page, retries included. */
  readonly attempts: number;
  /** HTTP status of the answer; 0 when no answer arrived (see `cause`). */
  readonly status: number;
  /** The address that was requested. */
  readonly url: string;
  /** The start of the answer's body, cleaned of tokens. */
  readonly bodyExcerpt?: string;
  /** The API's answer (non-enumerable; its body is already read). */
  declare readonly response?: Response;

  /**
   * Creates the error.
   *
   * @param message What failed, without secrets.
   * @param init Status, address, body excerpt, cause and response.
   */
  constructor(message: string, init: ApiErrorInit) {
    super(message, init.reason ?? apiReason(init.status), init);
    this.name = "ApiError";
    this.attempts = init.attempts ?? 1;
    this.status = init.status;
    this.url = init.url;
    if (init.bodyExcerpt !== undefined) this.bodyExcerpt = init.bodyExcerpt;
    hideResponse(this, init.response);
  }
}

// Types this entry's signatures name, defined and documented in their own
// entries: re-exported so that the entry reads whole on its own (JSR, deno doc).
export type { QuotaBucket } from "./quota.ts";
