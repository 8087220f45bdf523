// Internal: the checks that turn a provider's options into a configuration.

import {
  checkNumber,
  fieldsOf,
  requireFunction,
  requireOptions,
  typeError,
} from "../core/_check.ts";
import { backoffFrom } from "../core/_attempt_loop.ts";
import { tokenEndpoint } from "./_endpoint.ts";
import { secretOutOfChecks } from "../core/_option_secrets.ts";
import type { TokenProviderOptions, TokenRequestOptions } from "./types.ts";
import type { TokenStore } from "../store/types.ts";

export type ProviderConfig = Readonly<ReturnType<typeof providerConfig>>;

const CONTEXT = "Cannot create token provider";

/** Checks every option at once, throwing as `createTokenProvider` documents, never echoing the secret. */
export function providerConfig(options: TokenProviderOptions) {
  const secret = fieldsOf(options)?.clientSecret;
  return secretOutOfChecks(secret, () => checkedConfig(options));
}

function checkedConfig(options: TokenProviderOptions) {
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
}

/** A `store` with `get` and `set`; not a Deno KV database itself (its `get` takes other keys: nothing would be stored). */
function storeOf(store: TokenStore | undefined) {
  const { get, set, atomic, listenQueue } = fieldsOf(store) ?? {};
  const isStore = typeof get === "function" && typeof set === "function";
  // Deno.Kv's own methods: a store of the user's may well have an `atomic`.
  const isKv = typeof atomic === "function" &&
    typeof listenQueue === "function";
  if (store === undefined || (isStore && !isKv)) return store;
  const rule =
    "must be a TokenStore, with get and set (a Deno KV database: createKvTokenStore(kv))";
  throw typeError(CONTEXT, "store", rule);
}

/** `tokenUrl` and `audience` from the environment, or as given; not both. */
function withTarget(options: TokenProviderOptions) {
  requireOptions(options, CONTEXT);
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
