// Internal: the checked values of flags several commands take, and the error for a caller's mistake. Pure.

import { escapeControls } from "../core/_controls.ts";
import { MAX_CONCURRENCY, MAX_LIMIT } from "./_help.ts";
import type { parseArgs, ParseArgsConfig } from "node:util";

/** Every flag, as node:util parses them. */
export const FLAGS = {
  "env-file": { type: "string" },
  fields: { type: "string" },
  pci: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  cache: { type: "boolean", default: true },
  "show-token": { type: "boolean" },
  limit: { type: "string" },
  page: { type: "string" },
  "sort-by": { type: "string" },
  "sort-direction": { type: "string" },
  since: { type: "string" },
  "max-items": { type: "string" },
  concurrency: { type: "string" },
  query: { type: "string", multiple: true },
  format: { type: "string" },
  verbose: { type: "boolean", short: "v" },
  to: { type: "string" },
  id: { type: "string" },
  full: { type: "boolean" },
  sweep: { type: "string" },
  deletes: { type: "string" },
  "max-deletes": { type: "string" },
  changes: { type: "boolean" },
  priority: { type: "string" },
  "max-duration": { type: "string" },
  "token-body": { type: "string" },
  "client-authentication": { type: "string" },
} as const;

/** The flags given, as node:util parsed them. */
export type Values = Partial<Parsed<{ options: typeof FLAGS }>["values"]>;
type Parsed<T extends ParseArgsConfig> = ReturnType<typeof parseArgs<T>>;

/** A mistake of the caller (flags, configuration): exit code 2. */
export class UsageError extends Error {}

/** A count flag's value, from `min` to `max`; `undefined` when not given. @throws {UsageError} Else. */
export function count(
  text: string | undefined,
  flag: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (
    !/^[0-9]+$/.test(text) || !Number.isSafeInteger(value) || value < min ||
    value > max
  ) {
    const rule = max < Number.MAX_SAFE_INTEGER
      ? `an integer from ${min} to ${max}`
      : min === 0
      ? "a non-negative integer"
      : "a positive integer";
    throw new UsageError(`--${flag} must be ${rule}: received ${text}`);
  }
  return value;
}

/** A flag's value when it is one of `allowed`; `undefined` when not given. @throws {UsageError} Else. */
export function oneOf<T extends string>(
  value: string | undefined,
  flag: string,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined || allowed.includes(value as T)) {
    return value as T | undefined;
  }
  const rule = allowed.join(", ").replace(/, (?=[^,]*$)/, " or ");
  throw new UsageError(`--${flag} must be ${rule}: received ${value}`);
}

/** `--sort-direction`, ASC or DESC in either case; `undefined` when not given. @throws {UsageError} Else. */
export function sortDirection(value: string | undefined) {
  // ASCII letters only: "aſc".toUpperCase() is "ASC".
  const upper = /^(asc|desc)$/i.test(value ?? "")
    ? value?.toUpperCase()
    : value;
  return oneOf(upper, "sort-direction", ["ASC", "DESC"]);
}

/** `--sort-by`: a field name. @throws {UsageError} For `-field`, with the flags that sort by it descending. */
export function sortField(value: string | undefined) {
  if (value?.startsWith("-") && !badName(value.slice(1))) {
    throw new UsageError(
      `--sort-by must be a field name: write --sort-by ${
        value.slice(1)
      } --sort-direction DESC: received ${value}`,
    );
  }
  return fieldName("sort-by", value);
}

/** A field name, checked before anything is opened: no {@linkcode badName}, no `-` first. */
export function fieldName(flag: string, value: string | undefined) {
  if (value !== undefined && (badName(value) || value.startsWith("-"))) {
    const shown = JSON.stringify(value); // a control character as an escape
    throw new UsageError(`--${flag} must be a field name: received ${shown}`);
  }
  return value;
}

/**
 * A name no field or parameter has: blank, or at either end a space, a control, format, private or unassigned
 * character, a variation selector, or one the kernel shows escaped (it shows nothing: U+034F, fillers, tags), or first
 * a mark with nothing to mark. A mark last ends words of many scripts.
 */
export function badName(name: string): boolean {
  const chars = [...name];
  const [first, last] = [chars[0], chars.at(-1)];
  if (first === undefined || /^\p{M}$/u.test(first)) return true;
  return [first, last].some((char) =>
    SHOWS_NOTHING.test(char!) || escapeControls(char!) !== char
  );
}

const SHOWS_NOTHING = /^[\s\p{C}\u180b-\u180f\u2800\ufe00-\ufe0f]$/u;

/**
 * The one argument a command takes, a path naming something.
 * @throws {UsageError} With `missing` when there is none or it names nothing (blank, `/`, `?x`), and for a second.
 */
export function onePositional(positionals: readonly string[], missing: string) {
  const [first, more] = positionals;
  if (first === undefined || !/^\s*\/*[^/?#\s]/.test(first)) {
    throw new UsageError(missing);
  }
  if (more !== undefined) throw new UsageError(`unexpected argument: ${more}`);
  return first;
}

/**
 * The flags `list` and `sync` share: `--limit` up to the service's largest page, `--concurrency`, `--query k=v` pairs.
 * @throws {UsageError} For a bad number, a pair without a name and `=`, or one setting a paging parameter in any case.
 */
export function pagingOf(values: Values) {
  const query: Record<string, string> = {};
  for (const pair of values.query ?? []) {
    const equals = pair.indexOf("=");
    const name = pair.slice(0, equals);
    // The library refuses these names as written; a service reads them in any case, or with a space first (`+limit`).
    const own = equals > 0 && /^(limit|page|sortby|sortdirection)$/i.test(name);
    if (equals < 0 || badName(name) || own) {
      const rule = own ? "k=v (paging and sort have flags)" : "k=v";
      throw new UsageError(`--query must be ${rule}: received ${pair}`);
    }
    // As every flag given twice: the second must not win silently (a sync's query is its copy's identity).
    if (Object.hasOwn(query, name)) {
      throw new UsageError(`--query ${name} is given twice: give it once`);
    }
    query[name] = pair.slice(equals + 1);
  }
  return {
    limit: count(values.limit, "limit", 1, MAX_LIMIT),
    concurrency: count(values.concurrency, "concurrency", 1, MAX_CONCURRENCY),
    query,
  };
}

/**
 * Deno's flags that grant `names` on `path`: scoped to it, unless it holds a comma, which Deno's permission lists
 * take for a separator and cannot escape (`--allow-read=a,b` grants `a` and `b`): then unscoped, saying why.
 */
export function allowFlags(names: readonly ("read" | "write")[], path: string) {
  if (!path.includes(",")) {
    return names.map((name) => `--allow-${name}=${path}`).join(" ");
  }
  const flags = names.map((name) => `--allow-${name}`).join(" ");
  return `${flags}: a path holding a comma cannot be named in Deno's permission lists`;
}
