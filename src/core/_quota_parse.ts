// Internal: the quota header's grammar, shared by the strict public parser
// and the lenient reader of the token path.

/**
 * One quota bucket of the header, e.g. the hourly one.
 *
 * @example Saying how much is left
 * ```ts
 * import { parseQuotaHeader, type QuotaBucket } from "@partner-api/client/quota";
 * import { equal } from "node:assert/strict";
 *
 * function describe({ bucket, remaining, limit, resetAfter }: QuotaBucket): string {
 *   return `${bucket}: ${remaining}/${limit}, resets in ${resetAfter} s`;
 * }
 * const [hourly] = parseQuotaHeader("b=per_hour;q=10;r=2;t=60");
 * equal(describe(hourly!), "per_hour: 2/10, resets in 60 s");
 * ```
 */
export interface QuotaBucket {
  /** Bucket type as sent (`per_hour`, `per_day`, or any other name). */
  readonly bucket: string;
  /** Token requests the bucket allows (`q`). */
  readonly limit: number;
  /** Token requests left in the bucket (`r`). */
  readonly remaining: number;
  /** Seconds until the bucket resets (`t`). */
  readonly resetAfter: number;
}

const KEY_NAMES = { b: "bucket", q: "limit", r: "remaining", t: "resetAfter" };
type Key = keyof typeof KEY_NAMES;
const DIGITS = /^[0-9]+$/;

function isKey(key: string): key is Key {
  return Object.hasOwn(KEY_NAMES, key);
}

/**
 * What is wrong with a quota header, as the `reason` of the `SyntaxError`
 * that `parseQuotaHeader` throws: a bucket lacks one of `b`, `q`, `r`, `t`
 * (`"missing-key"`), a pair has no `=` (`"missing-equals"`), a number is not
 * a non-negative safe integer (`"bad-number"`), a key appears twice
 * (`"repeated-key"`).
 *
 * @example Deciding on the reason
 * ```ts
 * import { parseQuotaHeader, type QuotaSyntaxReason } from "@partner-api/client/quota";
 * import { throws } from "node:assert/strict";
 *
 * const reason: QuotaSyntaxReason = "missing-key"; // the bucket has no `t`
 * throws(() => parseQuotaHeader("b=per_hour;q=10;r=7"), { name: "SyntaxError", reason });
 * ```
 */
export type QuotaSyntaxReason =
  | "missing-key"
  | "missing-equals"
  | "bad-number"
  | "repeated-key";

function fail(reason: QuotaSyntaxReason, text: string, part: string): never {
  throw Object.assign(
    new SyntaxError(`Cannot parse quota header: ${text}: received "${part}"`),
    { reason, part },
  );
}

function parseCount(key: Key, text: string, segment: string): number {
  const value = Number(text);
  if (!DIGITS.test(text) || !Number.isSafeInteger(value)) {
    fail(
      "bad-number",
      `'${key}' must be a non-negative safe integer in "${segment}"`,
      text,
    );
  }
  return value;
}

function readPairs(segment: string): Map<Key, string> {
  const pairs = new Map<Key, string>();
  for (const rawPair of segment.split(";")) {
    const pair = rawPair.trim();
    if (pair === "") continue;
    const equals = pair.indexOf("=");
    if (equals === -1) fail("missing-equals", "a pair has no '='", pair);
    const key = pair.slice(0, equals).trim().toLowerCase();
    if (!isKey(key)) continue;
    if (pairs.has(key)) {
      fail("repeated-key", `'${key}' appears twice in a bucket`, segment);
    }
    pairs.set(key, pair.slice(equals + 1).trim());
  }
  return pairs;
}

export function parseBucket(segment: string): QuotaBucket {
  const pairs = readPairs(segment);
  const field = (key: Key): string => {
    const text = pairs.get(key);
    if (text === undefined || text === "") {
      fail("missing-key", `a bucket has no '${key}'`, segment);
    }
    return text;
  };
  return Object.freeze({
    bucket: field("b"),
    limit: parseCount("q", field("q"), segment),
    remaining: parseCount("r", field("r"), segment),
    resetAfter: parseCount("t", field("t"), segment),
  });
}

/** The header's non-empty bucket segments, trimmed. */
export function quotaSegments(value: string | null | undefined): string[] {
  if (value === null || value === undefined) return [];
  return value.split(",")
    .map((segment) => segment.trim())
    .filter((segment) => segment.replaceAll(";", "").trim() !== "");
}

/**
 * Reads the header bucket by bucket: a bad bucket is dropped and the good
 * ones still count, so a garbled day bucket cannot hide an exhausted hour.
 * The token path uses this: a token already paid for is never lost to it.
 */
export function readQuotaBuckets(
  value: string | null | undefined,
): QuotaBucket[] {
  const buckets: QuotaBucket[] = [];
  for (const segment of quotaSegments(value)) {
    try {
      buckets.push(parseBucket(segment));
    } catch {
      // Dropped on purpose: see above.
    }
  }
  return buckets;
}
