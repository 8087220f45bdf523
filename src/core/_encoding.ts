// Internal: the encodings a secret travels in, which token requests send and redaction looks for.

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
 * Other spellings a server's text may echo `text` in (r172b F2–F5), each found in any case: JSON with non-ASCII as
 * `\uXXXX` (Python's default) and `/` as `\/` (PHP's), every byte percent-encoded, HTML numeric references, and
 * hex bytes apart.
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
