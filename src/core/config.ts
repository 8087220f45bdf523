/**
 * Configuration from the six `PARTNER_API_*` variables, ready for
 * `createClient(configFromEnv())`.
 *
 * @example Configuration from a record, as from a `.env` file
 * ```ts
 * import { configFromEnv } from "@partner-api/client";
 *
 * const config = configFromEnv({
 *   PARTNER_API_BASE_URL: "https://api.partner.example/api/",
 *   PARTNER_API_PCI_BASE_URL: "https://pci.partner.example/",
 *   PARTNER_API_TOKEN_URL: "https://idp.partner.example/oauth/token",
 *   PARTNER_API_AUDIENCE: "https://api.partner.example",
 *   PARTNER_API_CLIENT_ID: "my-client",
 *   PARTNER_API_CLIENT_SECRET: "from-a-secret-store",
 * });
 * if (config.environment.baseUrl.pathname !== "/api/") throw new Error();
 * ```
 *
 * @module
 */

import { defineEnvironment, type Environment } from "./environment.ts";
import type { OptionError } from "./_check.ts";
import { nearest } from "./_nearest.ts";

/**
 * The variables `configFromEnv` and the CLI read, by the option each feeds.
 *
 * @example Naming a variable in a message
 * ```ts
 * import { CONFIG_VARIABLES } from "@partner-api/client";
 *
 * if (CONFIG_VARIABLES.clientSecret !== "PARTNER_API_CLIENT_SECRET") throw new Error();
 * ```
 */
export const CONFIG_VARIABLES: {
  readonly baseUrl: "PARTNER_API_BASE_URL";
  readonly pciBaseUrl: "PARTNER_API_PCI_BASE_URL";
  readonly tokenUrl: "PARTNER_API_TOKEN_URL";
  readonly audience: "PARTNER_API_AUDIENCE";
  readonly clientId: "PARTNER_API_CLIENT_ID";
  readonly clientSecret: "PARTNER_API_CLIENT_SECRET";
} = Object.freeze({
  baseUrl: "PARTNER_API_BASE_URL",
  pciBaseUrl: "PARTNER_API_PCI_BASE_URL",
  tokenUrl: "PARTNER_API_TOKEN_URL",
  audience: "PARTNER_API_AUDIENCE",
  clientId: "PARTNER_API_CLIENT_ID",
  clientSecret: "PARTNER_API_CLIENT_SECRET",
});

/**
 * What `configFromEnv` returns: spread it into `createClient`.
 *
 * @example Passing the configuration on
 * ```ts
 * import type { PartnerApiConfig } from "@partner-api/client";
 *
 * function describe({ environment, clientId }: PartnerApiConfig): string {
 *   return `${clientId} at ${environment.baseUrl.host}`;
 * }
 * if (typeof describe !== "function") throw new Error();
 * ```
 */
export interface PartnerApiConfig {
  /** The environment the four address variables and the audience define. */
  readonly environment: Environment;
  /** `PARTNER_API_CLIENT_ID`. */
  readonly clientId: string;
  /** `PARTNER_API_CLIENT_SECRET`. */
  readonly clientSecret: string;
}

/**
 * Where variables come from: a record (e.g. a parsed `.env`), or a function
 * from name to value.
 *
 * @example Reading from a secret manager's lookup
 * ```ts
 * import type { EnvSource } from "@partner-api/client";
 *
 * const secrets = new Map([["PARTNER_API_CLIENT_ID", "my-client"]]);
 * const source: EnvSource = (name) => secrets.get(name);
 * if (typeof source !== "function") throw new Error();
 * ```
 */
export type EnvSource =
  | Readonly<Record<string, string | undefined>>
  | ((name: string) => string | undefined);

/**
 * The error for variables that are missing or break a rule: a `TypeError`
 * whose `missing` lists every unset variable, and `option` and `rule` the
 * first that breaks a rule. It never holds a value: a secret pasted into the
 * wrong variable is the usual mistake.
 *
 * @example Telling the operator what to set
 * ```ts
 * import { type ConfigError, configFromEnv } from "@partner-api/client";
 *
 * try {
 *   configFromEnv({});
 * } catch (error) {
 *   const { missing } = error as ConfigError;
 *   if (missing.length !== 6) throw error;
 * }
 * ```
 */
