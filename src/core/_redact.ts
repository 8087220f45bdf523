// Internal: keeps secrets out of text that reaches messages and properties.

import {
  base64,
  base64url,
  basicPair,
  escapedForms,
  formEncode,
  hex,
  htmlEscapes,
  strictlyUnescaped,
  unescaped,
} from "./_encoding.ts";
import { cut, memo, tried } from "./_check.ts";
import { CONTROLS } from "./_controls.ts";
import { holdsAny, redactable, runIndex, variants } from "./_secret_runs.ts";

/** What stands for a secret or token that is left out. */
export const REDACTED = "[redacted]";
/** The most text from a server that an error carries. */
const MAX_SERVER_TEXT = 1000;

/**
 * What to keep out of text: a string (an access token), shown as `[redacted]`; or credentials, each shown by its name
 * (`[client_secret]`, ...), so that the text still says which value the server quoted.
 */
export type Secret =
  | string
  | {
    readonly secret: string;
    readonly clientId: string;
    readonly audience?: string | undefined;
  };

/** Base64 runs at least this long are decoded and looked into (a whole body echoed). */
export const BASE64_RUN = /[A-Za-z0-9+/_-]{16,}={0,2}/g;

/** Values made ready: every form of each, the names they go by, and the runs that drop a text whole. */
type Redactor = Readonly<ReturnType<typeof redactor>>;

/** Made once per credentials object: a provider keeps one for its life. */
const redactors = new WeakMap<object, Redactor>();
/** Made once per list of tokens, for all of them (one each cost seconds for the thousands an answer may hold). */
const tokenRedactors = new Map<string, Redactor>();

/** Each provider `createTokenProvider` made, with its credentials: a client of it keeps them out of its errors too. */
export const providerSecrets = new WeakMap<object, readonly Secret[]>();

/** Per token provider, its last two tokens (the current, the one it replaced): a refusal quoting a path hides them. */
const handed = new WeakMap<object, string[]>();

/** Notes `token` as `provider`'s current one (the one before kept). */
export function noteHanded(provider: object, token: string): void {
  const last = handed.get(provider);
  if (last === undefined) handed.set(provider, [token]);
  else if (last[0] !== token && last.unshift(token) > 2) last.pop();
}

/** `provider`'s last two tokens, the current first (none: nothing was handed out or sent with it). */
export const handedBy = (provider: object): readonly string[] =>
  handed.get(provider) ?? [];

/** Per token provider, the sets noting each access token sent with it (a service may echo it): a sync run's, while it runs. */
export const tokensNoted = new WeakMap<object, Set<Set<string>>>();

/** The redactors of `secrets`: the tokens' first, whatever the order (`[client_id]` cut apart a token holding it). */
function redactorsOf(secrets: readonly Secret[]): Redactor[] {
  const tokens = secrets.filter((s): s is string => typeof s === "string");
  const made = secrets.filter((s) => typeof s !== "string").map(ofCredentials);
  return tokens.length === 0 ? made : [ofTokens(tokens), ...made];
}

function ofCredentials(given: Exclude<Secret, string>): Redactor {
  const known = redactors.get(given);
  if (known !== undefined) return known;
  const { secret, clientId, audience = "" } = given;
  const values: [string, string, string?][] = [
    ["[client_secret]", secret, clientId],
  ];
  if (redactable(clientId)) values.push(["[client_id]", clientId]);
  if (redactable(audience)) values.push(["[audience]", audience]);
  const made = redactor(values);
  redactors.set(given, made);
  return made;
}

const ofTokens = (tokens: readonly string[]): Redactor =>
  memo(
    tokenRedactors,
    JSON.stringify(tokens),
    () => redactor(tokens.map((token) => [REDACTED, token])),
    16,
  );

