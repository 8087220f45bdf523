// Internal: the client secret kept out of what the client shows: an option's refusal that would echo it (pasted into the
// wrong option or a path) says so instead, and an error quoting an address it was sent in hides it.

import { memo, tried } from "./_check.ts";
import { formEncode, UTF8 } from "./_encoding.ts";
import {
  BASE64_RUN,
  readings,
  redact,
  REDACTED,
  redactInPlace,
  type Secret,
} from "./_redact.ts";
import { holdsRun, redactable } from "./_secret_runs.ts";

/** What stands for a caller's text (an option's name, a value) holding a token or a run of the secret. */
const NOT_SHOWN = "[not shown]";
const SECRET_IN_OPTIONS =
  "an option's name or value held the client secret; it is not shown";
const TOKEN_IN_OPTIONS =
  "an option's name or value held a token or the client secret; it is not shown";

/** Runs `check`; a refusal echoing the secret (pasted into a wrong option) says `received [client_secret]` instead. */
export function secretOutOfChecks<T>(secret: unknown, check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw withoutSecretEcho(error, secret);
  }
}

/** A refusal echoing `secret` (any form) says `received [client_secret]`; an option named by it, `query.[not shown]`. */
export function withoutSecretEcho<E>(error: E, secret: unknown): E {
  if (typeof secret !== "string") return error;
  const held = holderOf(secret);
  const clean = (text: string): Cleaned => [text, held(text)];
  return echoHidden(error, clean, "[client_secret]", SECRET_IN_OPTIONS);
}

/** A text as cleaned, and whether it still holds what is hidden. */
type Cleaned = readonly [shown: string, held: boolean];

/**
 * `error` with each text `clean`ed; where one still holds what is hidden, an option named by it goes as `query.[not
 * shown]` (field and message), the echoed value as `received <name>`, and a text holding it still goes whole.
 */
function echoHidden<E>(
  error: E,
  clean: (text: string) => Cleaned,
  name: string,
  whole: string,
): E {
  const option: unknown = typeof error === "object" && error !== null
    ? Object.getOwnPropertyDescriptor(error, "option")?.value
    : undefined;
  const renamed = typeof option === "string" && clean(option)[1]
    ? `${option.slice(0, option.indexOf(".") + 1)}${NOT_SHOWN}`
    : undefined;
  return redactInPlace(error, (given) => {
    const text = renamed === undefined
      ? given
      : given === option
      ? renamed
      : given.replaceAll(`'${option}'`, `'${renamed}'`);
    const [shown, held] = clean(text);
    if (!held) return shown;
    const echo = shown.replace(/: received [^\n]*/, `: received ${name}`);
    return clean(echo)[1] ? whole : echo;
  }) as E;
}

/**
 * `error` without the client's secret or a token of `secrets` (one pasted into a path is quoted with the address); id,
 * audience and values under 8 characters stay (often a base's words). Where a run of one stays, addresses lose path and
 * query, then a text still holding one goes whole; an option's refusal loses its echo (`received [not shown]`), and a
 * path given alone (as events and spans show one) goes as `/[not shown: it held …]`.
 */
export function withoutSecrets<E>(error: E, secrets: readonly Secret[]): E {
  const values = secrets.map(secretOnly)
    .filter((s) => redactable(typeof s === "string" ? s : s.secret));
  const hidden = hiddenIn(secrets);
  const clean = (text: string): Cleaned => {
    const redacted = redact(text, values);
    const shown = hidden(redacted);
    if (shown === undefined) return [redacted, false];
    const paths = redacted.replace(PATHS, (_, origin = "") => origin + shown);
    return [paths, hidden(paths) !== undefined]; // asked again only where it held one
  };
  // An option's refusal echoes the caller's text, no address (a query's key, a sort): its echo goes.
  if (Object.hasOwn(Object(error), "option")) {
    return echoHidden(error, clean, NOT_SHOWN, TOKEN_IN_OPTIONS);
  }
  return redactInPlace(error, (text) => {
    const [shown, held] = clean(text);
    return !held ? shown : text.startsWith("/") ? hidden(shown)! : REDACTED;
  }) as E;
}

/** What stands for an address holding a run of the secret or a token ({@linkcode holderOf}); undefined if neither. */
function hiddenIn(secrets: readonly Secret[]) {
  const secret = secrets.find((s) => typeof s === "object")?.secret;
  const held = secret === undefined ? () => false : holderOf(secret);
  const tokens = secrets.flatMap((s) =>
    typeof s === "string" && redactable(s) ? [holderOf(s)] : []
  );
  return (text: string) => {
    if (held(text)) return "/[not shown: it held the client secret]";
    const tokenHeld = tokens.some((holds) => holds(text));
    return tokenHeld ? "/[not shown: it held a token]" : undefined;
  };
}

/** An http(s) address's path and query, to the next space (a `)` or `:` may be the secret's); a list's `no list at /x`,
 * to the `: ` that ends it. */
