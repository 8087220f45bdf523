// Internal: what one run shares between its steps: its I/O, configuration, and session (provider, client, cache).

import { createClient } from "../client/mod.ts";
import type { EventListener, PartnerApiEvent } from "../core/events.ts";
import {
  CONFIG_OPTIONAL_VARIABLES,
  CONFIG_VARIABLES,
  type ConfigError,
  configFromEnv,
  type PartnerApiConfig,
} from "../core/config.ts";
import { createTokenProvider } from "../token/mod.ts";
import type { Environment } from "../core/environment.ts";
import type { SessionFlags } from "./_plan.ts";
import { escapeControls } from "../core/_controls.ts";
import { handedBy, secretsOf } from "../core/_redact.ts";
import { redactable } from "../core/_secret_runs.ts";
import { keptSecret, shownLine } from "./_shown.ts";
import type { CliIo, CliWriter } from "./io.ts";
import type { clearCache, openCache } from "./_cache.ts";
import { UsageError } from "./_flag_values.ts";
import { NAME } from "./_help.ts";
import { given, tried } from "../core/_check.ts";

/** What a run uses beyond {@linkcode CliIo}: the process gives these, tests may. */
export interface RunIo extends CliIo {
  /** Opens the token cache for a client secret: a store, or a one-line notice why not. Without it the tool runs uncached, silently. */
  openCache?: typeof openCache;
  /** The clock, in epoch ms. */
  now?: () => number;
  /** The `fetch` of every request (token and API), e.g. to an in-process fake. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** Reads the file the user named (`--env-file`); by default a regular file of at most 64 KiB. */
  readTextFile?: (path: string) => Promise<string>;
  /** Calls `stop` on Ctrl-C (or SIGTERM, SIGHUP, with the exit code they ask: 143, 129) until the returned function is called. */
  onInterrupt?: (stop: (exitCode?: number) => void) => () => void;
  /** Removes the cached tokens (of `config` alone, when given); returns the line that says what happened. */
  clearCache?: typeof clearCache;
  /** How to get help where the tool runs, e.g. `deno task cli --help`. */
  helpHint?: string;
}

/** The command that runs the tool as its user ran it (the help hint less its `--help`), for a command line to print. */
export function programOf(helpHint: string | undefined): string {
  return (helpHint ?? `${NAME} --help`).replace(/ --help$/, "");
}

/**
 * Reads every variable, naming all missing at once; `unread` ones count as unset (set by a flag, or of no use here).
 * @throws {UsageError} For missing or unreadable variables, or values `defineEnvironment` refuses (named by variable).
 */
export function readConfig(
  io: CliIo,
  unread: readonly (string | undefined)[] = [],
  envFile?: string,
): PartnerApiConfig {
  try {
    return configFromEnv((name) => {
      if (unread.includes(name)) return undefined;
      try {
        return io.env(name);
      } catch {
        const every = [CONFIG_VARIABLES, CONFIG_OPTIONAL_VARIABLES]
          .flatMap(Object.values).join(",");
        throw new UsageError(
          `cannot read ${name}: add --allow-env='PARTNER_API_*' (or --allow-env=${every})`,
        );
      }
    });
  } catch (error) {
    if (error instanceof UsageError) throw error;
    // Fields, never the value: a secret pasted into the wrong variable is the usual mistake. The library's words name
    // what is missing and any typo of a name set.
    const { missing, option, rule, message } = error as ConfigError;
    const named = message.replace(/^[^:]*: /, "");
    const where = envFile === undefined
      ? "see .env.example; --env-file .env reads a file"
      : `in neither --env-file ${envFile} nor the environment`;
    throw new UsageError(
      missing.length === 0 ? `${option} ${rule}` : `${named} (${where})`,
    );
  }
}

/** The provider, client and cache one run shares between its steps. */
export type Session = Readonly<Awaited<ReturnType<typeof openSession>>>;

/**
 * Opens a session: a cache if allowed, and a provider that says when it waits. Its standard error, and a header
 * (`shown`) on standard output, keep out the client secret and the tokens the run knows (`shownLine`).
 */
export async function openSession(
  io: RunIo,
  config: PartnerApiConfig,
  flags: SessionFlags,
) {
  const shown = shownIo(io, config.clientSecret);
  const { store, cache, cached } = await openStore(shown.io, config, flags);
  const status = { clear: () => {} };
  const clientEvents: { listener?: EventListener } = {};
  const lines: CliWriter = {
    isTerminal: io.stderr.isTerminal,
    write(text) {
      status.clear();
      shown.io.stderr.write(text);
    },
  };
  const send = io.fetch ?? ((input, init) => fetch(input, init));
  const watched = watchTokenRequests(lines, send);
  const heard = verboseListener(lines, config.environment);
  const provider = createTokenProvider({
    ...config, // its environment, credentials and setting names
    ...tokenRequestsOf(config, flags),
    fetch: watched.fetch,
    ...given({
      now: io.now,
      store,
      onEvent: flags.verbose ? heard : undefined,
    }),
  });
  shown.known.tokens = () => [cached, ...handedBy(provider)].filter(redactable);
  const client = createClient({
    environment: config.environment,
    tokenProvider: provider,
    fetch: send,
    ...given({ now: io.now, settingNames: config.settingNames }),
    onEvent: (event) => {
      if (flags.verbose) heard(event);
      clientEvents.listener?.(event);
    },
  });
  return {
    io: shown.io,
    provider,
    client,
    cache,
    /** Token requests this run has sent. */
    tokenRequests: watched.count,
    /** The line a command redraws on stderr (a list's progress): `lines` erase it first, so none is glued to it. */
    status,
    /** A command's own listener to the client's events (sync: the rate limit's holds). */
    clientEvents,
    /** The credentials and the access tokens the client sent this run: hidden where a server's answer repeats one. */
    secrets: secretsOf(client).secrets,
    /** The access tokens the run knows: the one the cache held, and those the provider handed out. */
    tokens: shown.known.tokens,
    /** A line of standard output the tool makes of the caller's words (a header of --fields), as standard error's. */
    shown: shown.shown,
  };
}

