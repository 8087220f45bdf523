// Internal: a line the tool prints, word by word, without the client secret or a token the run knows.

import { withoutSecrets } from "../core/_option_secrets.ts";
import { redact, type Secret } from "../core/_redact.ts";
import { tried } from "../core/_check.ts";
import { redactable } from "../core/_secret_runs.ts";

/** The client secret as a text to keep out, its id "" (an id is a base's words, often). */
type ClientSecret = { readonly secret: string; readonly clientId: "" };

/** The client secret to keep out, made once (as core's forms are); none when short ("secret" is the tool's own word). */
export const keptSecret = (secret: string): ClientSecret | undefined =>
  redactable(secret) ? { secret, clientId: "" } : undefined;

/**
 * `text` as a failure's line shows it: a word holding a run of 12 characters of the secret or a token of `hidden` (as
 * core's checker reads it: decoded, base64, split by `/`) shown as the checker shows it. A run, not the whole: the line
 * may quote a value cut short or quoted for a shell (`'…'\''…'`).
 */
export const shownText = (text: string, hidden: readonly Secret[]): string =>
  text.split(/(\s+)/).map((word) => withoutSecrets(word, hidden)).join("");

/**
 * `text` as a line of a run that went on shows it (standard error, a `--fields` header, `cache clear`'s line): as
 * {@linkcode shownText}, but the secret only where a reading of a word holds it whole, as these lines quote words whole
 * and a weak secret sharing 12 characters with a word (`organizationID`) would hide it. Tokens keep the run rule.
 */
export function shownLine(
  text: string,
  secret: ClientSecret | undefined,
  tokens: readonly string[],
): string {
  // A secret holding a space (a passphrase) spans words: its whole forms go from the line first.
  const line = secret === undefined ? text : redact(text, [secret]);
  return line.split(/(\s+)/).map((word) => {
    const whole = secret !== undefined && holdsWhole(word, secret);
    return withoutSecrets(word, whole ? [secret, ...tokens] : tokens);
  }).join("");
}

/** Whether a reading of `word` holds one of the secret's forms whole. */
function holdsWhole(word: string, secret: ClientSecret): boolean {
  const read = [word];
  // Encoded again (a value encoded once or twice, in an address the URL encodes once more: `%252541`).
  for (let i = 0; i < 3 && /%[0-9a-f]{2}/i.test(read.at(-1)!); i++) {
    read.push(percentDecoded(read.at(-1)!));
  }
  const forms = read.flatMap((text) => [text, formDecoded(text)])
    .flatMap((text) => [text, text.replaceAll("/", "")]);
  return forms.some((form) => redact(form, [secret]) !== form);
}

/** `text` with each run of percent escapes decoded where it is UTF-8 (left as it is where not). */
const percentDecoded = (text: string) =>
  text.replace(
    /(?:%[0-9a-f]{2})+/gi,
    (run) => tried(() => decodeURIComponent(run)) ?? run,
  );

/** `text` form-decoded: a `+` as a space, then its escapes. */
const formDecoded = (text: string) => percentDecoded(text.replaceAll("+", " "));
