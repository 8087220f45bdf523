// The quota header's types, apart so that the parser and ./quota share them without a cycle.

/**
 * One quota bucket of the header, e.g. the hourly one.
 *
 * @example Saying how much is left
 * ```ts
 * import { parseQuotaHeader, type QuotaBucket } from "@partner-api/client/quota";
 * import { equal } from "node:assert/strict";
 *
 * const describe = ({ bucket, remaining, limit, resetAfter }: QuotaBucket) =>
 *   `${bucket}: ${remaining}/${limit}, resets in ${resetAfter} s`;
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

/**
 * The `reason` of `parseQuotaHeader`'s `SyntaxError`: a bucket lacks one of `b`, `q`, `r`, `t`, or names none
 * (`"missing-key"`), a pair has no `=`, or a pair of those four a second (`"missing-equals"`), a number is not a
 * non-negative safe integer, empty too (`"bad-number"`), a key appears twice (`"repeated-key"`).
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
