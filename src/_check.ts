// Internal: the one place that checks numeric options, so that every
// message reads "<context>: '<field>' must be a <rule>: received <value>".

const RULES = {
  "positive integer": (n: number) => Number.isSafeInteger(n) && n >= 1,
  "non-negative integer": (n: number) => Number.isSafeInteger(n) && n >= 0,
  "non-negative finite number": (n: number) => Number.isFinite(n) && n >= 0,
  "positive finite number": (n: number) => Number.isFinite(n) && n > 0,
};

/** A rule a numeric option must follow. */
export type NumberRule = keyof typeof RULES;

/**
 * Returns `value`, or `fallback` when it is undefined.
 *
 * @throws {RangeError} When `value` breaks `rule`.
 */
export function checkNumber(
  value: number | undefined,
  fallback: number,
  rule: NumberRule,
  context: string,
  field: string,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !RULES[rule](value)) {
    throw new RangeError(
      `${context}: '${field}' must be a ${rule}: received ${value}`,
    );
  }
  return value;
}

/** A non-empty string option. */
export function requireText(
  value: unknown,
  context: string,
  field: string,
): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(
      `${context}: '${field}' must be a non-empty string: received ${
        value === "" ? '""' : typeof value
      }`,
    );
  }
  return value;
}

/** An optional function option. */
export function requireFunction<T>(
  value: T | undefined,
  context: string,
  field: string,
): T | undefined {
  if (value === undefined || typeof value === "function") return value;
  throw new TypeError(
    `${context}: '${field}' must be a function: received ${typeof value}`,
  );
}
