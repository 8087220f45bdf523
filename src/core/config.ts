// `configFromEnv()`: the `PARTNER_API_*` variables, ready for `createClient`. Root entry.

import { defineEnvironment, type Environment } from "./environment.ts";
import { type OptionError, requireOptions, tried } from "./_check.ts";
import { editDistance, nearest } from "./_nearest.ts";
import { REDACTED, shownAs } from "./_redact.ts";

/**
 * The variables `configFromEnv` and the CLI read, by the option each feeds.
 *
 * @example Naming a variable in a message
 * ```ts
 * import { CONFIG_VARIABLES, configFromEnv } from "@partner-api/client";
 * import { throws } from "node:assert/strict";
 *
 * throws(() => configFromEnv({}), { option: CONFIG_VARIABLES.baseUrl }); // the first one missing
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
 * The variables read when set, for OAuth servers that differ from the service: `PARTNER_API_TOKEN_BODY` (`json`, the
 * default, or `form`) and `PARTNER_API_CLIENT_AUTHENTICATION` (`body`, the default, or `basic`).
 *
 * @example A token server that takes form bodies
 * ```ts
 * import { CONFIG_OPTIONAL_VARIABLES, configFromEnv } from "@partner-api/client";
 * import { equal } from "node:assert/strict";
 *
 * const config = configFromEnv({
 *   PARTNER_API_BASE_URL: "https://api.example/api/", PARTNER_API_PCI_BASE_URL: "https://pci.example/",
 *   PARTNER_API_TOKEN_URL: "https://idp.example/token", PARTNER_API_AUDIENCE: "https://api.example",
 *   PARTNER_API_CLIENT_ID: "my-client", PARTNER_API_CLIENT_SECRET: "from-a-secret-store",
 *   [CONFIG_OPTIONAL_VARIABLES.bodyFormat]: "form",
 * });
 * equal(config.bodyFormat, "form");
 * ```
 */
export const CONFIG_OPTIONAL_VARIABLES: {
  readonly bodyFormat: "PARTNER_API_TOKEN_BODY";
  readonly clientAuthentication: "PARTNER_API_CLIENT_AUTHENTICATION";
} = Object.freeze({
  bodyFormat: "PARTNER_API_TOKEN_BODY",
  clientAuthentication: "PARTNER_API_CLIENT_AUTHENTICATION",
});

/** The variable of each setting, for hints and messages; `KNOWN`, every one (no near miss of another). */
const SETTING_NAMES = Object.freeze({
  ...CONFIG_VARIABLES,
  ...CONFIG_OPTIONAL_VARIABLES,
});
const KNOWN: readonly string[] = Object.values(SETTING_NAMES);

/** The values each optional variable takes, the default first. */
const OPTIONAL_VALUES = {
  bodyFormat: ["json", "form"],
  clientAuthentication: ["body", "basic"],
} as const;

/**
 * What `configFromEnv` returns: spread it into `createClient`.
 *
 * @example Passing the configuration on
 * ```ts
 * import { createClient, type PartnerApiConfig } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const config: PartnerApiConfig = { environment: api.environment, ...api.credentials }; // or configFromEnv()
 * const response = await createClient(config).fetch("organizations");
 * await response.body?.cancel();
 * equal(response.status, 200);
 * ```
 */
export interface PartnerApiConfig {
  /** The environment the three address variables and the audience define. */
  readonly environment: Environment;
  /** `PARTNER_API_CLIENT_ID`. */
  readonly clientId: string;
  /** `PARTNER_API_CLIENT_SECRET`. */
  readonly clientSecret: string;
  /** `PARTNER_API_TOKEN_BODY`, when set: how the token request's body is encoded. */
  readonly bodyFormat?: "json" | "form";
  /** `PARTNER_API_CLIENT_AUTHENTICATION`, when set: `basic` sends HTTP Basic. */
  readonly clientAuthentication?: "body" | "basic";
  /** The variable each setting came from, for messages (an `ApiError` names `PARTNER_API_BASE_URL`, not `baseUrl`). */
  readonly settingNames?: {
    readonly baseUrl?: string;
    readonly pciBaseUrl?: string;
    readonly clientId: string;
    readonly clientSecret: string;
    readonly audience: string;
    readonly tokenUrl: string;
    readonly bodyFormat: string;
    readonly clientAuthentication: string;
  };
}

