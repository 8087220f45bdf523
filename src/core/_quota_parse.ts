// Internal: the quota header's grammar, for the strict parser and the token path's lenient reader.

import type { QuotaBucket, QuotaSyntaxReason } from "./quota_types.ts";
import { cut, tried } from "./_check.ts";

type Key = "b" | "q" | "r" | "t";

function fail(reason: QuotaSyntaxReason, text: string, part: string): never {
  throw Object.assign(
    new SyntaxError(
      `Cannot parse quota header: ${text}: received "${cut(part, 200)}"`,
    ),
    { reason, part },
  );
}

function parseCount(key: Key, text: string, segment: string): number {
  const value = Number(text);
  if (/^[0-9]+$/.test(text) && Number.isSafeInteger(value)) return value;
  const rule = `'${key}' must be a non-negative safe integer in "${segment}"`;
  return fail("bad-number", rule, text);
}

function readPairs(segment: string): Map<string, string> {
  const pairs = new Map<string, string>();
  for (const rawPair of segment.split(";")) {
    const pair = rawPair.trim();
    if (pair === "") continue;
    const equals = pair.indexOf("=");
    if (equals === -1) fail("missing-equals", "a pair has no '='", pair);
    const key = pair.slice(0, equals).trim().toLowerCase();
    if (!/^[bqrt]$/.test(key)) continue;
    if (pairs.has(key)) {
      fail("repeated-key", `'${key}' appears twice in a bucket`, segment);
    }
    const value = pair.slice(equals + 1).trim(); // formatQuotaHeader writes no '=' in one
    if (value.includes("=")) fail("missing-equals", "a pair has two '='", pair);
    pairs.set(key, value);
  }
  return pairs;
}

export function parseBucket(segment: string): QuotaBucket {
  const pairs = readPairs(segment);
  const field = (key: Key): string => {
    const text = pairs.get(key); // an empty number is a bad one, an empty name none
    if (text !== undefined && (key !== "b" || text !== "")) return text;
    return fail("missing-key", `a bucket has no '${key}'`, segment);
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
  return (value ?? "").split(",")
    .map((segment) => segment.trim())
    .filter((segment) => /[^;\s]/.test(segment)); // \s is what trim removes
}

/** Reads the header bucket by bucket, dropping a bad one: a garbled day cannot hide an exhausted hour. */
export function readQuotaBuckets(value: string | null | undefined) {
  return quotaSegments(value)
    .flatMap((segment) => tried(() => parseBucket(segment)) ?? []);
}
