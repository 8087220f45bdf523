// The errors' init types and reasons, apart so errors.ts reads on one page.

import type { QuotaBucket } from "./quota.ts";

/**
 * What kind of failure a `TokenRequestError` is: no answer (`"network"`), none
 * in time (`"timeout"`), a non-2xx status but 429 (`"status"`), a 2xx answer
 * without a usable token (`"malformed"`), the quota (`"quota"`, a `QuotaExceededError`).
 *
 * @example Deciding what to tell an operator
 * ```ts
 * import type { TokenFailureReason, TokenRequestError } from "@partner-api/client/errors";
 * import { requestToken } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * const advice: Record<TokenFailureReason, string> = { network: "check the network",
 *   timeout: "the token endpoint is slow", status: "check the credentials",
 *   malformed: "the token endpoint misbehaves", quota: "wait for the quota to reset" };
 * await using api = await startFakePartnerApi();
 * const wrongSecret = { ...api.environment, clientId: api.credentials.clientId, clientSecret: "wrong" };
 * await rejects(requestToken(wrongSecret), (error: TokenRequestError) =>
 *   advice[error.reason] === "check the credentials");
 * ```
 */
export type TokenFailureReason =
  | "network"
  | "timeout"
  | "status"
  | "malformed"
  | "quota";

/**
 * What a `TokenRequestError` is built from.
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
   * @default {"quota" for a QuotaExceededError, else "status" with a status, else "network"}
   */
  reason?: TokenFailureReason;
  /** What to check: settings by name, or the URL requested; never a credential. */
  hint?: string;
}

/**
 * What a `QuotaExceededError` is built from.
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
 * What an `ApiError` is built from.
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
   * @default {"network" for status 0, else "status"}
   */
  reason?: ApiFailureReason;
  /**
   * Requests made for this call or page.
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
 * What kind of failure an `ApiError` is: no answer (`"network"`), none in time (`"timeout"`), a non-2xx answer
 * (`"status"`), or a 2xx page that is not JSON, holds no items, too many, or is too large (`"malformed"`).
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
 * await rejects(client.list("organizations").next(), (error: ApiError) =>
 *   error.reason === "malformed" && !transient.includes(error.reason));
 * ```
 */
export type ApiFailureReason = "network" | "timeout" | "status" | "malformed";
