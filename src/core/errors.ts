/**
 * Typed errors for what the token endpoint and the API answer. None holds the client secret or an access token, in its
 * message, a property or `cause`; the raw `Response` is a non-enumerable `response`, so logging never prints it.
 *
 * @example Telling a quota stop from other token failures
 * ```ts
 * import { QuotaExceededError, TokenRequestError } from "@partner-api/client/errors";
 * import { requestToken } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 1 } });
 * const options = { ...api.environment, ...api.credentials };
 * await requestToken(options); // the hour's only token
 * const error = await requestToken(options).catch((error: unknown) => error);
 * // Test for QuotaExceededError first: it is a TokenRequestError too.
 * ok(error instanceof QuotaExceededError && error instanceof TokenRequestError);
 * ok(error.retryAt > Date.now()); // no token request can pass before
 * ```
 *
 * @module
 */

import type { QuotaBucket } from "./quota.ts";
import { cut, given } from "./_check.ts";
import type {
  ApiErrorInit,
  ApiFailureReason,
  QuotaExceededErrorInit,
  TokenFailureReason,
  TokenRequestErrorInit,
} from "./error_types.ts";

export type * from "./error_types.ts";

function hideResponse(target: Error, response: Response | undefined): void {
  if (response === undefined) return;
  Object.defineProperty(target, "response", {
    value: response, // neither enumerable nor writable, by default
    configurable: true,
  });
}

/**
 * The base of every error this module raises about the service: decide on `reason`, never on the message.
 *
 * @example Handling every failure of the service in one place
 * ```ts
 * import { PartnerApiError } from "@partner-api/client/errors";
 * import { createClient } from "@partner-api/client/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const wrongSecret = { clientId: api.credentials.clientId, clientSecret: "wrong" };
 * const client = createClient({ environment: api.environment, ...wrongSecret });
 * await rejects(client.fetch("organizations"), (error) =>
 *   error instanceof PartnerApiError && error.reason === "status"); // the token was refused
 * ```
 */
export class PartnerApiError extends Error {
  /** What kind of failure this is; each subclass lists its reasons. */
  readonly reason: string;

  /** Creates the error; `message` holds no secret and is cut to 2,000 characters. */
  constructor(message: string, reason: string, options: ErrorOptions = {}) {
    super(cut(message, 2000), given({ cause: options.cause }));
    this.name = "PartnerApiError";
    this.reason = reason;
  }
}

/**
 * A token request failed: the network, the endpoint's answer or its body.
 *
 * @example Reading the OAuth error code, and what to check
 * ```ts
 * import { TokenRequestError } from "@partner-api/client/errors";
 * import { requestToken } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const wrongSecret = { ...api.environment, clientId: api.credentials.clientId, clientSecret: "wrong" };
 * await rejects(requestToken(wrongSecret), (error) =>
 *   error instanceof TokenRequestError && error.status === 401 && error.code === "access_denied" &&
 *   error.hint?.startsWith("check clientId, clientSecret and audience") === true);
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
  /**
   * What to check, for a person (the message ends with it too): settings by their configured names, or the URL; for a
   * 401 or 403 also an audience and a token URL of two environments. Never a credential; absent if none can help.
   */
  readonly hint?: string;
  /** What kind of failure this is: decide on it, not on the message. */
  declare readonly reason: TokenFailureReason;
  /** The endpoint's answer (non-enumerable; its body is already read). */
  declare readonly response?: Response;

  /** Creates the error; `message` holds no secret. */
  constructor(message: string, init: TokenRequestErrorInit = {}) {
    super(
      message,
      init.reason ?? (init.status === undefined ? "network" : "status"),
      init,
    );
    this.name = "TokenRequestError";
    const { status, code, description, hint } = init;
    Object.assign(this, given({ status, code, description, hint }));
    if (init.quota?.length) this.quota = init.quota;
    hideResponse(this, init.response);
  }
}

/**
 * The token endpoint refused a request because a quota bucket is empty
 * (429): retrying before {@linkcode QuotaExceededError.retryAt} is useless.
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
 * await provider.invalidate((await provider.getToken()).accessToken); // e.g. after a 401
 * const error = await provider.getToken().catch((error: unknown) => error);
 * ok(error instanceof QuotaExceededError && error.retryAt > Date.now());
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

  /** Creates the error; `message` holds no secret. */
  constructor(message: string, init: QuotaExceededErrorInit) {
    super(message, { ...init, reason: "quota" });
    this.name = "QuotaExceededError";
    this.buckets = Object.freeze([...init.buckets]);
    this.retryAt = init.retryAt;
  }
}

/**
 * An API request failed: no answer (`status` 0) after its retries, a
 * status that is not a success, or a list page that cannot be read.
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
 * await rejects(client.list("invoices").next(), (error) =>
 *   error instanceof ApiError && error.status === 404 && error.reason === "status");
 * ```
 */
export class ApiError extends PartnerApiError {
  /** What kind of failure this is: decide on it, not on the message. */
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

  /** Creates the error; `message` holds no secret. */
  constructor(message: string, init: ApiErrorInit) {
    super(
      message,
      init.reason ?? (init.status === 0 ? "network" : "status"),
      init,
    );
    this.name = "ApiError";
    this.attempts = init.attempts ?? 1;
    this.status = init.status;
    this.url = init.url;
    if (init.bodyExcerpt !== undefined) this.bodyExcerpt = init.bodyExcerpt;
    hideResponse(this, init.response);
  }
}

// Types its signatures name, homed elsewhere: so this entry passes `deno doc --lint` alone.
export type { QuotaBucket } from "./quota_types.ts";