/** `values` as [name, value, client id for HTTP Basic]; a run of those named as the first drops a text whole. */
function redactor(values: readonly (readonly [string, string, string?])[]) {
  const all: string[] = [];
  const named = new Map<string, Set<string>>();
  for (const [name, value, clientId] of values) {
    const forms = encodings(value, clientId);
    for (const form of forms) all.push(form);
    const own = named.get(name) ?? new Set();
    named.set(name, own);
    for (const form of forms) own.add(form.toLowerCase());
  }
  // Longest first, so that no shorter form leaves part of a longer one.
  const forms = [...new Set(all)].sort((a, b) => b.length - a.length);
  const first = values[0]![0];
  return {
    /** Any form of any value, longest first, in patterns V8 can compile. */
    patterns: patternsOf(forms),
    /** Each name with its values' forms (lower case), to name a match; the first value's name first. */
    named: [...named].map(([name, forms]) => ({ name, forms })),
    /** The runs of the values that drop a whole text. */
    runs: runIndex(
      values.filter(([name]) => name === first).map(([, value]) => value),
    ),
    /** The longest form, so that a text can be cut before it is searched. */
    longest: forms[0]?.length ?? 0,
    /** The fewest code points of a form: a shorter text holds none (simple case folding keeps each one). */
    shortest: forms.reduce(
      (least, form) => Math.min(least, [...form].length),
      Infinity,
    ),
  };
}

/** How long a case-insensitive pattern may be: V8 refuses one past about 32,000 characters (a token of 16 KB). */
const MAX_PATTERN = 8192;

/**
 * `forms` (longest first) as case-insensitive groups, in order; a form too long for one as itself, in its own case (the
 * forms hold each case; V8 refused even a pattern without `i` of 40,000 non-ASCII characters).
 */
function patternsOf(forms: readonly string[]): (RegExp | string)[] {
  const patterns: (RegExp | string)[] = [];
  let group: string[] = [], length = 0;
  const close = () => {
    if (group.length > 0) patterns.push(new RegExp(group.join("|"), "giu"));
    group = [];
    length = 0;
  };
  for (const form of forms) {
    const escaped = form.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    if (length + escaped.length + 1 >= MAX_PATTERN) close();
    if (escaped.length > MAX_PATTERN) patterns.push(form);
    else group.push(escaped), length += escaped.length + 1;
  }
  close();
  return patterns;
}

/** Forms of a value as text might hold it. */
function encodings(value: string, clientId?: string): string[] {
  const forms = new Set<string>();
  for (const variant of variants(value)) {
    // A lone surrogate is sent as U+FFFD (the form encoder's way): `encodeURIComponent` threw URIError on it.
    const url = encodeURIComponent(variant.toWellFormed());
    forms.add(variant).add(variant.toUpperCase()).add(variant.toLowerCase())
      .add(JSON.stringify(variant).slice(1, -1)).add(url)
      .add(formEncode(variant)).add(encodeURIComponent(url));
    for (const html of htmlEscapes(variant)) forms.add(html);
    for (const escaped of escapedForms(variant)) forms.add(escaped);
    forms.add(base64(variant)).add(base64url(variant)).add(hex(variant));
  }
  if (clientId !== undefined) {
    for (const pair of [`${clientId}:${value}`, basicPair(clientId, value)]) {
      forms.add(base64(pair)).add(base64url(pair)).add(hex(pair));
    }
  }
  forms.delete("");
  return [...forms];
}

/** Replaces each secret, in each of its forms and any case, and base64 runs holding one, with its name. */
export function redact(text: string, secrets: readonly Secret[]): string {
  return redactedBy(text, redactorsOf(secrets));
}

function redactedBy(text: string, made: readonly Redactor[]): string {
  let clean = text;
  for (const redactor of made) {
    if (redactor.patterns.length === 0) continue;
    // Whole runs first: a value's own base64 may sit aligned inside one.
    clean = clean.replace(BASE64_RUN, (r) => decodedHolding(r, redactor) ?? r);
    // Each pattern is compiled as first used: a short text (a bucket's name) need not pay for a new token's.
    if (clean.length < redactor.shortest) continue;
    for (const pattern of redactor.patterns) {
      clean = clean.replaceAll(pattern, (match) => nameOf(redactor, match));
    }
  }
  return clean;
}