export type ConfigError = TypeError & {
  /** The variable at fault (the first missing one, or the one that breaks `rule`). */
  readonly option: string;
  /** What is wrong with it, e.g. `"is not set"` or `"must use https"`. */
  readonly rule: string;
  /** Every variable that is not set. */
  readonly missing: readonly string[];
};

const CONTEXT = "Cannot read configuration";

/**
 * Reads the six `PARTNER_API_*` variables (values trimmed) and returns the
 * environment and credentials they give.
 *
 * @param env Where to read them; by default the process environment (Deno's
 * `Deno.env`, Node's and Bun's `process.env`).
 * @returns `{ environment, clientId, clientSecret }`.
 * @throws {TypeError} A {@linkcode ConfigError} naming every missing variable
 * at once (with a near miss when a variable of a similar name is set, e.g.
 * `PARTNER_API_BASEURL`), or the variable whose value breaks a rule of
 * `defineEnvironment`; never quoting a value.
 *
 * @example Naming what is missing
 * ```ts
 * import { configFromEnv } from "@partner-api/client";
 *
 * try {
 *   configFromEnv({ PARTNER_API_BASEURL: "https://api.partner.example/api/" });
 * } catch (error) {
 *   const { missing, message } = error as TypeError & { missing: string[] };
 *   if (missing.length !== 6 || !message.includes("PARTNER_API_BASEURL")) throw error;
 * }
 * ```
 */
export function configFromEnv(env: EnvSource = processEnv()): PartnerApiConfig {
  const read = typeof env === "function" ? env : (name: string) => env[name];
  const values: Record<string, string> = {};
  const missing: string[] = [];
  for (const [option, variable] of Object.entries(CONFIG_VARIABLES)) {
    const value = read(variable)?.trim();
    if (value === undefined || value === "") missing.push(variable);
    else values[option] = value;
  }
  if (missing.length > 0) throw missingError(missing, env);
  try {
    return Object.freeze({
      environment: defineEnvironment(values as never),
      clientId: values.clientId!,
      clientSecret: values.clientSecret!,
    });
  } catch (error) {
    const { option, rule } = error as OptionError;
    const variable = CONFIG_VARIABLES[option as keyof typeof CONFIG_VARIABLES];
    throw configError(`${variable} ${rule}`, variable, rule, []);
  }
}

function missingError(missing: string[], env: EnvSource): ConfigError {
  const set = typeof env === "function"
    ? []
    : Object.keys(env).filter((name) => env[name] !== undefined);
  const hints = missing.flatMap((variable) => {
    const near = nearest(
      variable,
      set.filter((name) => !missing.includes(name)),
    );
    return near === undefined || near === variable
      ? []
      : [`${near} is set: did you mean ${variable}?`];
  });
  return configError(
    `${missing.join(", ")} ${missing.length === 1 ? "is" : "are"} not set${
      hints.length > 0 ? ` (${hints.join("; ")})` : ""
    }`,
    missing[0]!,
    "is not set",
    missing,
  );
}

function configError(
  text: string,
  option: string,
  rule: string,
  missing: readonly string[],
): ConfigError {
  return Object.assign(new TypeError(`${CONTEXT}: ${text}`), {
    option,
    rule,
    missing: Object.freeze([...missing]),
  });
}

/** The process environment as a record, where the runtime offers one. */
function processEnv(): EnvSource {
  // Looked up, not named: the core stays free of Deno APIs on other runtimes.
  const { Deno: deno, process } = globalThis as {
    Deno?: {
      env: {
        get(name: string): string | undefined;
        toObject(): Record<string, string>;
      };
    };
    process?: { env: Record<string, string | undefined> };
  };
  if (deno !== undefined) {
    try {
      return deno.env.toObject(); // all variables: near misses can be named
    } catch {
      return (name) => deno.env.get(name); // only some variables are allowed
    }
  }
  return process?.env ?? {};
}
