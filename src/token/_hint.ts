// Internal: what a failed token request tells its reader to check: settings by
// their configured names and the URL requested, never a credential's value.

import { isPermissionError, netPermissionFix } from "../core/_cause.ts";
import type { TokenRequestErrorInit } from "../core/errors.ts";
import type { TokenEndpoint } from "./_endpoint.ts";

/** What a hint is made from: the endpoint's names, address and audience, never its secret. */
export type HintSource = Pick<
  TokenEndpoint,
  "names" | "where" | "url" | "audience"
>;

/**
 * What to check after this failure; `undefined` when no setting can help (a
 * 5xx, a timeout, the quota). A refused permission comes first, as the flag.
 */
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

/**
 * When the audience and the token URL's host look like a sandbox's and
 * production's: sandbox credentials sent to production fail like a wrong secret.
 */
function otherEnvironment(source: HintSource): string {
  const kind = (text: string) =>
    TEST_ENVIRONMENT.test(text) ? "a sandbox's" : "production's";
  const audience = kind(source.audience);
  const host = kind(source.url.hostname);
  if (audience === host) return "";
  return `; ${source.names.audience} looks like ${audience} and ${source.names.tokenUrl} like ${host}: are they from one environment, and the credentials too?`;
}