/** The name of the value `match` is a form of. */
function nameOf(made: Redactor, match: string): string {
  const form = match.toLowerCase();
  return made.named.find(({ forms }) => forms.has(form))?.name ?? REDACTED;
}

/** The name of a value a base64 or hex run holds (the secret's first), read at any of its alignments. */
function decodedHolding(run: string, made: Redactor): string | undefined {
  for (const decoded of readings(run)) {
    const found = new Set(
      made.patterns.flatMap((pattern) =>
        typeof pattern === "string"
          ? decoded.includes(pattern) ? [pattern] : []
          : decoded.match(pattern) ?? []
      ).map((match) => nameOf(made, match)),
    );
    if (holdsAny(decoded, made.runs)) found.add(made.named[0]!.name);
    // The most sensitive name it holds: the secret's comes first.
    const name = made.named.find(({ name }) => found.has(name))?.name;
    if (name !== undefined) return name;
  }
  return undefined;
}

/** The texts a run may encode: as base64 at each of its 4 alignments, and as hex at each of 2 when it is hex. */
export function* readings(run: string): Generator<string> {
  const text = run.replace(/=+$/, "").replaceAll("-", "+").replaceAll("_", "/");
  for (let skip = 0; skip < 4; skip++) {
    // A last group of 2 or 3 characters holds 1 or 2 bytes (unpadded base64url ends so: a secret's last ones); of 1, none.
    const end = (text.length - skip) % 4 === 1 ? -1 : undefined;
    const aligned = text.slice(skip, end);
    const bytes = tried(() =>
      Uint8Array.from(atob(aligned), (c) => c.charCodeAt(0))
    );
    if (bytes !== undefined) yield LENIENT.decode(bytes);
  }
  // A hex run of the secret (a part of it: the whole is a form already) is as good as its text.
  if (!/^[0-9a-f]+$/i.test(run)) return;
  for (let skip = 0; skip < 2; skip++) {
    const pairs = run.slice(skip).match(/../g) ?? [];
    yield LENIENT.decode(Uint8Array.from(pairs, (pair) => parseInt(pair, 16)));
  }
}

/** Invalid bytes become U+FFFD, so that one of them hides nothing else. */
export const LENIENT = new TextDecoder("utf-8", { fatal: false });

/** Server text fit for an error: {@linkcode redactedWhole} first, then controls as spaces, cut to `max` with `more`. */
export function serverText(
  text: string,
  secrets: readonly Secret[],
  max: number = MAX_SERVER_TEXT,
  more = "…",
): string {
  const made = redactorsOf(secrets);
  // Past `max` and every form's length is cut anyway: unsearched (a body may be megabytes).
  const reach = max + Math.max(0, ...made.map(({ longest }) => longest));
  const clean = wholeOrDropped(text.slice(0, reach + 1), made);
  return cut(clean.replace(CONTROLS, " "), max, more);
}

/** `text` redacted ({@linkcode redact}), or dropped whole while it still holds a run of a secret or token (12 characters). */
export function redactedWhole(text: string, secrets: readonly Secret[]) {
  return wholeOrDropped(text, redactorsOf(secrets));
}

function wholeOrDropped(text: string, made: readonly Redactor[]): string {
  const redacted = redactedBy(text, made);
  // Escapes mixed in, undone (no list of forms holds every mix), strictly too, once and twice (JSON in JSON), and NFC:
  // secrets with a backslash before an NFD or astral character came through.
  const readings = [unescaped(unescaped(redacted)), strictlyUnescaped(redacted)]
    .flatMap((read) => [read, strictlyUnescaped(read)])
    .map((reading) => reading.normalize());
  const texts = [...new Set([redacted, ...readings])];
  const held = made.some(({ runs }) => texts.some((t) => holdsAny(t, runs)));
  return held ? REDACTED : redacted;
}

