// Internal: token requests through core's attempt loop, with their events, and the token endpoint's wire protocol. Each
// attempt sends, reads the body within its deadline, then processes it synchronously (tests/token_answers_test.ts).

import {
  cleanCause,
  describeCause,
  isPermissionError,
} from "../core/_cause.ts";
import {
  PartnerApiError,
  QuotaExceededError,
  type TokenFailureReason,
  TokenRequestError,
  type TokenRequestErrorInit,
} from "../core/errors.ts";
import type { TokenRequestEvent, TokenRetryEvent } from "../core/events.ts";
import type { QuotaBucket } from "../core/quota.ts";
import { readQuotaBuckets } from "../core/_quota_parse.ts";
import { escapeControls } from "../core/_controls.ts";
import {
  cleanResponse,
  redactedWhole,
  type Secret,
  serverText,
} from "../core/_redact.ts";
import {
  discard,
  type Next,
  readBounded,
  retryAfterMs,
  retryDelay,
  retryStep,
  sendAttempts,
} from "../core/_attempt_loop.ts";
import { fieldsOf, given, tried } from "../core/_check.ts";
import { type Deadline, ownDeadlines } from "../core/_deadlines.ts";
import type { ProviderConfig, TokenEndpoint } from "./_endpoint.ts";
import { tokenHint } from "./_failure.ts";
import { answerTokens } from "./_answer_tokens.ts";
import { isRetryable, quotaRetryAt } from "./_policy.ts";
import {
  isAccessToken,
  type IssuedToken,
  issuedToken,
  MAX_EXPIRES_IN,
} from "../core/token_values.ts";

/** The largest token answer read, in bytes; a token answer is a few hundred. */
const MAX_TOKEN_BODY = 64 * 1024;
/** The lifetime of a token whose answer has no `expires_in`, in seconds. */
const DEFAULT_EXPIRES_IN = 3600;
const CONTEXT = "Cannot request token";

/** What one token attempt came to. */
export type TokenOutcome =
  | { readonly token: IssuedToken; readonly error?: undefined }
  | { readonly error: unknown; readonly token?: undefined };

/** A retryable failure is retried while retries last, after `Retry-After` (to `maxRetryAfter`) or a jittered wait. */
export function nextTokenStep(
  outcome: TokenOutcome,
  retries: number,
  policy: TokenSending,
  now: number,
): Next<IssuedToken> {
  const { token, error } = outcome;
  if (token !== undefined) return { do: "done", value: token };
  if (!isRetryable(error)) return { do: "fail", error };
  const { response } = error;
  const retryAfter = response && retryAfterMs(response.headers, now);
  const wait = retryDelay(policy.backoff, retries, policy.random, retryAfter);
  if (wait === undefined) return { do: "fail", error };
  // Only network, timeout and status failures are retried.
  const { reason, status } = error as TokenRequestError & {
    reason: TokenRetryEvent["reason"];
  };
  return retryStep(policy.onEvent, "token.retry", reason, status ?? 0, wait);
}

/** What a token request needs besides the endpoint. */
type TokenSending = Pick<ProviderConfig, "backoff" | "random" | "onEvent">;

/** A token request with retries; what `beforeSend` returns as an attempt goes out (a quota block) is thrown instead. */
export function requestWithRetries(
  endpoint: TokenEndpoint,
  sending: TokenSending,
  signal: AbortSignal | undefined,
  beforeSend: (now: number) => unknown,
): Promise<IssuedToken> {
  return sendAttempts<TokenOutcome, IssuedToken>({
    signal,
    limits: ownDeadlines(endpoint.timeout),
    listener: sending.onEvent,
    now: endpoint.now,
    attempt: async (deadline) => {
      const refusal = beforeSend(endpoint.now());
      if (refusal !== undefined) throw refusal;
      try {
        return { token: await tokenAttempt(endpoint, deadline, signal) };
      } catch (error) {
        signal?.throwIfAborted();
        return { error };
      }
    },
    // Each attempt but the first is a retry: a step other than "again" ends the request.
    next: (outcome, _deadline, attempt) =>
      nextTokenStep(outcome, attempt - 1, sending, endpoint.now()),
    heard: (outcome, _attempt, durationMs): TokenRequestEvent => {
      const { token, error } = outcome;
      if (token !== undefined) {
        const quota = quotaOf(token.quota);
        return { type: "token.request", outcome: "ok", durationMs, ...quota };
      }
      return {
        type: "token.request",
        outcome: "error",
        // Anything else is the caller's signal: nobody waited any more.
        reason: error instanceof PartnerApiError ? error.reason : "aborted",
        durationMs,
        ...(error instanceof QuotaExceededError ? quotaOf(error.buckets) : {}),
      };
    },
  });
}

