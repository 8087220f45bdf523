// Internal: the token endpoint, every option checked and the request built once, and a provider's configuration.

import type { Environment } from "../core/environment.ts";
import { QUOTA_HEADER } from "../core/quota.ts";
import { displayUrl, secureUrl } from "../core/_url.ts";
import { redact, type Secret } from "../core/_redact.ts";
import { redactable } from "../core/_secret_runs.ts";
import { secretOutOfChecks } from "../core/_option_secrets.ts";
import {
  checkNumber,
  fieldsOf,
  oneOf,
  type OptionError,
  optionNames,
  requireClock,
  requireFunction,
  requireKnownOptions,
  requireOptions,
  requireText,
  settingNamesOf,
  tried,
  typeError,
} from "../core/_check.ts";
import { base64, basicPair } from "../core/_encoding.ts";
import { backoffFrom, timeoutFrom } from "../core/_attempt_loop.ts";
import type { TokenProviderOptions, TokenRequestOptions } from "./types.ts";
import type { TokenStore } from "../store/types.ts";

type Setting = keyof NonNullable<TokenRequestOptions["settingNames"]>;
/** The settings a hint can name. */
const SETTINGS = optionNames<Record<Setting, unknown>>()(
  "clientId clientSecret audience tokenUrl bodyFormat clientAuthentication",
) as readonly Setting[];

/** Everything needed to send token requests; it holds the secret, so it never leaves the token modules. */
export type TokenEndpoint = Readonly<ReturnType<typeof tokenEndpoint>>;

/** Checks the options and builds the endpoint; a TypeError or RangeError (`option`) for a bad one, never echoing the secret. */
export function tokenEndpoint(
  options: Omit<TokenRequestOptions, "signal">,
  context: string,
) {
  const secret = fieldsOf(options)?.clientSecret;
  return secretOutOfChecks(secret, () => endpointOf(options, context));
}

function endpointOf(
  options: Omit<TokenRequestOptions, "signal">,
  context: string,
) {
  requireOptions(options, context);
  const secret = requireText(options.clientSecret, context, "clientSecret");
  const url = tokenUrlOf(options.tokenUrl, secret, context);
  const audience = requireText(options.audience, context, "audience");
  const clientId = requireText(options.clientId, context, "clientId");
  const userFetch = requireFunction(options.fetch, context, "fetch");
  let where: string | undefined;
  const credentials = { secret, clientId, audience };
  let last: string | undefined; // the last token issued (one renewal at a time)
  const choice = (
    option: "clientAuthentication" | "bodyFormat",
    values: readonly string[],
  ) => oneOf(options[option], values, context, option);
  const basic = choice("clientAuthentication", ["body", "basic"]) === "basic";
  const fields = {
    ...(basic ? {} : { client_id: clientId, client_secret: secret }),
    audience,
    grant_type: "client_credentials",
  };
  const form = choice("bodyFormat", ["json", "form"]) === "form";
  return {
    url,
    /** How the request is sent (body format, client authentication): a 400 or 415 refused this way, not another. */
    way: `${form ? "form" : "json"} ${basic ? "basic" : "body"}`,
    /** Shown in messages: no user info, no secret; made when read (redacting costs a cold start several ms). */
    get where() {
      return where ??= redact(displayUrl(url), [secret]);
    },
    audience,
    clientId,
    secret,
    /** The secret, client id and audience, as kept out of every text (each by its name), and the last token issued. */
    get secrets(): readonly Secret[] {
      return last === undefined ? [credentials] : [credentials, last];
    },
    /** Notes a token issued: a renewal's refusal may quote it. */
    issued: (token: string) => void (last = token),
    contentType: form
      ? "application/x-www-form-urlencoded"
      : "application/json",
    body: form
      ? new URLSearchParams(fields).toString()
      : JSON.stringify(fields),
    /** The HTTP Basic `Authorization` header, with `clientAuthentication: "basic"`. */
    authorization: basic
      ? `Basic ${base64(basicPair(clientId, secret))}`
      : undefined,
    // A plain call: some runtimes throw "Illegal invocation" for fetch as a method.
    fetch: userFetch ?? ((input, init) => fetch(input, init)),
    now: requireClock(options.now, context) ?? Date.now,
    quotaHeader: headerName(options.quotaHeader ?? QUOTA_HEADER, context),
    timeout: timeoutFrom(options.timeout, context),
    /** What each setting is called where the reader configured it, for hints: one given the secret hides it. */
    names: namesOf(options.settingNames, secret, context),
  };
}

/**
 * `settingNames`, one holding `secret` (as {@linkcode redact} finds it) naming it `[client_secret]`; a secret shorter
 * than 8 characters (`MIN_REDACTED_LENGTH`) only where it is the whole name (not "secret" in `PARTNER_API_CLIENT_SECRET`).
 */
