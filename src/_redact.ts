// Internal: keeps secrets out of text that reaches messages and properties.

/** Replaces every occurrence of each secret in `text` with `[redacted]`. */
export function redact(text: string, secrets: readonly string[]): string {
  return secrets.reduce(
    (clean, secret) =>
      secret === "" ? clean : clean.replaceAll(secret, "[redacted]"),
    text,
  );
}
