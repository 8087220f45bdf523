/**
 * Describes one deployment of the partner API (production, sandbox, or a
 * local fake): its API, card-data and token addresses and its audience.
 *
 * @example Defining the sandbox
 * ```ts
 * import { defineEnvironment } from "@partner-api/client/environment";
 * import { equal } from "node:assert/strict";
 *
 * const sandbox = defineEnvironment({ baseUrl: "https://sandbox.partner.example/api",
 *   pciBaseUrl: "https://pci.sandbox.partner.example/api/",
 *   tokenUrl: "https://idp.sandbox.partner.example/oauth/token",
 *   audience: "https://sandbox.partner.example" });
 * equal(sandbox.baseUrl.href, "https://sandbox.partner.example/api/");
 * ```
 *
 * @module
 */

import { secureUrl, urlError } from "./_url.ts";
import { requireOptions, requireText } from "./_check.ts";

/**
 * The four values that make an environment, as a user writes them.
 *
 * @example Values as the partner hands them out
 * ```ts
 * import { defineEnvironment, type EnvironmentInit } from "@partner-api/client/environment";
 * import { throws } from "node:assert/strict";
 *
 * const init: EnvironmentInit = { baseUrl: "https://api.partner.example/api",
 *   pciBaseUrl: "https://pci.partner.example/api/",
 *   tokenUrl: "https://idp.partner.example/oauth/token", audience: "https://api.partner.example" };
 * defineEnvironment(init);
 * throws(() => defineEnvironment({ ...init, baseUrl: "https://api.example/v2" }), { option: "baseUrl" }); // not /api/
 * ```
 */
export interface EnvironmentInit {
  /** API base address; must end with `/api/` (`/api` is accepted). */
  baseUrl: string | URL;
  /** Card-data (PCI) base address. */
  pciBaseUrl: string | URL;
  /** OAuth 2.0 token endpoint. */
  tokenUrl: string | URL;
  /** The `audience` sent in token requests. */
  audience: string;
}

/**
 * A validated environment: a frozen object with data properties.
 *
 * @example Resolving an address under the base
 * ```ts
 * import { defineEnvironment, type Environment } from "@partner-api/client/environment";
 * import { equal, ok } from "node:assert/strict";
 *
 * const production: Environment = defineEnvironment({ baseUrl: "https://api.partner.example/api/",
 *   pciBaseUrl: "https://pci.partner.example/api/",
 *   tokenUrl: "https://idp.partner.example/oauth/token", audience: "https://api.partner.example" });
 * equal(new URL("organizations", production.baseUrl).pathname, "/api/organizations");
 * ok(Object.isFrozen(production));
 * ```
 */
export interface Environment {
  /** API base address, ending with `/api/`. */
  readonly baseUrl: URL;
  /** Card-data (PCI) base address, ending with `/`. */
  readonly pciBaseUrl: URL;
  /** OAuth 2.0 token endpoint. */
  readonly tokenUrl: URL;
  /** The `audience` sent in token requests. */
  readonly audience: string;
}

const CONTEXT = "Cannot define environment";

function checkBase(value: string | URL, field: string): URL {
  const url = secureUrl(value, CONTEXT, field);
  if (/[?#]/.test(url.href)) { // not search and hash: "" for a bare ? or #
    throw urlError(CONTEXT, field, "must not have a query or fragment", url);
  }
  if (!url.pathname.endsWith("/")) url.pathname += "/";
  return url;
}

/**
 * Validates and freezes an environment. `http:` is accepted only on loopback (`localhost`, `127.0.0.0/8`, `[::1]`), for
 * a local test server. Base addresses get a trailing `/` so that relative paths resolve under them.
 * @throws {TypeError} Naming the field (`option`): an address not absolute https
 * or holding credentials, a `baseUrl` not ending with `/api/`, an empty `audience`.
 *
 * @example Refusing plain http
 * ```ts
 * import { defineEnvironment } from "@partner-api/client/environment";
 * import { throws } from "node:assert/strict";
 *
 * const init = { baseUrl: "https://api.example/api/", pciBaseUrl: "https://pci.example/api/", audience: "x" };
 * throws(() => defineEnvironment({ ...init, tokenUrl: "http://idp.example.com/token" }),
 *   { name: "TypeError", option: "tokenUrl" });
 * ```
 */
export function defineEnvironment(init: EnvironmentInit): Environment {
  requireOptions(init, CONTEXT, "init");
  const baseUrl = checkBase(init.baseUrl, "baseUrl");
  if (!baseUrl.pathname.endsWith("/api/")) {
    throw urlError(CONTEXT, "baseUrl", "must end with /api/", baseUrl);
  }
  const pciBaseUrl = checkBase(init.pciBaseUrl, "pciBaseUrl");
  const tokenUrl = secureUrl(init.tokenUrl, CONTEXT, "tokenUrl");
  const audience = requireText(init.audience, CONTEXT, "audience");
  return Object.freeze({ baseUrl, pciBaseUrl, tokenUrl, audience });
}
