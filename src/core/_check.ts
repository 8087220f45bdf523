// Internal: the one builder of bad-option errors, "<context>: '<option>' <rule>: received <value>" with `option` and
// `rule` as fields for code to read; the checks built on it; small helpers for options and texts.

import { nearest } from "./_nearest.ts";

/** A `TypeError` or `RangeError` for one bad option, with its name and rule as fields. */
export type OptionError = (TypeError | RangeError) & {
  /** The option's name, e.g. `"limit"` or `"tokenUrl"`. */
  readonly option: string;
  /** The rule it broke, e.g. `"must use https"`. */
  readonly rule: string;
};

/** What an option error says: `received` is shown in the message only. */
type Said = [context: string, option: string, rule: string, received?: string];

/** The error for an option that breaks `rule`. */
export function optionError(
  Kind: TypeErrorConstructor | RangeErrorConstructor,
  ...[context, name, rule, received]: Said
): OptionError {
  // The value cut, and a name of the user's (a query key): one of a million characters made a message of a million
  // (errors are at most 2,000), and the secret check over it took seconds.
  const option = cut(name, 200);
  const shown = received === undefined
    ? ""
    : `: received ${cut(received, 200)}`;
  const error = new Kind(`${context}: '${option}' ${rule}${shown}`);
  return Object.assign(error, { option, rule });
}

/** {@linkcode optionError} as a `TypeError`, the usual kind. */
export const typeError = (...said: Said): OptionError =>
  optionError(TypeError, ...said);

/** {@linkcode optionError} as a `RangeError`: a value of the right type, out of range. */
export const rangeError = (...said: Said): OptionError =>
  optionError(RangeError, ...said);

/** The error for a numeric option `value` that breaks `rule`: a `RangeError`, or a `TypeError` when it is no number. */
export function numberError(
  value: unknown,
  ...[context, option, rule]: Said
): OptionError {
  const kind = typeof value === "number" ? rangeError : typeError;
  // A string quoted ("Infinity" is not the number it reads as), cut as other echoed values are.
  const shown = typeof value === "string" ? quoted(value, 80) : echoed(value);
  return kind(context, option, rule, shown);
}

/** The longest wait a timer keeps: `setTimeout` fires a longer one at once. */
export const MAX_TIMER_MS = 2_147_483_647;

const RULES = {
  "safe integer": (n) => Number.isSafeInteger(n),
  "positive integer": (n) => Number.isSafeInteger(n) && n >= 1,
  "non-negative integer": (n) => Number.isSafeInteger(n) && n >= 0,
  "non-negative finite number": (n) => Number.isFinite(n) && n >= 0,
  "positive time in ms, at most 2147483647": (n) => n > 0 && n <= MAX_TIMER_MS,
  "positive time in ms, at most 2147483647, or Infinity": (n) =>
    n === Infinity || (n > 0 && n <= MAX_TIMER_MS),
  "non-negative time in ms, at most 2147483647": (n) =>
    n >= 0 && n <= MAX_TIMER_MS,
  "positive whole time in ms, at most 2147483647": (n) =>
    Number.isInteger(n) && n > 0 && n <= MAX_TIMER_MS,
  "non-negative whole time in ms, at most 2147483647": (n) =>
    Number.isInteger(n) && n >= 0 && n <= MAX_TIMER_MS,
  "non-negative whole time in s, at most 2147483": (n) =>
    Number.isInteger(n) && n >= 0 && n <= MAX_TIMER_MS / 1000,
} satisfies Record<string, (n: number) => boolean>;

/** A rule a numeric option must follow. */
export type NumberRule = keyof typeof RULES;

/** `value`, else `fallback` (none: "must be given"); a `TypeError` when no number, a `RangeError` breaking `rule`. */
export function checkNumber(
  value: number | undefined,
  fallback: number | undefined,
  rule: NumberRule,
  context: string,
  field: string,
): number {
  if (value === undefined && fallback !== undefined) return fallback;
  if (value === undefined) throw typeError(context, field, "must be given");
  if (typeof value !== "number" || !RULES[rule](value)) {
    throw numberError(value, context, field, `must be a ${rule}`);
  }
  return value;
}

