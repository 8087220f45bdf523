// Internal: the encodings a secret travels in, which token requests send and redaction looks for.

import { tried } from "./_check.ts";

export const UTF8 = new TextEncoder();

/** `text` as `application/x-www-form-urlencoded` encodes a value. */
export function formEncode(text: string): string {
  return new URLSearchParams({ s: text }).toString().slice(2);
}

/** `client_id:client_secret` as HTTP Basic sends it (RFC 6749 2.3.1). */
export function basicPair(clientId: string, secret: string): string {
  return `${formEncode(clientId)}:${formEncode(secret)}`;
}

/** `text` (as UTF-8) or bytes, in base64. */
export function base64(text: string | Uint8Array): string {
  const bytes = typeof text === "string" ? UTF8.encode(text) : text;
  return btoa(Array.from(bytes, (byte) => String.fromCharCode(byte)).join(""));
}

/** `text` (as UTF-8) or bytes, in base64url without padding. */
export function base64url(text: string | Uint8Array): string {
  return base64(text).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}

/** `text` (as UTF-8) or bytes, in lower-case hex. */
export function hex(text: string | Uint8Array): string {
  const bytes = typeof text === "string" ? UTF8.encode(text) : text;
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0"))
    .join("");
}

/**
 * Other spellings a server's text may echo `text` in, each found in any case: JSON with non-ASCII as `\uXXXX` (Python's
 * default) and `/` as `\/` (PHP's), every byte percent-encoded, HTML numeric references, and hex bytes apart.
 */
export function escapedForms(text: string): string[] {
  const json = JSON.stringify(text).slice(1, -1);
  const ascii = json.replace(/[\u0080-\uffff]/g, (c) => `\\u${code(c, 4)}`);
  const bytes = Array.from(
    UTF8.encode(text.toWellFormed()),
    (byte) => code(byte, 2),
  );
  const chars = Array.from(text, (c) => c.codePointAt(0)!);
  return [
    ascii,
    json.replaceAll("/", "\\/"),
    ascii.replaceAll("/", "\\/"),
    bytes.map((pair) => `%${pair}`).join(""),
    chars.map((n) => `&#${n};`).join(""),
    chars.map((n) => `&#x${n.toString(16)};`).join(""),
    bytes.join(":"),
    bytes.join(" "),
  ];
}

/** A character's code, or a byte, in `digits` hex digits. */
function code(value: string | number, digits: number): string {
  const n = typeof value === "string" ? value.charCodeAt(0) : value;
  return n.toString(16).padStart(digits, "0");
}

const HTML_ESCAPES: [RegExp, string[]][] = [
  [/&/g, ["&amp;"]],
  [/</g, ["&lt;"]],
  [/>/g, ["&gt;"]],
  // Quotes are left alone by some escapers (PHP's ENT_NOQUOTES, or `"` only).
  [/"/g, ["&quot;", "&#34;", '"']],
  [/'/g, ["&#39;", "&#x27;", "'"]],
];

/** `text` with its characters HTML escapers change written each way they write them. */
export function htmlEscapes(text: string): string[] {
  let escaped = [text];
  for (const [pattern, replacements] of HTML_ESCAPES) {
    if (text.search(pattern) === -1) continue; // search leaves lastIndex as it was
    escaped = escaped.flatMap((form) =>
      replacements.map((entity) => form.replace(pattern, entity))
    );
  }
  return escaped;
}

/**
 * `text` with escapes a server may mix in undone: HTML numeric references, `\u`, `\U`, `\u{…}`, `%u`, runs of `%` or
 * `\x` bytes (UTF-8, else Latin-1), JSON's `\/`, `\"` and `\\`, each backslash escaped again too (JSON in JSON).
 */
export function unescaped(text: string): string {
  return text
    .replace(/&#(x?)([0-9a-f]{1,8});?/gi, (m, x, n) => char(m, n, x ? 16 : 10))
    .replace(
      /\\+u\{([\da-fA-F]{1,8})\}|\\+U([\da-fA-F]{8})|(?:\\+|%)u([\da-fA-F]{4})/g,
      (m, a, b, c) => char(m, a ?? b ?? c, 16),
    )
    .replace(/(?:(?:%|\\+x)[0-9a-f]{2})+/gi, (run) => {
      const bytes = Uint8Array.from(
        run.match(/[0-9a-f]{2}/gi)!,
        (h) => parseInt(h, 16),
      );
      return tried(() => STRICT.decode(bytes)) ?? String.fromCharCode(...bytes);
    })
    .replace(/\\+(["/\\])/g, "$1");
}

const STRICT = new TextDecoder("utf-8", { fatal: true });

/**
 * `text` read as Python's `ascii()` or JSON write it, left to right: `\\` a backslash, `\"` and `\/` themselves, `\xHH`,
 * `\uHHHH`, `\u{H…}` and `\UHHHHHHHH` their code points. `unescaped` takes a run of backslashes for one (JSON in JSON):
 * a text's own backslash before an escape went with it (a secret `\𑂚` written `\\\U0001109a` came through).
 */
export function strictlyUnescaped(text: string): string {
  return text.replace(
    /\\(?:([\\"/])|x([\da-f]{2})|u\{([\da-f]{1,8})\}|U([\da-f]{8})|u([\da-f]{4}))/gi,
    (m, same, x, braced, long, short) =>
      same ?? char(m, x ?? braced ?? long ?? short, 16),
  );
}

/** The character of code `digits` in `radix`, else `match` as it was. */
function char(match: string, digits: string, radix: number): string {
  const n = parseInt(digits, radix);
  if (n > 0x10ffff) return match;
  return n > 0xffff ? String.fromCodePoint(n) : String.fromCharCode(n);
}
