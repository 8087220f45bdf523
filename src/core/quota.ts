/**
 * Reads and writes the token endpoint's quota header,
 * `Idp-Client-Quota-Limit: b=per_hour;q=10;r=7;t=3540,b=per_day;q=50;r=47;t=43200`
 * (Auth0 sends it as `Auth0-Client-Quota-Limit`: pass that name where asked).
 *
 * @example Finding the bucket that runs out first
 * ```ts
 * import { nextExhaustedBucket, parseQuotaHeader } from "@partner-api/client/quota";
 * import { equal } from "node:assert/strict";
 *
 * const buckets = parseQuotaHeader("b=per_hour;q=10;r=2;t=600,b=per_day;q=50;r=40;t=9000");
 * equal(nextExhaustedBucket(buckets)?.bucket, "per_hour");
 * ```
 *
 * @module
 */

import { parseBucket, quotaSegments } from "./_quota_parse.ts";
import { cut, numberError, typeError } from "./_check.ts";
import type { QuotaBucket } from "./quota_types.ts";

export type { QuotaBucket, QuotaSyntaxReason } from "./quota_types.ts";

/**
 * The name of the header that carries the token quota.
 *
 * @example Reading the header from a response
 * ```ts
 * import { parseQuotaHeader, QUOTA_HEADER } from "@partner-api/client/quota";
 * import { equal } from "node:assert/strict";
 *
 * const response = new Response(null, { headers: { [QUOTA_HEADER]: "b=per_hour;q=10;r=9;t=60" } });
 * equal(parseQuotaHeader(response.headers.get(QUOTA_HEADER))[0]?.remaining, 9);
 * ```
 */
export const QUOTA_HEADER = "Idp-Client-Quota-Limit";

/**
 * Parses a quota header value into its buckets, in header order. Whitespace,
 * key order and case, unknown keys and empty segments are tolerated.
 * @returns The buckets, each frozen; `[]` for no header (`null`, `undefined`, `""`).
 * @throws {TypeError} When `value` is no string, `null` or `undefined` (`option: "value"`).
 * @throws {SyntaxError} When a bucket is malformed: `reason`
 * ({@linkcode QuotaSyntaxReason}) says how, `part` holds the text at fault.
 *
 * @example Parsing the documented example
 * ```ts
 * import { parseQuotaHeader } from "@partner-api/client/quota";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * deepStrictEqual(parseQuotaHeader("b=per_hour;q=10;r=7;t=3540, b=per_day;q=50;r=47;t=43200"), [
 *   { bucket: "per_hour", limit: 10, remaining: 7, resetAfter: 3540 },
 *   { bucket: "per_day", limit: 50, remaining: 47, resetAfter: 43200 },
 * ]);
 * deepStrictEqual(parseQuotaHeader(null), []);
 * ```
 */
export function parseQuotaHeader(
  value: string | null | undefined,
): QuotaBucket[] {
  if (value != null && typeof value !== "string") {
    const rule = "must be a string, null or undefined";
    throw typeError("Cannot parse quota header", "value", rule, typeof value);
  }
  return quotaSegments(value).map(parseBucket);
}

const FORMAT = "Cannot format quota header";

/**
 * Writes buckets in the header's format, the inverse of {@linkcode parseQuotaHeader}.
 * @throws {TypeError} When `buckets` is no array, or a bucket name is no string, empty, or holds `,`, `;`, `=` or
 * a character no header takes back as it was (NUL, a line break, one past `\xff`, a space at either end).
 * @throws {RangeError} When a number is not a non-negative safe integer (a `TypeError` when it is no number).
 *
 * @example Writing a header for a test server
 * ```ts
 * import { formatQuotaHeader, parseQuotaHeader } from "@partner-api/client/quota";
 * import { deepStrictEqual, equal } from "node:assert/strict";
 *
 * const buckets = [{ bucket: "per_hour", limit: 10, remaining: 9, resetAfter: 60 }];
 * const value = formatQuotaHeader(buckets);
 * equal(value, "b=per_hour;q=10;r=9;t=60");
 * deepStrictEqual(parseQuotaHeader(value), buckets);
 * ```
 */
