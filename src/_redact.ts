// Internal: keeps secrets out of text that reaches messages and properties.

const REDACTED = "[redacted]";
/** The most text from a server that an error carries. */
export const MAX_SERVER_TEXT = 1000;
/**
 * C0 and C1 controls, DEL, and the bidi and line separators that can reorder
 * or split a terminal line.
 */
export const CONTROLS =
  // deno-lint-ignore no-control-regex
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The forms a secret takes in text: as is, JSON-escaped, URL- and form-encoded. */
function encodings(secret: string): string[] {
  const forms = new Set([
    secret,
    JSON.stringify(secret).slice(1, -1),
    encodeURIComponent(secret),
    new URLSearchParams({ s: secret }).toString().slice(2),
  ]);
  // Longest first, so that no shorter form leaves part of a longer one.
  return [...forms].sort((a, b) => b.length - a.length);
}

/** Replaces every occurrence of each secret, in each of its encodings, with `[redacted]`. */
export function redact(text: string, secrets: readonly string[]): string {
  let clean = text;
  for (const secret of secrets) {
    if (secret === "") continue;
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
 * Text from a server, fit for an error: control characters replaced by a
 * space, secrets removed (before the cut, so no part of one survives), and
 * at most `max` characters.
 */
export function serverText(
  text: string,
  secrets: readonly string[],
  max: number = MAX_SERVER_TEXT,
): string {
  const clean = redact(text.replace(CONTROLS, " "), secrets);
  return clean.length <= max ? clean : `${clean.slice(0, max - 1)}…`;
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
  secrets: readonly string[],
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