/** `io` whose standard error shows each line as `shown` does: the secret and the tokens `known` names (none yet). */
function shownIo(io: RunIo, clientSecret: string) {
  const known = { tokens: (): readonly string[] => [] };
  const secret = keptSecret(clientSecret);
  const shown = (text: string) => shownLine(text, secret, known.tokens());
  const stderr: CliWriter = {
    get isTerminal() {
      return io.stderr.isTerminal;
    },
    write: (text) => io.stderr.write(shown(text)),
  };
  return { io: { ...io, stderr }, shown, known };
}

/**
 * The access tokens a failure's line must not show: those the session knows, else the one cached for this configuration
 * (a flag refused before a token was asked for may echo it). Each as long as a secret redacted: "e" would cut words.
 */
export async function knownTokens(run: RunIo, session: Session | undefined) {
  if (session) return session.tokens();
  const optional = Object.values(CONFIG_OPTIONAL_VARIABLES);
  const config = tried(() => readConfig(run, optional));
  return [config ? await cachedToken(run, config) : ""].filter(redactable);
}

/** The access token cached for `config` (no folder made), to be kept out of what is printed, never used: `--no-cache` too. */
async function cachedToken(run: RunIo, config: PartnerApiConfig) {
  const { clientSecret, environment, clientId } = config;
  const record = await Promise.resolve().then(() => {
    const { store } = run.openCache?.(clientSecret, () => {}, run.now, false) ??
      {};
    return store?.recordFor({ ...environment, clientId });
  }).catch(() => undefined); // none readable: none to hide
  return record?.token?.accessToken ?? "";
}

/** How token requests are sent: the flags, else the variables, else the service's way; a hint names what chose. */
function tokenRequestsOf(config: PartnerApiConfig, flags: SessionFlags) {
  return {
    ...given({
      bodyFormat: flags.tokenBody ?? config.bodyFormat,
      clientAuthentication: flags.clientAuthentication ??
        config.clientAuthentication,
    }),
    settingNames: {
      ...config.settingNames,
      ...given({
        bodyFormat: flags.tokenBody && "--token-body",
        clientAuthentication: flags.clientAuthentication &&
          "--client-authentication",
      }),
    },
  };
}

/**
 * The cache's store, if the flags want one and the run may have it (else the notice; each later problem said once), its
 * record of this client, and the access token it holds (with `--no-cache` too, only to keep it out of what is printed).
 */
async function openStore(
  io: RunIo,
  config: PartnerApiConfig,
  flags: SessionFlags,
) {
  if (!flags.cache) {
    return {
      store: undefined,
      cache: undefined,
      cached: await cachedToken(io, config),
    };
  }
  const said = new Set<string>();
  const notify = (line: string) => {
    if (said.has(line)) return;
    said.add(line);
    io.stderr.write(`${escapeControls(line)}\n`);
  };
  const opening = io.openCache?.(config.clientSecret, notify, io.now);
  if (opening?.notice !== undefined) io.stderr.write(`${opening.notice}\n`);
  const store = opening?.store;
  const whose = { ...config.environment, clientId: config.clientId };
  const cache = store && { record: () => store.recordFor(whose) };
  // Read before any line is written: a path or flag given may hold it (pasted from `token --show-token`).
  const record = await cache?.record().catch(() => undefined);
  return { store, cache, cached: record?.token?.accessToken ?? "" };
}

/** The token requests' fetch, counted; no silent wait: a line on standard error when one is a retry or slow (1.5 s). */
function watchTokenRequests(err: CliWriter, send: typeof fetch) {
  let count = 0;
  let lastFailed = false;
  const fetchWatched: typeof fetch = async (input, init) => {
    count++;
    if (lastFailed) {
      err.write(`retrying the token request (attempt ${count})\n`);
    }
    const waiting = () => err.write("waiting for the token endpoint...\n");
    const slow = setTimeout(waiting, 1500);
    try {
      const response = await send(input, init);
      lastFailed = response.status === 408 || response.status >= 500;
      return response;
    } catch (error) {
      lastFailed = true;
      throw error;
    } finally {
      clearTimeout(slow);
    }
  };
  return { fetch: fetchWatched, count: () => count };
}

/** `--verbose`: one line per `token.request` and `api.request` event (events never hold the secret or a token). */
function verboseListener(err: CliWriter, environment: Environment) {
  let tokenRequests = 0;
  return (event: PartnerApiEvent) => {
    let line: string;
    if (event.type === "token.request") {
      tokenRequests++;
      const outcome = event.outcome === "ok" ? "ok" : `error (${event.reason})`;
      const { origin, pathname } = environment.tokenUrl;
      const ms = Math.round(event.durationMs);
      line =
        `POST ${origin}${pathname} ${outcome}, ${ms} ms, token request ${tokenRequests}`;
    } else if (event.type === "api.request") {
      const base = environment[event.base === "pci" ? "pciBaseUrl" : "baseUrl"];
      line = `${event.method} ${base.origin}${event.path} ${
        event.status || "no answer"
      }, attempt ${event.attempt}, ${Math.round(event.durationMs)} ms`;
    } else return;
    err.write(`${escapeControls(line)}\n`);
  };
}