function namesOf(settingNames: unknown, secret: string, context: string) {
  const names = settingNamesOf(settingNames, SETTINGS, context);
  const hides = (name: string) => redactable(secret) || name.trim() === secret;
  // Only names given are looked into: redacting costs a cold start several ms.
  for (const [key, name] of Object.entries(names)) {
    if (key === name || !hides(name)) continue;
    names[key as Setting] = redact(name, [{ secret, clientId: "" }]);
  }
  return names;
}

/** The quota header's name, one `Headers` takes: else every token request was sent, then failed reading it. */
function headerName(value: unknown, context: string): string {
  const name = requireText(value, context, "quotaHeader");
  if (tried(() => new Headers().has(name)) !== undefined) return name;
  const [rule, received] = ["must be an HTTP header name", name.slice(0, 40)];
  throw typeError(context, "quotaHeader", rule, JSON.stringify(received));
}

/** The token URL, checked; a secret pasted into it stays out of the error. */
function tokenUrlOf(value: unknown, secret: string, context: string): URL {
  try {
    return secureUrl(value as string | URL, context, "tokenUrl");
  } catch (error) {
    const { message, option, rule } = error as OptionError;
    const lead = `${context}: '${option}' ${rule}: received `;
    const received = message.startsWith(lead)
      ? redact(message.slice(lead.length), [secret])
      : undefined;
    throw typeError(context, option, rule, received);
  }
}

export type ProviderConfig = Readonly<ReturnType<typeof providerConfig>>;

const CONTEXT = "Cannot create token provider";
// An environment spread in (`{ ...api.environment, ...api.credentials }`, as the examples write) is taken, bases unread.
const PROVIDER_OPTIONS = optionNames<
  TokenProviderOptions & Partial<Environment>
>()(
  "baseUrl pciBaseUrl environment tokenUrl audience clientId clientSecret fetch now quotaHeader bodyFormat timeout clientAuthentication settingNames store refreshMargin retry onQuota onEvent waitUntil random dangerouslyAllowBrowser",
);

/** Checks every option at once, throwing as `createTokenProvider` documents, never echoing the secret. */
export function providerConfig(options: TokenProviderOptions) {
  const secret = fieldsOf(options)?.clientSecret;
  return secretOutOfChecks(secret, () => {
    const endpoint = tokenEndpoint(withTarget(options), CONTEXT);
    const browserPage = "document" in globalThis && !("Deno" in globalThis) &&
      !("process" in globalThis);
    if (browserPage && options.dangerouslyAllowBrowser !== true) {
      throw typeError(
        CONTEXT,
        "dangerouslyAllowBrowser",
        "must be true to run in what looks like a browser page, where anyone can read the client secret (request tokens from a backend)",
      );
    }
    const { refreshMargin } = options;
    const time = "non-negative time in ms, at most 2147483647";
    return {
      endpoint,
      store: storeOf(options.store),
      backoff: backoffFrom(options.retry, CONTEXT),
      refreshMargin: refreshMargin === undefined
        ? undefined
        : checkNumber(refreshMargin, 0, time, CONTEXT, "refreshMargin"),
      random: requireFunction(options.random, CONTEXT, "random") ?? Math.random,
      onQuota: requireFunction(options.onQuota, CONTEXT, "onQuota"),
      onEvent: requireFunction(options.onEvent, CONTEXT, "onEvent"),
      waitUntil: requireFunction(options.waitUntil, CONTEXT, "waitUntil"),
    };
  });
}

/** A `store` with `get` and `set`; not a Deno KV database itself (its `get` takes other keys: nothing would be stored). */
function storeOf(store: TokenStore | undefined) {
  const { get, set, update, coordinate, atomic, listenQueue } =
    fieldsOf(store) ?? {};
  const is = (f: unknown) => typeof f === "function";
  // update and coordinate may be left out; one that is there and no function failed every getToken() untyped.
  const isStore = is(get) && is(set) && [update, coordinate]
    .every((f) => f === undefined || is(f));
  // Deno.Kv's own methods: a store of the user's may well have an `atomic`.
  const isKv = is(atomic) && is(listenQueue);
  if (store === undefined || (isStore && !isKv)) return store;
  const rule =
    "must be a TokenStore, with get and set, and update and coordinate functions if any (a Deno KV database: createKvTokenStore(kv))";
  throw typeError(CONTEXT, "store", rule);
}

/** `tokenUrl` and `audience` from the environment, or as given; not both. */
function withTarget(options: TokenProviderOptions) {
  requireKnownOptions(options, PROVIDER_OPTIONS, CONTEXT);
  const { environment, ...rest } = options;
  if (environment === undefined) {
    return rest as Omit<TokenRequestOptions, "signal">;
  }
  if (rest.tokenUrl !== undefined || rest.audience !== undefined) {
    const rule = "must not come with 'tokenUrl' or 'audience'";
    throw typeError(CONTEXT, "environment", rule);
  }
  requireOptions(environment, CONTEXT, "environment");
  const { tokenUrl, audience } = environment;
  return { ...rest, tokenUrl, audience };
}