/** `value` when it is at most `most`, else a `RangeError`. */
export function checkAtMost(
  value: number,
  most: number,
  context: string,
  field: string,
): number {
  if (value > most) {
    throw rangeError(context, field, `must be at most ${most}`, String(value));
  }
  return value;
}

/** An optional `signal` option: undefined or an AbortSignal. */
export function requireSignal(value: unknown, context: string): void {
  if (value === undefined || value instanceof AbortSignal) return;
  throw typeError(context, "signal", "must be an AbortSignal");
}

/** Asserts that `value` is an options object (`option` names it), not null, an array or a collection (whose entries go unread). */
export function requireOptions(
  value: unknown,
  context: string,
  option = "options",
): asserts value is object {
  // Its kind, not its text: a string given as the options may be the secret, and of any length.
  const kind = value === null
    ? "null"
    : Array.isArray(value)
    ? "an array"
    : [Map, Set, WeakMap, WeakSet].some((type) => value instanceof type)
    ? "a collection"
    : typeof value;
  if (kind !== "object") {
    throw typeError(context, option, "must be an object", kind);
  }
}

/** The option names of `T`, space-separated; a name `T` lacks, or an option of `T` left out, fails to compile. */
export function optionNames<T>(): <S extends string>(
  names: S & SameWords<S, keyof T>,
) => readonly string[] {
  return (names) => names.split(" ");
}
type Words<S> = S extends `${infer W} ${infer R}` ? W | Words<R> : S;
type SameWords<S, K> = [Exclude<K, Words<S>> | Exclude<Words<S>, K>] extends
  [never] ? S
  : { missing: Exclude<K, Words<S>>; unknown: Exclude<Words<S>, K> };

/**
 * {@linkcode requireOptions}, then refuses an own key none of `names` (a misspelt option went unread, its default
 * ruling silently): a `TypeError` naming it (`retry.retires` under `option`), its rule `hints`' for it or the nearest.
 */
export function requireKnownOptions(
  options: unknown,
  names: readonly string[],
  context: string,
  option = "options",
  hints: Readonly<Record<string, string>> = {},
): asserts options is object {
  requireOptions(options, context, option);
  // A Proxy's trap may throw: its own error named no option.
  const keys = tried(() => Object.keys(options));
  const unreadable = "must be an object whose keys can be read";
  if (keys === undefined) throw typeError(context, option, unreadable);
  const found = keys.find((key) => !names.includes(key));
  if (found === undefined) return;
  const key = cut(found, 40);
  const near = nearest(key, names);
  const rule = Object.hasOwn(hints, found)
    ? hints[found]!
    : near === undefined
    ? "is no option"
    : `is no option; did you mean '${near}'?`;
  const name = option === "options" ? key : `${option}.${key}`;
  throw typeError(context, name, rule);
}

