// Internal: whether a text holds a run of a secret, however little of it, in any case: such a text is dropped whole.

import { memo } from "./_check.ts";
import { CONTROLS } from "./_controls.ts";

/** Runs of this many characters of a secret make a server text unusable. */
export const SECRET_RUN = 12;
/** Values shorter than this, trimmed, are not redacted (an audience "api" would cut every word). */
export const MIN_REDACTED_LENGTH = 8;
/** Whether `value`, trimmed, is long enough to be redacted ({@linkcode MIN_REDACTED_LENGTH}). */
export const redactable = (value: string): boolean =>
  value.trim().length >= MIN_REDACTED_LENGTH;

/** The value as read, trimmed, and with control characters as spaces. */
export function variants(secret: string): Set<string> {
  const spaced = secret.replace(CONTROLS, " ");
  const all = [secret, secret.trim(), spaced, spaced.trim()];
  // Normalized by a server (NFC or NFD: alike on screen).
  return new Set(all.flatMap((v) => [v, v.normalize(), v.normalize("NFD")]));
}

/** Whether `text` holds a run of {@linkcode SECRET_RUN} characters of the secret, in any case (a hex secret's too). */
export function holdsRun(text: string, secret: string): boolean {
  const lower = folded(text);
  const runs = secret.length > LONG_SECRET ? runsOf(secret) : undefined;
  const own = runs === undefined ? variants(folded(secret)) : [lower];
  for (const run of runsIn(own)) {
    if (runs === undefined ? lower.includes(run) : runs.has(run)) return true;
  }
  return false;
}

/** Each run of {@linkcode SECRET_RUN} characters of `texts`, in order. */
function* runsIn(texts: Iterable<string>) {
  for (const text of texts) {
    for (let at = 0; at + SECRET_RUN <= text.length; at++) {
      yield text.slice(at, at + SECRET_RUN);
    }
  }
}

/**
 * Past this length of a secret, the text's runs are looked up in a set of the secret's: searching for each is quadratic
 * (seconds for a 60 KB token in a 60 KB text); shorter, the runtime's search is faster (equal at about 1,000).
 */
const LONG_SECRET = 1000;

/** The runs of each of a secret's variants, lower-cased: made once per secret (a few are in use at a time). */
const runsOf = (secret: string): Set<string> =>
  memo(madeRuns, secret, () => new Set(runsIn(variants(folded(secret)))), 64);
const madeRuns = new Map<string, Set<string>>();

/** What {@linkcode holdsAny} looks up: lower-cased runs of values, and the lengths they come in. */
export interface RunIndex {
  readonly runs: ReadonlySet<string>;
  readonly lengths: ReadonlySet<number>;
}

/**
 * The runs of {@linkcode SECRET_RUN} characters of each variant of `values` (lower-cased), and a value of 8 to 11
 * characters whole: made once for all values, so a text's runs are looked up once (an answer may hold thousands).
 */
export function runIndex(values: readonly string[]): RunIndex {
  const runs = new Set<string>(), lengths = new Set<number>();
  for (const value of values) {
    const own = [value, value.normalize()].map(folded);
    for (const variant of new Set(own.flatMap((v) => [...variants(v)]))) {
      for (const run of runsIn([variant])) runs.add(run);
    }
    if (runs.size > 0) lengths.add(SECRET_RUN);
    if (!redactable(value)) continue;
    for (const whole of own.filter((v) => v.length < SECRET_RUN)) {
      runs.add(whole);
      lengths.add(whole.length);
    }
  }
  return { runs, lengths };
}

/** Whether `text`, in any case, holds a run {@linkcode runIndex} made. */
export function holdsAny(text: string, { runs, lengths }: RunIndex): boolean {
  const lower = folded(text);
  for (const length of lengths) {
    for (let at = 0; at + length <= lower.length; at++) {
      if (runs.has(lower.slice(at, at + length))) return true;
    }
  }
  return false;
}

/** `text` lower-cased, a final sigma as any other (its lower case hangs on what follows it). */
function folded(text: string): string {
  return text.toLowerCase().replaceAll("ς", "σ");
}
