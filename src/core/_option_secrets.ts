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
    // As given, and as a quoted echo escapes it (a `"` or `\` in it broke every run).
    const forms = [secret, JSON.stringify(secret).slice(1, -1)];
    const held = (text: string) =>
      forms.some((form) =>
        holdsRun(text, form) ||
        (long && text.toLowerCase().includes(form.toLowerCase()))
      );
    // The echo of the value; where the option's own name holds it (a key of the user's), the text goes whole.
    const clean = (text: string) => {
      const echo = text.replace(/: received [^\n]*/, SECRET_RECEIVED);
      return held(echo) ? SECRET_IN_OPTIONS : echo;
    };
    throw redactInPlace(error, (text) => held(text) ? clean(text) : text);
  }
}
