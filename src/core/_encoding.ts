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
