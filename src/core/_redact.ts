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
import { cut, tried } from "./_check.ts";

/** What stands for a secret or token that is left out. */
export const REDACTED = "[redacted]";
/** The most text from a server that an error carries. */
const MAX_SERVER_TEXT = 1000;
// Controls (C0, DEL, C1), line and paragraph separators, and the characters that show nothing yet hide, reorder or spell
// text: direction marks, zero-width ones, the soft hyphen, invisible operators, interlinear annotation marks, the
// combining grapheme joiner, Hangul fillers, Khmer inherent vowels, the Mongolian vowel separator, and tag characters
// and supplementary variation selectors, each able to spell a hidden text (r176b F2; an England flag's tags are
// escaped with them). Format characters drawn as signs (Arabic number signs, the end of ayah) and the selectors fonts
// draw variants by (U+FE00 to U+FE0F, Mongolian U+180B to U+180D, U+180F) stay (r177).
const CONTROLS =
  /[\p{Cc}\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0001}\u{e0020}-\u{e007f}\u{e0100}-\u{e01ef}]/gu;

// Written raw, service data could move the cursor, retitle the window, write the clipboard (OSC 52), or hide and
// reorder what a person reads: every control and invisible character is shown escaped.
/** `text` with every control and invisible character shown as `\uXXXX` (a pair of them past U+FFFF, as JSON has it). */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (char) =>
    Array.from(
      { length: char.length },
      (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, "0")}`,
    ).join(""));
}

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

/** Client ids and audiences shorter than this are not redacted (an audience "api" would cut every word). */
export const MIN_REDACTED_LENGTH = 8;
/** Whether `value`, trimmed, is long enough to be redacted ({@linkcode MIN_REDACTED_LENGTH}). */
export const redactable = (value: string): boolean =>
  value.trim().length >= MIN_REDACTED_LENGTH;

/** Runs of this many characters of a secret make a server text unusable. */
const SECRET_RUN = 12;
/** Base64 runs at least this long are decoded and looked into (a whole body echoed). */
export const BASE64_RUN = /[A-Za-z0-9+/_-]{16,}={0,2}/g;

/** One secret, made ready: every form of every value, and the names they go by. */
type Redactor = Readonly<ReturnType<typeof redactor>>;

/** Made once per credentials object: a provider keeps one for its life. */
const redactors = new WeakMap<object, Redactor>();

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

function redactorOf(given: Secret): Redactor {
  if (typeof given === "string") return redactor([[REDACTED, given]]);
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

/** `values` as [name, value, client id to pair it with (HTTP Basic)], the secret (or the string) first. */
function redactor(values: readonly (readonly [string, string, string?])[]) {
  const all: string[] = [];
  const named = values.map(([name, value, clientId]) => {
    const forms = encodings(value, clientId);
    all.push(...forms);
    return { name, forms: new Set(forms.map((form) => form.toLowerCase())) };
  });
  // Longest first, so that no shorter form leaves part of a longer one.
  const forms = [...new Set(all)].sort((a, b) => b.length - a.length);
  return {
    /** Any form of any value, longest first, in patterns V8 can compile. */
    patterns: patternsOf(forms),
    /** Each value's own forms (lower case), to name a match, in the order of `patterns`. */
    named,
    /** The value whose runs drop a whole text (the secret, or the string). */
    secret: values[0]![1],
    /** The longest form, so that a text can be cut before it is searched. */
    longest: forms[0]?.length ?? 0,
  };
}

/** How long a case-insensitive pattern may be: V8 refuses one past about 32,000 characters (a token of 16 KB). */
const MAX_PATTERN = 8192;

/**
 * `forms` (longest first) as patterns, in order: groups case-insensitive; a form too long for that as itself, in its
 * own case (the forms hold the upper and lower ones; a pattern of it, even without the `i` flag, may be more than V8
 * compiles: 40,000 non-ASCII characters are).
 */
function patternsOf(forms: readonly string[]): (RegExp | string)[] {
  const patterns: (RegExp | string)[] = [];
  let group: string[] = [];
  const close = () => {
    if (group.length > 0) patterns.push(new RegExp(group.join("|"), "giu"));
    group = [];
  };
  for (const form of forms) {
    const escaped = form.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    if (group.join("|").length + escaped.length >= MAX_PATTERN) close();
    if (escaped.length > MAX_PATTERN) patterns.push(form);
    else group.push(escaped);
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

/** The value as read, trimmed, and with control characters as spaces. */
function variants(secret: string): Set<string> {
  const spaced = secret.replace(CONTROLS, " ");
  const all = [secret, secret.trim(), spaced, spaced.trim()];
  // Normalized by a server (NFC or NFD: alike on screen; r172b F2).
  return new Set(all.flatMap((v) => [v, v.normalize(), v.normalize("NFD")]));
}

/** Replaces each secret, in each of its forms and any case, and base64 runs holding one, with its name. */
export function redact(text: string, secrets: readonly Secret[]): string {
  let clean = text;
  for (const secret of secrets) {
    const made = redactorOf(secret);
    if (made.patterns.length === 0) continue;
    // Whole runs first: a value's own base64 may sit aligned inside one.
    clean = clean.replace(BASE64_RUN, (r) => decodedHolding(r, made) ?? r);
    for (const pattern of made.patterns) {
      clean = clean.replaceAll(pattern, (match) => nameOf(made, match));
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
    if (holdsRun(decoded, made.secret)) found.add(made.named[0]!.name);
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

/**
 * Text from a server, fit for an error: secrets redacted first (no later change may break a form apart; dropped whole
 * while it holds a run of one: {@linkcode redactedWhole}), controls as spaces, cut to `max` (ending with `more`).
 */
export function serverText(
  text: string,
  secrets: readonly Secret[],
  max: number = MAX_SERVER_TEXT,
  more = "…",
): string {
  // Past `max` and every form's length is cut anyway: unsearched (a body may be megabytes).
  const reach = max + Math.max(0, ...secrets.map((s) => redactorOf(s).longest));
  const clean = redactedWhole(text.slice(0, reach + 1), secrets);
  return cut(clean.replace(CONTROLS, " "), max, more);
}

/** `text` redacted ({@linkcode redact}), or dropped whole while it still holds {@linkcode SECRET_RUN} characters of a secret. */
export function redactedWhole(text: string, secrets: readonly Secret[]) {
  const redacted = redact(text, secrets);
  // Escapes mixed in, undone: no list of forms holds every mix (r172d F1). Read strictly too, once and twice (JSON in
  // JSON), composed as the secret is (NFC): secrets with a backslash before an NFD or astral character came through.
  const readings = [unescaped(unescaped(redacted)), strictlyUnescaped(redacted)]
    .flatMap((read) => [read, strictlyUnescaped(read)])
    .map((reading) => reading.normalize());
  const held = secrets.map((s) => redactorOf(s).secret).some((secret) => {
    const composed = secret.normalize();
    return holdsRun(redacted, secret) ||
      readings.some((plain) =>
        holdsRun(plain, composed) ||
        (redactable(secret) && plain.includes(composed))
      );
  });
  return held ? REDACTED : redacted;
}

/** Whether `text` holds a run of {@linkcode SECRET_RUN} characters of the secret, in any case (a hex secret's too). */
export function holdsRun(text: string, secret: string): boolean {
  const lower = text.toLowerCase();
  const runs = secret.length > LONG_SECRET ? runsOf(secret) : undefined;
  const own = runs === undefined ? variants(secret.toLowerCase()) : [lower];
  for (const run of runsIn(own)) {
    if (runs === undefined ? lower.includes(run) : runs.has(run)) return true;
  }
  return false;
}

/** Each run of {@linkcode SECRET_RUN} characters of `texts`, in order. */
function* runsIn(texts: Iterable<string>) {
  for (const text of texts) {
    for (let at = 0; at + SECRET_RUN <= text.length; at++) {
      yield text.slice(at, at + SECRET_RUN);
    }
  }
}

/**
 * Past this length of a secret, the text's runs are looked up in a set of the secret's: searching the text for each of
 * the secret's is quadratic (seconds for a 60 KB token in a 60 KB text). Shorter, the runtime's own search is faster
 * (measured side by side: equal at about 1,000).
 */
const LONG_SECRET = 1000;

/** The runs of each of a secret's variants, lower-cased: made once per secret (a few are in use at a time). */
function runsOf(secret: string): Set<string> {
  let runs = madeRuns.get(secret);
  if (runs !== undefined) return runs;
  runs = new Set(runsIn(variants(secret.toLowerCase())));
  if (madeRuns.size >= 64) madeRuns.clear(); // a bound: tokens come and go
  madeRuns.set(secret, runs);
  return runs;
}
const madeRuns = new Map<string, Set<string>>();

/**
 * Keeps a client's credentials, and each access token it sends until `stop`, out of text (a service may echo them in
 * ids), as server text: redacted, or dropped whole while it holds a run of one.
 */
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
 * `thrown` cleaned where it stands, its class, identity and fields kept: its texts (`message` and `stack` as read, a
 * DOMException's too, kept under a symbol), arrays, its cause and every error it holds (an AggregateError's), each
 * once. Other objects it holds are not walked (a driver's own state is never changed), nor is a frozen error's field.
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
 * A copy of `response` for an error (`showHidden` shows it): status, its reason phrase and each header cleaned and cut
 * like a body, no body. Node's fetch keeps the phrase and header names a server sent (r168b F1: the secret in
 * `statusText`), which Response and Headers may refuse: a copy that threw lost the refusal (F7, F8).
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

/**
 * Makes `JSON.stringify`, `Deno.inspect` and Node's `util.inspect` of `target` show `view()`, named `name`; the three
 * are not enumerable, so a spread of `target` (how its fields are passed on) leaves them behind.
 */
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
