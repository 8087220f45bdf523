// Internal: an option's refusal that would echo the client secret (pasted into the wrong option) says so instead.

import { holdsRun, MIN_REDACTED_LENGTH, redactInPlace } from "./_redact.ts";

const SECRET_RECEIVED = ": received [client_secret]";
const SECRET_IN_OPTIONS =
  "an option's name or value held the client secret; it is not shown";

/**
 * Runs `check`; where an option it refuses echoes the secret (pasted into the wrong option), the error says
 * `received [client_secret]` instead, in its message and stack.
 */
export function secretOutOfChecks<T>(secret: unknown, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (typeof secret !== "string") throw error;
    const long = secret.trim().length >= MIN_REDACTED_LENGTH;
    // As given, as a quoted echo escapes it (a `"` or `\` in it broke every run), and in an address's echo, which the
    // URL parser percent-encoded or a query form-encoded (a `/`, a space or an `é` every few characters broke each run).
    const forms = [secret, JSON.stringify(secret).slice(1, -1)];
    const holds = (text: string) =>
      forms.some((form) =>
        holdsRun(text, form) ||
        (long && text.toLowerCase().includes(form.toLowerCase()))
      );
    const held = (text: string) =>
      [text, percentDecoded(text), percentDecoded(text.replaceAll("+", " "))]
        .some(holds);
    // The echo of the value; where the option's own name holds it (a key of the user's), the text goes whole.
    const clean = (text: string) => {
      const echo = text.replace(/: received [^\n]*/, SECRET_RECEIVED);
      return held(echo) ? SECRET_IN_OPTIONS : echo;
    };
    throw redactInPlace(error, (text) => held(text) ? clean(text) : text);
  }
}

/** `text` with each run of percent escapes decoded where it is UTF-8 (a malformed one stays as it is). */
function percentDecoded(text: string): string {
  return text.replace(/(?:%[0-9a-f]{2})+/gi, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run;
    }
  });
}
