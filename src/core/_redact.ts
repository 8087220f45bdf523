// Internal: keeps secrets out of text that reaches messages and properties.

import { base64, base64url, basicPair, formEncode } from "./_encoding.ts";

const REDACTED = "[redacted]";
/** The most text from a server that an error carries. */
export const MAX_SERVER_TEXT = 1000;
/**
 * C0 and C1 controls, DEL, the line separators that can split a terminal
 * line, and the invisible characters that reorder or hide text: direction
 * embeddings, overrides, isolates and marks (U+202A-202E, U+2066-2069,
 * U+200E/F, U+061C) and zero-width ones (U+200B-200D, U+2060, U+FEFF).
 */
export const CONTROLS =
  // deno-lint-ignore no-control-regex
  /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;

/**
 * A secret to keep out of text: a string, or a client secret with its client
 * id, whose HTTP Basic forms (`base64(id:secret)`) are kept out too.
 */
export type Secret =
  | string
  | { readonly secret: string; readonly clientId: string };

/** Runs of this many characters of a secret make a server text unusable. */
const SECRET_RUN = 12;
const HTML_ESCAPES: [RegExp, string[]][] = [
  [/&/g, ["&amp;"]],
  [/</g, ["&lt;"]],
  [/>/g, ["&gt;"]],
  [/"/g, ["&quot;", "&#34;"]],
  [/'/g, ["&#39;", "&#x27;"]],
];

/** Forms of a secret as text might hold it, longest first. */
function encodings(given: Secret): string[] {
  const { secret, clientId } = typeof given === "string"
    ? { secret: given, clientId: undefined }
    : given;
  const forms = new Set<string>();
  for (const variant of variants(secret)) {
    const url = encodeURIComponent(variant);
    forms.add(variant).add(JSON.stringify(variant).slice(1, -1)).add(url)
      .add(formEncode(variant)).add(encodeURIComponent(url));
    for (const html of htmlEscapes(variant)) forms.add(html);
    forms.add(base64(variant)).add(base64url(variant));
  }
  if (clientId !== undefined) {
    for (const pair of [`${clientId}:${secret}`, basicPair(clientId, secret)]) {
      forms.add(base64(pair)).add(base64url(pair));
    }
  }
  forms.delete("");
  // Longest first, so that no shorter form leaves part of a longer one.
  return [...forms].sort((a, b) => b.length - a.length);
}

/** The secret as read, trimmed, and with control characters as spaces. */
function variants(secret: string): Set<string> {
  const spaced = secret.replace(CONTROLS, " ");
  return new Set([secret, secret.trim(), spaced, spaced.trim()]);
}

function htmlEscapes(text: string): string[] {
  let escaped = [text];
  for (const [pattern, replacements] of HTML_ESCAPES) {
    if (!pattern.test(text)) continue;
    pattern.lastIndex = 0;
    escaped = escaped.flatMap((form) =>
      replacements.map((entity) => form.replace(pattern, entity))
    );
  }
  return escaped;
}

/** Replaces every occurrence of each secret, in each of its forms, with `[redacted]`. */
export function redact(text: string, secrets: readonly Secret[]): string {
  let clean = text;
  for (const secret of secrets) {
    for (const form of encodings(secret)) {
      // Percent-escapes are case-insensitive: %2f and %2F mean the same.
      clean = form.includes("%")
        ? clean.replace(new RegExp(escapeRegExp(form), "gi"), REDACTED)
        : clean.replaceAll(form, REDACTED);
    }
  }
  return clean;
}

/**
 * Text from a server, fit for an error. Secrets are redacted first, before
 * anything else changes the text (so that no change can break a form apart
 * and let it through); then control characters become spaces and the text
 * is cut to `max` characters. A text that still holds
 * {@linkcode SECRET_RUN} characters of a secret in a row (an encoding nobody
 * thought of, a secret cut in two) is dropped whole.
 */
export function serverText(
  text: string,
  secrets: readonly Secret[],
  max: number = MAX_SERVER_TEXT,
): string {
  const redacted = redact(text, secrets);
  if (secrets.some((secret) => holdsRun(redacted, secret))) return REDACTED;
  const clean = redacted.replace(CONTROLS, " ");
  return clean.length <= max ? clean : `${clean.slice(0, max - 1)}…`;
}

/** Whether `text` holds a run of {@linkcode SECRET_RUN} characters of the secret. */
function holdsRun(text: string, given: Secret): boolean {
  const secret = typeof given === "string" ? given : given.secret;
  for (const variant of variants(secret)) {
    for (let at = 0; at + SECRET_RUN <= variant.length; at++) {
      if (text.includes(variant.slice(at, at + SECRET_RUN))) return true;
    }
  }
  return false;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * `error` fit to keep as a `cause`: itself when nothing in it (message,
 * stack, its own causes) holds a secret, else a copy of the same name with
 * the secrets redacted. Runtimes quote the URL in fetch errors, and a secret
 * pasted into one must not survive there.
 */
export function cleanCause(
  error: unknown,
  secrets: readonly Secret[],
): unknown {
  if (!(error instanceof Error)) {
    const text = String(error);
    return redact(text, secrets) === text ? error : redact(text, secrets);
  }
  const cause = error.cause === undefined
    ? undefined
    : cleanCause(error.cause, secrets);
  const text = `${error.message}\n${error.stack ?? ""}`;
  if (redact(text, secrets) === text && cause === error.cause) return error;
  const copy = new Error(
    redact(error.message, secrets),
    cause === undefined ? {} : { cause },
  );
  copy.name = error.name;
  return copy;
}