export function formatQuotaHeader(buckets: readonly QuotaBucket[]): string {
  checkBuckets(buckets, FORMAT);
  return buckets.map((bucket) => {
    const name = bucket.bucket;
    // What a header value takes and parsing gives back: spaces and tabs inside, bytes to 0xFF (a response may hold
    // them), no NUL or line break, no space at either end (trimmed).
    const rule =
      "must be a non-empty string of bytes without ',', ';', '=', NUL, a line break or spaces at its ends";
    if (typeof name !== "string") {
      throw typeError(FORMAT, "bucket", rule, typeof name);
    }
    const text = /^[^\s\0,;=](?:[^\0\r\n,;=]*[^\s\0,;=])?$/;
    if (!text.test(name) || !/^[\0-\xff]*$/.test(name)) {
      throw typeError(FORMAT, "bucket", rule, JSON.stringify(cut(name, 200)));
    }
    return `b=${bucket.bucket};q=${bucket.limit};r=${bucket.remaining};t=${bucket.resetAfter}`;
  }).join(",");
}

/**
 * Checks that `buckets` is an array of buckets, their numbers non-negative safe integers, for `context`'s message: a
 * bare runtime TypeError (`null`), or a string's letters read as buckets, told no option (r168b F6).
 */
function checkBuckets(buckets: unknown, context: string) {
  if (!Array.isArray(buckets)) {
    throw typeError(context, "buckets", "must be an array", typeof buckets);
  }
  for (const bucket of buckets) {
    if (typeof bucket !== "object" || bucket === null) {
      const received = bucket === null ? "null" : typeof bucket;
      throw typeError(context, "buckets", "must hold bucket objects", received);
    }
    for (const key of ["limit", "remaining", "resetAfter"] as const) {
      const value = bucket[key];
      if (!(Number.isSafeInteger(value) && value >= 0)) {
        const rule = "must be a non-negative safe integer";
        throw numberError(value, context, key, rule);
      }
    }
  }
}

/**
 * Picks the bucket that runs out first: the fewest requests remaining, and
 * among equals the one that resets last (it blocks longest).
 * @returns That bucket, or `undefined` for no buckets.
 * @throws {TypeError} When `buckets` is no array of bucket objects (a `RangeError` for a number out of range).
 *
 * @example Alerting on a low bucket
 * ```ts
 * import { nextExhaustedBucket, parseQuotaHeader } from "@partner-api/client/quota";
 * import { equal } from "node:assert/strict";
 *
 * const low = nextExhaustedBucket(parseQuotaHeader("b=per_hour;q=10;r=1;t=60,b=per_day;q=50;r=1;t=900"));
 * equal(low?.bucket, "per_day"); // as few left, and it blocks longer
 * ```
 */
export function nextExhaustedBucket(
  buckets: readonly QuotaBucket[],
): QuotaBucket | undefined {
  checkBuckets(buckets, "Cannot pick the next exhausted bucket");
  let tightest: QuotaBucket | undefined;
  for (const bucket of buckets) {
    if (
      tightest === undefined || bucket.remaining < tightest.remaining ||
      (bucket.remaining === tightest.remaining &&
        bucket.resetAfter > tightest.resetAfter)
    ) tightest = bucket;
  }
  return tightest;
}

/**
 * How long until a token request can succeed again after a 429: the largest
 * reset time among exhausted buckets (`r=0`), else the smallest reset time.
 * @returns Seconds to wait, or `undefined` when there are no buckets.
 * @throws {TypeError} When `buckets` is no array of bucket objects (a `RangeError` for a number out of range).
 *
 * @example Waiting for the daily bucket
 * ```ts
 * import { parseQuotaHeader, quotaResetAfter } from "@partner-api/client/quota";
 * import { equal } from "node:assert/strict";
 *
 * const wait = quotaResetAfter(parseQuotaHeader("b=per_hour;q=10;r=0;t=60,b=per_day;q=50;r=0;t=900"));
 * equal(wait, 900);
 * ```
 */
export function quotaResetAfter(
  buckets: readonly QuotaBucket[],
): number | undefined {
  checkBuckets(buckets, "Cannot tell the quota's reset");
  // One pass, no spread: a header of 200,000 buckets must not overflow the stack.
  let exhausted: number | undefined;
  let soonest: number | undefined;
  for (const { remaining, resetAfter } of buckets) {
    if (
      remaining === 0 && (exhausted === undefined || resetAfter > exhausted)
    ) exhausted = resetAfter;
    if (soonest === undefined || resetAfter < soonest) soonest = resetAfter;
  }
  return exhausted ?? soonest;
}
