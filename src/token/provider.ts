// One token request, and the caching provider on the same sending. Public through ./token.

import type { Environment } from "../core/environment.ts";
import { requestWithRetries } from "./_protocol.ts";
import { backoffFrom } from "../core/_attempt_loop.ts";
import {
  fieldsOf,
  optionNames,
  requireKnownOptions,
  requireSignal,
} from "../core/_check.ts";
import { secretOutOfChecks } from "../core/_option_secrets.ts";
import { providerConfig, tokenEndpoint } from "./_endpoint.ts";
import { CachingTokenProvider } from "./_provider.ts";
import { providerSecrets } from "../core/_redact.ts";
import { StoreAccess } from "../store/token_access.ts";
import type { IssuedToken } from "../core/token_values.ts";
import type {
  TokenProvider,
  TokenProviderOptions,
  TokenRequestOptions,
} from "./types.ts";

// An environment spread in is taken (its bases go unread), as createTokenProvider takes it.
const REQUEST_OPTIONS = optionNames<
  TokenRequestOptions & Partial<Environment>
>()(
  "baseUrl pciBaseUrl tokenUrl audience clientId clientSecret fetch signal now quotaHeader bodyFormat timeout clientAuthentication settingNames",
);
/** Provider options refused with what to write instead. */
const INSTEAD = {
  environment:
    "is no option of requestToken: spread it ({ ...environment, clientId, clientSecret }), or give tokenUrl and audience",
  retry: "is no option of requestToken: it sends once (a provider retries)",
};

/**
 * Sends one client-credentials token request: no cache, no retry, at most `timeout` (30 s) to get the whole answer.
 *
 * @returns The token, with its expiry and the quota the answer reported.
 * @throws {TypeError} Before any request, when an option is invalid (e.g. a plain-http `tokenUrl` outside loopback).
 * @throws {RangeError} Before any request, for a `timeout` that is not positive.
 * @throws {QuotaExceededError} When the endpoint answers 429.
 * @throws {TokenRequestError} For any other failure, with `reason` `"network"`, `"timeout"`, `"status"` or
 * `"malformed"`.
 *
 * @example Requesting a token from the fake service
 * ```ts
 * import { requestToken } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
 * const token = await requestToken({ ...api.environment, ...api.credentials });
 * equal(token.quota[0]?.remaining, 9);
 * ```
 */
export async function requestToken(
  options: TokenRequestOptions,
): Promise<IssuedToken> {
  const context = "Cannot request token";
  // A key may be the secret: hidden as a value is.
  secretOutOfChecks(fieldsOf(options)?.clientSecret, () => {
    requireKnownOptions(options, REQUEST_OPTIONS, context, "options", INSTEAD);
  });
  const endpoint = tokenEndpoint(options, context);
  // One attempt: no retry, nobody listening.
  const sending = {
    backoff: backoffFrom(false, context),
    random: Math.random,
    onEvent: undefined,
  };
  const { signal } = options;
  requireSignal(signal, context); // else the runtime's own TypeError, naming no option
  return await requestWithRetries(endpoint, sending, signal, () => undefined);
}

/**
 * Creates a token provider: it caches the token, shares one request among concurrent callers, refreshes ahead of expiry
 * while serving the valid token, retries network errors, timeouts, 408, 500, 502, 503 and 504 with backoff, and after
 * a 429 sends nothing until the quota resets. After a failed request (with its retries) it sends none for 10 s,
 * doubling up to 15 minutes while failures go on (the README's table gives the requests an outage costs).
 *
 * Decisions read `now()` when `getToken` is called; no timer keeps a process alive. A flight a runtime dropped is given
 * up once its timeouts and retries are spent. The secret stays in private fields: inspecting or serializing the
 * provider shows none of it.
 *
 * @throws {TypeError} When an option is invalid (e.g. a plain-http `tokenUrl` outside loopback, a `store` without `get`
 * and `set`), or in a browser page without `dangerouslyAllowBrowser`.
 * @throws {RangeError} When a duration or retry count is out of range.
 *
 * @example Alerting when the quota runs low
 * ```ts
 * import { createTokenProvider, type QuotaSnapshot } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 3 } });
 * const alerts: string[] = [];
 * const onQuota = ({ buckets }: QuotaSnapshot) =>
 *   buckets.forEach((b) => b.remaining < 3 && alerts.push(`${b.bucket}: ${b.remaining} left`));
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials, onQuota });
 * await provider.getToken();
 * deepStrictEqual(alerts, ["per_hour: 2 left"]);
 * ```
 */
export function createTokenProvider(
  options: TokenProviderOptions,
): TokenProvider {
  const config = providerConfig(options);
  // A plain TokenStore is the contract: every provider brings the access that keys, checks and coordinates records.
  const access = new StoreAccess(config.store, config.endpoint);
  const provider = new CachingTokenProvider(config, access);
  providerSecrets.set(provider, config.endpoint.secrets);
  return provider;
}