/**
 * Where variables come from: a record (e.g. a parsed `.env`), or a function from name to value.
 *
 * @example Reading from a secret manager's lookup
 * ```ts
 * import { configFromEnv, type EnvSource } from "@partner-api/client";
 * import { throws } from "node:assert/strict";
 *
 * const vault = new Map([["PARTNER_API_CLIENT_ID", "my-client"]]);
 * const source: EnvSource = (name) => vault.get(name);
 * throws(() => configFromEnv(source), {
 *   missing: ["PARTNER_API_BASE_URL", "PARTNER_API_PCI_BASE_URL", "PARTNER_API_TOKEN_URL",
 *     "PARTNER_API_AUDIENCE", "PARTNER_API_CLIENT_SECRET"],
 * });
 * ```
 */
export type EnvSource =
  | Readonly<Record<string, string | undefined>>
  | ((name: string) => string | undefined);

/**
 * The error for variables that are missing or break a rule. It never holds a value: a secret pasted into the wrong
 * variable is the usual mistake.
 *
 * @example Telling the operator what to set
 * ```ts
 * import { type ConfigError, configFromEnv } from "@partner-api/client";
 * import { throws } from "node:assert/strict";
 *
 * throws(() => configFromEnv({}), (error: ConfigError) =>
 *   error.rule === "is not set" && error.missing.length === 6); // all at once
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
/** A variable's value; `undefined` when it is unset. */
type ReadVariable = (name: string) => string | undefined;

/**
 * Reads the six `PARTNER_API_*` variables (values trimmed), and the two optional ones
 * ({@linkcode CONFIG_OPTIONAL_VARIABLES}) when they are set.
 * @param env Where to read them; by default `Deno.env` or `process.env`.
 * @throws {TypeError} A {@linkcode ConfigError} naming every missing variable (and a near miss that is set, e.g.
 * `PARTNER_API_BASEURL`), or the variable whose value breaks a rule of `defineEnvironment` or of its values, or is no
 * string (`"must be a string"`).
 *
 * @example Naming what is missing
 * ```ts
 * import { configFromEnv } from "@partner-api/client";
 * import { throws } from "node:assert/strict";
 *
 * throws(() => configFromEnv({ PARTNER_API_BASEURL: "https://x.example/" }), {
 *   name: "TypeError", option: "PARTNER_API_BASE_URL", message: /did you mean PARTNER_API_BASE_URL\?/,
 * });
 * ```
 */
export function configFromEnv(env: EnvSource = processEnv()): PartnerApiConfig {
  // A Map's entries are no properties: every variable read as unset.
  if (typeof env !== "function") requireOptions(env, CONTEXT, "env");
  const read = typeof env === "function" ? env : (name: string) => env[name];
  const values: Record<string, string> = {};
  const missing: string[] = [];
  for (const [option, variable] of Object.entries(CONFIG_VARIABLES)) {
    const value = textOf(read(variable), variable);
    if (value === undefined || value === "") missing.push(variable);
    else values[option] = value;
  }
  if (missing.length > 0) throw missingError(missing, read, env);
  const optional = optionalValues(read);
  try {
    const config = {
      environment: defineEnvironment(values as never),
      clientId: values.clientId!,
      clientSecret: values.clientSecret!,
      ...optional,
      settingNames: SETTING_NAMES,
    };
    // Logged or serialized, it shows no secret; spread into createClient, it passes it on.
    const view = () => ({ ...config, clientSecret: REDACTED });
    return Object.freeze(shownAs(config, "PartnerApiConfig", view));
  } catch (error) {
    const { option, rule } = error as OptionError;
    const variable = CONFIG_VARIABLES[option as keyof typeof CONFIG_VARIABLES];
    throw configError(variable, rule);
  }
}

/** The optional variables that are set, each checked against its values. */
function optionalValues(
  read: ReadVariable,
): Pick<PartnerApiConfig, "bodyFormat" | "clientAuthentication"> {
  const found: Record<string, string> = {};
  for (const [option, variable] of Object.entries(CONFIG_OPTIONAL_VARIABLES)) {
    // A variable it may not read counts as unset: e.g. --allow-env naming only the six it needs.
    const value = textOf(tried(() => read(variable)), variable);
    if (value === undefined || value === "") continue;
    const allowed: readonly string[] =
      OPTIONAL_VALUES[option as keyof typeof OPTIONAL_VALUES];
    if (!allowed.includes(value)) {
      throw configError(variable, `must be ${allowed.join(" or ")}`);
    }
    found[option] = value;
  }
  return found;
}