const PATHS =
  /(https?:\/\/[^\s/?#]+)[/?#]\S*|(?<=no list at )\/\S*?(?=:?\s|$)/g;

/** The credentials without their id and audience, made once per credentials (their forms are made once per object). */
function secretOnly(secret: Secret): Secret {
  if (typeof secret === "string") return secret;
  const only = onlySecrets.get(secret) ??
    { secret: secret.secret, clientId: "" };
  onlySecrets.set(secret, only);
  return only;
}
const onlySecrets = new WeakMap<object, Secret>();

/**
 * Whether a text holds a run of the secret (or a token) as given, JSON-escaped, as the URL parser writes it,
 * form-encoded, or in the text read percent- (up to three times), form- or base64-decoded, or without its `/`s (a `/`,
 * space or `é` every few characters broke each run of the encoded echo). Made once per secret or token.
 */
const holderOf = (secret: string) =>
  memo(holders, secret, () => madeHolder(secret), 64);
const holders = new Map<string, (text: string) => boolean>();

function madeHolder(secret: string): (text: string) => boolean {
  const whole = [
    secret,
    JSON.stringify(secret).slice(1, -1),
    formEncode(secret),
    ...decodings(secret),
  ];
  // Each without its `/`s too, as the text is read: a `/` or `%2F` split it into segments.
  // Lower-cased, as runs are compared: a host's form is most often the secret's own.
  const forms = new Set(
    [...whole, ...addressForms(secret)].flatMap(withoutSlashes)
      .map((form) => form.toLowerCase()),
  );
  // A secret of 8 to 11 characters has no run: its whole forms of 8 or more are looked for (a piece, or a shorter form
  // as `%41%42` decodes, would match other text: a host of the secret's, a base's too).
  const wholes = redactable(secret) ? whole.filter(redactable) : [];
  // Its base64 is under BASE64_RUN's 16 characters from 8 to 11 bytes: shorter runs are read for it (for it only).
  const short = wholes.length > 0 && secret.length < 12 &&
    UTF8.encode(secret).length < 12;
  const runs = short ? SHORT_SECRET_RUN : BASE64_RUN;
  const holds = (text: string) =>
    [...forms].some((form) => holdsRun(text, form)) ||
    wholes.some((form) => text.toLowerCase().includes(form.toLowerCase()));
  return (text) => {
    const read = [text, ...decodings(text)];
    // Encoded again (a value the caller encoded once or twice, in a query the URL encodes once more: `%252541`).
    for (let i = 1; i < 3 && /%[0-9a-f]{2}/i.test(read.at(-2)!); i++) {
      read.push(...decodings(read.at(-2)!));
    }
    // All read at once, a line each: searching one text per base64 run took seconds over a 200,000-character echo.
    const texts = new Set(read.flatMap(withoutSlashes));
    return holds([...texts, ...base64Readings(read, runs)].join("\n"));
  };
}

/** `text`, and without its `/`s where it holds one. */
const withoutSlashes = (text: string) =>
  text.includes("/") ? [text, text.replaceAll("/", "")] : [text];

/** `text` percent-decoded, and form-decoded (`+` as a space). */
const decodings = (text: string) => [
  percentDecoded(text),
  percentDecoded(text.replaceAll("+", " ")),
];

/** What base64 runs of `texts` decode to, at each alignment (an `Authorization: Basic` value pasted). */
const base64Readings = (texts: readonly string[], runs: RegExp) =>
  texts.flatMap((text) =>
    (text.match(runs) ?? []).flatMap((run) => [...readings(run)])
  );

/** Base64 runs that may hold a secret of 8 bytes, the fewest redacted (`MIN_REDACTED_LENGTH`): 11 characters. */
const SHORT_SECRET_RUN = /[A-Za-z0-9+/_-]{11,}={0,2}/g;

/**
 * The secret as the URL parser writes it, whole or in part: in a path, query and fragment, each encoded its own way; a
 * host (punycode; no IP, which it writes anew); a query's value, decoded (up to an `&`). Only their runs of 12 count.
 */
function addressForms(secret: string): string[] {
  const hrefs = ["http://h/", "http://h/?", "http://h/#"].map((lead) =>
    tried(() => new URL(lead + secret).href.slice(lead.length))
  );
  const host = tried(() => new URL(`http://${secret}/`).hostname);
  const query = new URLSearchParams(`a=${secret}`).get("a");
  const ip = host !== undefined && /^[\d.]*$|^\[/.test(host);
  return [...hrefs, ip ? "" : host, query].filter((form) => !!form) as string[];
}

/** `text` with each run of percent escapes decoded as UTF-8, else its ASCII escapes each (a `%FF` kept all encoded). */
function percentDecoded(text: string): string {
  const ascii = (escape: string) =>
    String.fromCharCode(parseInt(escape.slice(1), 16));
  return text.replace(
    /(?:%[0-9a-f]{2})+/gi,
    (run) =>
      tried(() => decodeURIComponent(run)) ??
        run.replace(/%[0-7][0-9a-f]/gi, ascii),
  );
}