/** An option that is one of `values` (the first when undefined); else a `TypeError` naming them (and 40 characters of it). */
export function oneOf<T extends string | boolean>(
  value: unknown,
  values: readonly T[],
  context: string,
  option: string,
): T {
  if (value === undefined) return values[0]!;
  if (values.includes(value as T)) return value as T;
  const names = values.map((v) => JSON.stringify(v)); // "cut", or true
  const rule = `must be ${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;
  throw typeError(context, option, rule, echoed(value, true));
}

/** A non-empty string option: one of spaces alone is empty too (an audience "   " went to the IdP as it was). */
export function requireText(value: unknown, context: string, field: string) {
  if (typeof value !== "string" || value.trim() === "") {
    const received = typeof value === "string" ? quoted(value) : typeof value;
    throw typeError(context, field, "must be a non-empty string", received);
  }
  return value;
}

/** A `now` option: a function whose reading, taken once here, is epoch ms (else each token expired as it came). */
export function requireClock(
  value: (() => number) | undefined,
  context: string,
): (() => number) | undefined {
  // Read once here, then left unwrapped: a client reads its clock on every request.
  checkedReadings(value, context)?.();
  return value;
}

/** A `now` option whose every reading is checked, none read ahead (a clock may start at its first: the fake's `--now`). */
export function checkedReadings(
  value: (() => number) | undefined,
  context: string,
): (() => number) | undefined {
  const clock = requireFunction(value, context, "now");
  return clock && (() => readingOf(clock(), context));
}

function readingOf(at: unknown, context: string): number {
  if (Number.isFinite(at)) return at as number;
  const got = typeof at === "number" ? String(at) : typeof at; // an object's own String may throw
  const rule = "must return epoch ms (a finite number)";
  throw typeError(context, "now", rule, got);
}

/** A `sortBy` option: a field name; `-field` (another API's way to say descending) refused with what to write instead. */
export function requireSortField(given: unknown, context: string): string {
  const sortBy = requireText(given, context, "sortBy");
  // Spaces first too: " -date" went out as sortBy=+-date.
  if (!sortBy.trimStart().startsWith("-")) return sortBy;
  const field = JSON.stringify(sortBy.trimStart().slice(1).trim());
  const rule =
    `must be a field name: write sortBy: ${field}, sortDirection: "DESC"`;
  throw typeError(context, "sortBy", rule, quoted(sortBy));
}

/** What `settingNames` may name: each setting `configFromEnv` reads (a client and its provider share the object). */
export const NAMED_SETTINGS: readonly string[] =
  "baseUrl pciBaseUrl clientId clientSecret audience tokenUrl bodyFormat clientAuthentication"
    .split(" ");

/** A `settingNames` option: what each of `settings` is called where it was configured, by default itself. */
export function settingNamesOf<S extends string>(
  given: unknown,
  settings: readonly S[],
  context: string,
): Record<S, string> {
  if (given !== undefined) {
    requireKnownOptions(given, NAMED_SETTINGS, context, "settingNames");
  }
  const names = {} as Record<S, string>;
  for (const setting of settings) {
    const name = fieldsOf(given)?.[setting];
    names[setting] = name === undefined
      ? setting
      : requireText(name, context, `settingNames.${setting}`);
  }
  return names;
}

/** An optional function option. */
export function requireFunction<T>(
  value: T | undefined,
  context: string,
  field: string,
): T | undefined {
  if (value === undefined || typeof value === "function") return value;
  throw typeError(context, field, "must be a function", typeof value);
}

/** Refuses to go on outside Deno, before anything is touched: a `TypeError` for `option`, `rule` saying what to use. */
export function requireDeno(context: string, option: string, rule: string) {
  if ("Deno" in globalThis) return;
  throw typeError(context, option, rule);
}

/** `value`'s fields, if it is an object (an array is one too). */
export function fieldsOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null
    ? value as Record<string, unknown>
    : undefined;
}

type Given<T> = { [K in keyof T]?: Exclude<T[K], undefined> };
/** `values` without the keys left undefined: an option is given or absent. */
export function given<T extends object>(values: T): Given<T> {
  const entries = Object.entries(values).filter(([, v]) => v !== undefined);
  return Object.fromEntries(entries) as Given<T>;
}

/** A value as `String` reads it (`quote`: quoted); its type, unquoted, where that throws (no prototype, a throwing `toString`). */
function echoed(value: unknown, quote = false): string {
  const text = tried(() => String(value));
  return text === undefined ? typeof value : quote ? quoted(text) : text;
}

/** `text` as a message echoes it: quoted, its first `max` characters. */
const quoted = (text: string, max = 40) => JSON.stringify(text.slice(0, max));

/** `text`, cut to `max` characters ending with `more` when it is longer. */
export function cut(text: string, max: number, more = "…"): string {
  if (text.length <= max) return text;
  // Never half of a pair: a lone surrogate made the text throw URIError in `encodeURIComponent`.
  const kept = text.slice(0, Math.max(0, max - more.length));
  return kept.replace(/[\uD800-\uDBFF]$/, "") + more;
}

/** `cache`'s value for `key`, made when missing; the cache is cleared at `bound` entries (tokens come and go). */
export function memo<K, V>(
  cache: Map<K, V>,
  key: K,
  make: () => V,
  bound: number,
): V {
  let value = cache.get(key);
  if (value !== undefined) return value;
  if (cache.size >= bound) cache.clear();
  cache.set(key, value = make());
  return value;
}

/** What `attempt` returns, or undefined when it throws. */
export function tried<R>(attempt: () => R): R | undefined {
  try {
    return attempt();
  } catch {
    return undefined;
  }
}
