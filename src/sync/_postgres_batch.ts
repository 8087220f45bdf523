// Internal: what PostgreSQL can hold of a batch, decided before anything is
// sent, as a pure function: an item it cannot store is left out and named,
// so that no item stops every run at the same batch.

/** What PostgreSQL can hold, as the sink checks it before sending. */
export interface PostgresLimits {
  /**
   * The longest id, in UTF-8 bytes: a primary key's btree entry holds at
   * most 2704 bytes, 12 of them headers (a longer id fails unless it
   * compresses, which cannot be told beforehand).
   */
  readonly idBytes: number;
  /** The largest jsonb container: 2^28 - 1 bytes of elements. */
  readonly itemBytes: number;
  /** The deepest nesting sent: the server's parser is recursive (2 MB of stack holds about 10,000). */
  readonly depth: number;
}

/** PostgreSQL's limits (measured on 15 with its default max_stack_depth). */
export const POSTGRES_LIMITS: PostgresLimits = {
  idBytes: 2692,
  itemBytes: 268_435_455,
  depth: 1000,
};

/** A batch as PostgreSQL can hold it. */
export interface PostgresBatch {
  /** `[[id, item], ...]` as JSON text: each id once, at its last occurrence. */
  readonly json: string;
  /** The ids sent, in that order. */
  readonly ids: readonly string[];
  /** The ids left out, each once: PostgreSQL cannot hold their item or id. */
  readonly skipped: readonly string[];
}

/**
 * What PostgreSQL can hold of a batch, decided before anything is sent so
 * that no item stops every run at the same batch: ids compare as strings
 * and the last occurrence of each wins; an item is left out (and named)
 * when its id holds a NUL, is not well-formed Unicode (a lone surrogate)
 * or is longer than a key may be, or when its JSON holds a string with a
 * NUL (jsonb cannot) or a lone surrogate (jsonb refuses it), nests deeper
 * than the server parses, or is larger than a jsonb value.
 */
export function postgresBatch(
  items: readonly unknown[],
  ids: readonly string[],
  limits: PostgresLimits = POSTGRES_LIMITS,
): PostgresBatch {
  const last = new Map<string, number>();
  ids.forEach((id, i) => last.set(id, i));
  const order = [...last.values()].sort((a, b) => a - b);
  const rows: string[] = [];
  const kept: string[] = [];
  const skipped: string[] = [];
  for (const i of order) {
    const id = ids[i]!;
    const text = idFits(id, limits) ? itemJson(items[i], limits) : undefined;
    if (text === undefined) {
      skipped.push(id);
      continue;
    }
    kept.push(id);
    rows.push(`[${JSON.stringify(id)},${text}]`);
  }
  return { json: `[${rows.join(",")}]`, ids: kept, skipped };
}

function idFits(id: string, limits: PostgresLimits): boolean {
  return !id.includes("\0") && id.isWellFormed() &&
    utf8Length(id) <= limits.idBytes;
}

/**
 * A `\u0000` or a lone surrogate's escape (JSON.stringify writes both as
 * escapes; a pair it writes as is), preceded by an even number of
 * backslashes: an escape, not an escaped backslash followed by "u0000".
 */
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/;

/** The item's JSON text, or undefined when PostgreSQL cannot hold it. */
function itemJson(item: unknown, limits: PostgresLimits): string | undefined {
  let text: string | undefined;
  try {
    text = JSON.stringify(item);
  } catch {
    return undefined; // a BigInt or a cycle: no JSON at all
  }
  if (text === undefined || UNSTORABLE_ESCAPE.test(text)) return undefined;
  // Depth d takes at least 2d characters.
  if (text.length > 2 * limits.depth && deeperThan(text, limits.depth)) {
    return undefined;
  }
  // jsonb takes at most 12 bytes per byte of JSON text (a number in an
  // array: 4 of entry, up to 8 of numeric), so most items need no count.
  const bytes = utf8Length(text);
  if (bytes * 12 + 16 <= limits.itemBytes) return text;
  return jsonbBound(JSON.parse(text)) <= limits.itemBytes ? text : undefined;
}

/** Whether the JSON text nests deeper than `max`. */
function deeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * At least the bytes of `value`'s largest jsonb container: each element
 * costs an entry (4 bytes, 8 with a key) and up to 3 of alignment.
 */
function jsonbBound(value: unknown): number {
  if (typeof value === "string") return utf8Length(value);
  if (typeof value === "number") return 16 + String(value).length;
  if (value === null || typeof value !== "object") return 0;
  if (Array.isArray(value)) {
    let total = 4;
    for (const element of value) total += 7 + jsonbBound(element);
    return total;
  }
  let total = 4;
  for (const [key, element] of Object.entries(value)) {
    total += 11 + utf8Length(key) + jsonbBound(element);
  }
  return total;
}

function utf8Length(text: string): number {
  // Most text is ASCII: one byte per code unit, no encoding needed.
  // deno-lint-ignore no-control-regex
  if (/^[\x00-\x7f]*$/.test(text)) return text.length;
  return new TextEncoder().encode(text).length;
}