/** The quota as the event's own copy (the listener gets it frozen). */
function quotaOf(buckets: readonly QuotaBucket[]) {
  return buckets.length === 0
    ? {}
    : { quota: buckets.map((bucket) => ({ ...bucket })) };
}

/** One attempt under `deadline`: send, read, process; throws a TokenRequestError (a QuotaExceededError for a 429). */
export async function tokenAttempt(
  endpoint: TokenEndpoint,
  deadline: Deadline,
  signal: AbortSignal | undefined,
): Promise<IssuedToken> {
  try {
    const sentAt = endpoint.now();
    const sent = sendTokenRequest(endpoint, deadline.signal);
    const response = await deadline.race(sent, discard);
    const text = await deadline.race(readTokenBody(endpoint, response));
    return processTokenAnswer(endpoint, response, text, sentAt);
  } catch (error) {
    signal?.throwIfAborted();
    if (!deadline.timedOut) throw error;
    throw new TokenRequestError(
      `${CONTEXT}: no answer from ${endpoint.where} within ${endpoint.timeout} ms`,
      { reason: "timeout", cause: deadline.signal.reason },
    );
  }
}

/** Sends the request (`reason: "network"` without an answer); no redirect is followed: it would carry the secret. */
async function sendTokenRequest(endpoint: TokenEndpoint, signal: AbortSignal) {
  const send = endpoint.fetch;
  try {
    return await send(endpoint.url, {
      method: "POST",
      headers: {
        "content-type": endpoint.contentType,
        accept: "application/json",
        ...given({ authorization: endpoint.authorization }),
      },
      body: endpoint.body,
      redirect: "manual",
      signal,
    });
  } catch (error) {
    signal.throwIfAborted();
    // The runtime's own words name no host; the hint names the exact flag.
    const what = isPermissionError(error)
      ? `no net permission for ${endpoint.url.host}`
      : `no answer from ${endpoint.where}${causeText(error, endpoint)}`;
    throw failure(endpoint, `${CONTEXT}: ${what}`, {
      reason: "network",
      cause: cleanCause(error, endpoint.secrets),
    });
  }
}

/** The answer's body; a larger one than {@linkcode MAX_TOKEN_BODY} is refused unread. */
async function readTokenBody(endpoint: TokenEndpoint, response: Response) {
  const text = await readBounded(response, MAX_TOKEN_BODY).catch((error) => {
    // No `status`: an answer cut off is a network failure, and retried as one.
    const cut =
      `the answer from ${endpoint.where} (HTTP ${response.status}) was cut off`;
    throw failure(endpoint, `${CONTEXT}: ${cut}${causeText(error, endpoint)}`, {
      reason: "network",
      cause: cleanCause(error, endpoint.secrets),
      response,
    });
  });
  if (text === undefined) {
    throw failure(
      endpoint,
      `${CONTEXT}: the answer from ${endpoint.where} is larger than ${MAX_TOKEN_BODY} bytes`,
      { status: response.status, reason: "malformed", response },
    );
  }
  return text;
}

/** Turns a read answer into a token, or throws the error it means. */
export function processTokenAnswer(
  endpoint: TokenEndpoint,
  response: Response,
  text: string,
  sentAt: number,
): IssuedToken {
  const body = jsonObject(text);
  // An answer refused or malformed may hold a token all the same: its texts, headers and buckets' names hide it.
  const seen = answering(endpoint, text);
  const header = response.headers.get(endpoint.quotaHeader);
  const quota = serverBuckets(header, seen.secrets);
  if (!response.ok) throw refusal(seen, response, text, quota);
  const malformed = (problem: string) =>
    failure(
      seen,
      `${CONTEXT}: the answer from ${endpoint.where} ${problem}`,
      { status: response.status, reason: "malformed", response, quota }, // a token paid for
    );
  if (body === undefined) throw malformed("is not JSON");
  const { access_token: accessToken, expires_in, token_type } = body;
  if (!isAccessToken(accessToken)) {
    // Never quoted: it may be a real token with a stray character.
    throw malformed("has no access_token of visible ASCII characters");
  }
  const expiresIn = lifetime(expires_in);
  if (!(expiresIn >= 1) || expiresIn > MAX_EXPIRES_IN) {
    // A number or what it is, never the server's text (it may be anything): 0, "3600s" and none say different things.
    const given = typeof expires_in === "number"
      ? expires_in
      : expires_in === null
      ? "null"
      : typeof expires_in;
    throw malformed(
      `has no expires_in from 1 to ${MAX_EXPIRES_IN} seconds: received ${given}`,
    );
  }
  if (typeof token_type !== "string" || token_type.toLowerCase() !== "bearer") {
    throw malformed("has a token_type other than Bearer");
  }
  endpoint.issued(accessToken);
  return issuedToken({
    accessToken,
    tokenType: "Bearer",
    expiresIn,
    expiresAt: sentAt + expiresIn * 1000,
    quota,
  });
}

