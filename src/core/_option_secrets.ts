// Internal: the client secret kept out of what the client shows: an option's refusal that would echo it (pasted into the
// wrong option or a path) says so instead, and an error quoting an address it was sent in hides it.

import { tried } from "./_check.ts";
import { formEncode, UTF8 } from "./_encoding.ts";
import {
  BASE64_RUN,
  holdsRun,
  readings,
  redact,
  redactable,
  redactInPlace,
  type Secret,
} from "./_redact.ts";

/** What stands for a caller's text (an option's name, a value) holding a token or a run of the secret. */
const NOT_SHOWN = "[not shown]";
const SECRET_IN_OPTIONS =
  "an option's name or value held the client secret; it is not shown";
const TOKEN_IN_OPTIONS =
  "an option's name or value held a token or the client secret; it is not shown";

/**
 * Runs `check`; where an option it refuses echoes the secret (pasted into the wrong option), the error says
 * `received [client_secret]` instead, in its message and stack.
 */
export function secretOutOfChecks<T>(secret: unknown, check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw withoutSecretEcho(error, secret);
  }
}

/**
 * `error`, an option's refusal, saying `received [client_secret]` where it echoes `secret` (whole, cut, encoded), and
 * naming an option whose name holds it (a query key of the user's) `query.[not shown]`.
 */
export function withoutSecretEcho<E>(error: E, secret: unknown): E {
  if (typeof secret !== "string") return error;
  const held = holderOf(secret);
  return echoHidden(
    error,
    (text) => [text, held(text)],
    "[client_secret]",
    SECRET_IN_OPTIONS,
  );
}

/** A text as cleaned, and whether it still holds what is hidden. */
type Cleaned = readonly [shown: string, held: boolean];

/**
 * `error` with each text `clean`ed; where one still holds what is hidden, the caller's text it echoes goes: an option
 * named by it as `query.[not shown]` (the project's part of the name kept, as the `option` field and in the message),
 * the value as `received <name>`; a text holding it still (a rule quoting it) goes whole.
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
 * `error`, its message, stack and fields, without the client's secret or a token of `secrets` (one pasted into a path
 * was sent, and quoted whole with the address); its id and audience stay (a base's words, often), as does a value
 * under 8 characters (a token "test" cut every word). Where a run of the secret or a token stays (the parser keeps a `$`
 * and encodes a space: no form matches; percent-encoded), the addresses' paths and queries go; in an option's refusal,
 * which holds none, the caller's text it echoes goes (`query.[not shown]`, `received [not shown]`).
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
  return Object.hasOwn(Object(error), "option")
    ? echoHidden(error, clean, NOT_SHOWN, TOKEN_IN_OPTIONS)
    : redactInPlace(error, (text) => clean(text)[0]) as E;
}

/**
 * A request's path (or address) as events, spans and pages show it: without the client's secret or a token of `secrets`,
 * as {@linkcode withoutSecrets} shows it in an error (`/api/items/[client_secret]`); where a run of the secret stays, the
 * path goes.
 */
export function pathWithoutSecrets(
  path: string,
  secrets: readonly Secret[],
): string {
  const clean = withoutSecrets(path, secrets);
  return path.startsWith("/") ? hiddenIn(secrets)(clean) ?? clean : clean;
}

/**
 * What stands for an address that still holds a run of the client secret, or a token of `secrets` percent-encoded (no
 * form of it matches: `Tok%45n`, each character as `%XX`), whole or a run of it (an echo cut short); undefined when it
 * holds neither.
 */
function hiddenIn(secrets: readonly Secret[]) {
  const secret = secretHeld(secrets);
  const tokens = secrets.filter((s): s is string =>
    typeof s === "string" && redactable(s)
  );
  return (text: string) => {
    if (secret(text)) return "/[not shown: it held the client secret]";
    if (!text.includes("%")) return undefined; // the one branch a path without a `%` pays
    // Read as a server that decodes twice reads it, without its `/`s: a `%2F` split the token into segments.
    const read = percentDecoded(percentDecoded(text)).replaceAll("/", "");
    const token = tokens.map((value) => value.replaceAll("/", ""))
      .some((value) => read.includes(value) || holdsRun(read, value));
    return token ? "/[not shown: it held a token]" : undefined;
  };
}

/** {@linkcode holderOf} the client secret among `secrets`; none: nothing holds it. */
function secretHeld(secrets: readonly Secret[]): (text: string) => boolean {
  const secret = secrets.find((s) => typeof s === "object")?.secret;
  return secret === undefined ? () => false : holderOf(secret);
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
 * Whether a text holds a run of the secret in a form an option's echo gives it: as given, as a quoted echo escapes it,
 * as the URL parser writes it in an address, form-encoded (as HTTP Basic sends it), and in the text read percent-,
 * form- or base64-decoded (a `/`, a space or an `é` every few characters broke each run of the encoded echo; a `%41` of
 * the secret's own, its decoded one).
 */
function holderOf(secret: string): (text: string) => boolean {
  const whole = [
    secret,
    JSON.stringify(secret).slice(1, -1),
    formEncode(secret),
    ...decodings(secret),
  ];
  const forms = new Set([...whole, ...addressForms(secret)]);
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
    // Encoded twice (a value the caller encoded, in a query the URL encodes again: `%2541`), as hiddenIn reads a token.
    if (/%[0-9a-f]{2}/i.test(read[1]!)) read.push(...decodings(read[1]!));
    // Every base64 run read at once (one text each was seconds over a 200,000-character echo).
    return [...read, base64Readings(read, runs).join("\n")].some(holds);
  };
}

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
 * The secret as the URL parser writes it, whole or in part: in a path (a `\` as `/`, tabs dropped, `.` segments gone),
 * a query and a fragment, each percent-encoded its own way (a `%41` of its own kept); a host (punycode; before a `/`,
 * after an `@`; no IP, which it writes anew); a query's value, decoded (up to an `&`). Only their runs of 12 count.
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

/**
 * `text` with each run of percent escapes decoded where it is UTF-8; in a run that is not, its ASCII escapes each (a
 * `%FF` beside them left every one encoded).
 */
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