/** A variable's value, trimmed; undefined when unset. A value that is no text (a `URL`, a number) is refused. */
function textOf(value: unknown, variable: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    throw configError(variable, "must be a string");
  }
  return value.trim();
}

function missingError(missing: string[], read: ReadVariable, env: EnvSource) {
  const set = typeof env === "function"
    ? undefined
    : Object.keys(env).filter((name) =>
      env[name] !== undefined && !KNOWN.includes(name)
    );
  // Replaced characters for the first two missing only, none when nothing is set: a slow source read 5,109 names.
  const replaced = missing.length < Object.keys(CONFIG_VARIABLES).length;
  // Each name set, once: for the missing variable nearest it (BASEURL alone was offered as 3 variables).
  const meant = new Map<string, string[]>();
  missing.forEach((variable, i) => {
    const near = set === undefined
      ? typosSet(variable, read, replaced && i < 2)
      : [nearest(variable, set)].filter((near) => near !== undefined);
    for (const name of near) {
      meant.set(name, [...meant.get(name) ?? [], variable]);
    }
  });
  const hints = [...meant].map(([near, variables]) =>
    `${near} is set: did you mean ${closest(near, variables).join(" or ")}?`
  );
  const are = missing.length === 1 ? "is" : "are";
  const also = hints.length > 0 ? ` (${hints.join("; ")})` : "";
  const text = `${missing.join(", ")} ${are} not set${also}`;
  return configError(missing[0]!, "is not set", missing, text);
}

/** Those of `variables` within one edit of the nearest to `name` (PCI_URL: BASE_URL at 4, PCI_BASE_URL at 5). */
function closest(name: string, variables: readonly string[]): string[] {
  const distances = variables.map((variable) => editDistance(name, variable));
  const best = Math.min(...distances);
  return variables.filter((_, i) => distances[i]! <= best + 1);
}

/**
 * The usual typos of `variable` that are set (a character dropped, doubled or swapped, and with `replaced`, one after
 * the prefix replaced), for a source that cannot list its names (Deno without full --allow-env): 100 reads, or 500.
 */
function typosSet(
  variable: string,
  read: ReadVariable,
  replaced: boolean,
): string[] {
  const typos = new Set<string>();
  for (let i = 0; i < variable.length; i++) {
    const head = variable.slice(0, i);
    const tail = variable.slice(i + 1);
    const char = variable[i]!; // dropped, doubled, swapped with the next:
    typos.add(head + tail).add(head + char + char + tail);
    typos.add(head + tail.slice(0, 1) + char + tail.slice(1)); // the last: itself
    // Replaced (BASE_URI for BASE_URL) by a character of the usual style; the prefix is pasted, not typed.
    if (!replaced || i < "PARTNER_API_".length) continue;
    for (const other of "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") {
      typos.add(head + other + tail);
    }
  }
  typos.delete(variable);
  return [...typos].filter((name) => tried(() => read(name)) !== undefined);
}

function configError(
  option: string,
  rule: string,
  missing: readonly string[] = [],
  text = `${option} ${rule}`,
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
  const runtime = globalThis as {
    Deno?: {
      permissions: {
        querySync(query: { name: "env"; variable: string }): { state: string };
      };
      env: {
        get(name: string): string | undefined;
        toObject(): Record<string, string>;
      };
    };
    process?: { env: Record<string, string | undefined> };
  };
  const deno = runtime.Deno;
  // Read only off Deno: there `globalThis.process` loads Node's process module, about 40 ms of an edge cold start.
  if (deno === undefined) return runtime.process?.env ?? {};
  try {
    return deno.env.toObject(); // all variables: near misses can be named
  } catch {
    // Only some allowed: never ask for the rest (a typo looked up must not prompt).
    return (variable) => {
      const { state } = deno.permissions.querySync({ name: "env", variable });
      if (state === "granted") return deno.env.get(variable);
      // The exact flag: every variable configFromEnv reads, by name.
      const rule = `cannot be read: add --allow-env=${KNOWN.join(",")}`;
      throw configError(variable, rule);
    };
  }
}