/** `endpoint`, with the tokens an answer holds among the secrets its texts hide. */
function answering(endpoint: TokenEndpoint, text: string): TokenEndpoint {
  const tokens = answerTokens(text);
  if (tokens.length === 0) return endpoint;
  const secrets = { value: [...endpoint.secrets, ...tokens] };
  return Object.create(endpoint, { secrets }); // `where` stays lazy
}

/** The one builder of {@linkcode QuotaExceededError}: for a 429, and for a block still in force. */
export function quotaExceeded(
  retryAt: number,
  buckets: readonly QuotaBucket[],
  details: Pick<TokenRequestErrorInit, "code" | "description" | "response"> =
    {},
): QuotaExceededError {
  const said = [details.code, details.description].filter(Boolean).join(": ");
  return new QuotaExceededError(
    `Cannot get token: quota exceeded until ${
      new Date(retryAt).toISOString()
    }; no token request is sent before then${said ? ` (${said})` : ""}`,
    { status: 429, code: "too_many_requests", ...details, buckets, retryAt },
  );
}

function refusal(
  endpoint: TokenEndpoint,
  response: Response,
  text: string,
  quota: readonly QuotaBucket[],
): TokenRequestError {
  const status = response.status;
  // The answer's OAuth error, its texts cleaned and cut like any server text.
  const { error, error_description: described } = jsonObject(text) ?? {};
  const quoted = (value: unknown) =>
    typeof value === "string" ? serverText(value, endpoint.secrets) : undefined;
  const oauth = given({ code: quoted(error), description: quoted(described) });
  if (status === 429) {
    const now = endpoint.now();
    const retryAfter = retryAfterMs(response.headers, now);
    return quotaExceeded(quotaRetryAt(retryAfter, quota, now), quota, {
      ...oauth,
      response: cleanResponse(response, endpoint.secrets),
    });
  }
  const said = [oauth.code, oauth.description].filter(Boolean).join(": ");
  return failure(
    endpoint,
    `${CONTEXT}: the token endpoint answered ${status}${
      said ? ` ${said}` : ""
    }`,
    { status, ...oauth, reason: "status", response, quota },
  );
}

/** A failed token request, with what to check (`hint`) as a field and in the message. */
function failure(
  endpoint: TokenEndpoint,
  message: string,
  init: TokenRequestErrorInit & { reason: TokenFailureReason },
): TokenRequestError {
  const hint = tokenHint(endpoint, init);
  // Its headers are server text too: a credential echoed there is redacted.
  const response = init.response &&
    cleanResponse(init.response, endpoint.secrets);
  return new TokenRequestError(
    hint === undefined ? message : `${message}: ${hint}`,
    { ...init, ...given({ response, hint }) },
  );
}

function causeText(error: unknown, endpoint: TokenEndpoint): string {
  return ` (${describeCause(error, endpoint.secrets)})`;
}

/** `expires_in` in seconds: a number or digits (`"3599"`); absent (RFC 6749 5.1), an hour; else `NaN`, refused. */
function lifetime(value: unknown): number {
  if (value === undefined) return DEFAULT_EXPIRES_IN;
  if (typeof value === "number") return value;
  return typeof value === "string" && /^[0-9]{1,9}$/.test(value)
    ? Number(value)
    : NaN;
}

/** The answer's body as a JSON object (an array is one too), if it is one. */
function jsonObject(text: string): Record<string, unknown> | undefined {
  return tried(() => fieldsOf(JSON.parse(text)));
}

/** The header's buckets, names cleaned of `secrets` as server text, controls and invisibles as `\uXXXX` (for logs). */
function serverBuckets(
  value: string | null,
  secrets: readonly Secret[],
): QuotaBucket[] {
  return readQuotaBuckets(value).map((bucket) => {
    const name = escapeControls(redactedWhole(bucket.bucket, secrets));
    return name === bucket.bucket
      ? bucket
      : Object.freeze({ ...bucket, bucket: name });
  });
}