/** Keeps a client's credentials, and each token it sends until `stop`, out of text ({@linkcode redactedWhole}). */
export function secretsOf(client: object) {
  const { tokenProvider } = client as { tokenProvider?: unknown };
  const provider = Object(tokenProvider), tokens = new Set<string>();
  const credentials = providerSecrets.get(provider) ?? [];
  const noting = tokensNoted.get(provider) ?? new Set<Set<string>>();
  tokensNoted.set(provider, noting.add(tokens));
  const secrets = (): Secret[] => [...credentials, ...tokens];
  const clean = (text: string) => redactedWhole(text, secrets());
  return { clean, secrets, stop: () => noting.delete(tokens) };
}

/**
 * `thrown` cleaned in place, class, identity and fields kept: its texts (a DOMException's `message` too), arrays, cause
 * and errors it holds, each once; no other object is walked (a driver's state is never changed), nor a frozen field.
 */
export function redactInPlace(thrown: unknown, clean: Clean, seen = new Set()) {
  if (typeof thrown === "string") return clean(thrown);
  if (Object(thrown) !== thrown || seen.has(thrown)) return thrown;
  const target = thrown as object;
  seen.add(target);
  const texts = thrown instanceof Error ? ["message", "stack"] : [];
  for (const key of new Set([...Reflect.ownKeys(target), ...texts])) {
    // Values only: no getter of a user's object is called (an error's message and stack aside).
    const value: unknown = texts.includes(key as string)
      ? Reflect.get(target, key)
      : Object.getOwnPropertyDescriptor(target, key)!.value;
    const walk = typeof value === "string" || key === "cause" ||
      Array.isArray(value) || value instanceof Error;
    const next = walk ? redactInPlace(value, clean, seen) : value;
    if (next === value) continue;
    // Defined anew: a DOMException's message is its prototype's; else set, where it is writable only.
    const field = { value: next, writable: true, configurable: true };
    Reflect.defineProperty(target, key, field) ||
      Reflect.set(target, key, next);
  }
  return thrown;
}
type Clean = (text: string) => string;

/**
 * A body-less copy of `response` for an error: status, phrase and headers cleaned like a body. Node's fetch keeps the
 * phrase and names a server sent (a secret in `statusText`), that Response and Headers may refuse: left out.
 */
export function cleanResponse(response: Response, secrets: readonly Secret[]) {
  const headers = new Headers();
  const clean = (text: string) =>
    serverText(text, secrets, MAX_SERVER_TEXT, "..."); // bytes: no "…"
  for (const [name, value] of response.headers) {
    tried(() => headers.append(clean(name), clean(value))); // or left out
  }
  const { status } = response;
  const statusText = clean(response.statusText).replace(/[^\x20-\x7e]/g, "?");
  // Response refuses a body-less copy of 101 and a status under 200.
  if (status < 200) return new Response(null, { headers });
  return new Response(null, { status, statusText, headers });
}

type Inspect = (value: unknown, options?: unknown) => string;

/** Makes `JSON.stringify`, `Deno.inspect` and Node's `util.inspect` of `target` show `view()` as `name`, not spread. */
export function shownAs<T extends object>(
  target: T,
  name: string,
  view: () => unknown,
): T {
  const shown = (inspect: Inspect, options: unknown) =>
    `${name} ${inspect(view(), options)}`;
  return Object.defineProperties(target, {
    toJSON: { value: view },
    [Symbol.for("Deno.customInspect")]: { value: shown },
    [Symbol.for("nodejs.util.inspect.custom")]: {
      value: (_depth: number, options: unknown, inspect: Inspect) =>
        shown(inspect, options),
    },
  });
}
