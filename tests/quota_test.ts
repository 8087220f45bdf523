import { deepStrictEqual, equal, ok, throws } from "node:assert/strict";
import fc from "fast-check";
import {
  formatQuotaHeader,
  nextExhaustedBucket,
  parseQuotaHeader,
  QUOTA_HEADER,
  type QuotaBucket,
  quotaResetAfter,
} from "../src/core/quota.ts";
import { runs } from "./_property_runs.ts";

const HOUR = { bucket: "per_hour", limit: 10, remaining: 7, resetAfter: 3540 };
const DAY = { bucket: "per_day", limit: 50, remaining: 47, resetAfter: 43200 };

Deno.test("QUOTA_HEADER is the service's header name", () => {
  equal(QUOTA_HEADER, "Idp-Client-Quota-Limit");
});

Deno.test("parseQuotaHeader() reads the documented example", () => {
  deepStrictEqual(
    parseQuotaHeader(
      "b=per_hour;q=10;r=7;t=3540,b=per_day;q=50;r=47;t=43200",
    ),
    [HOUR, DAY],
  );
});

Deno.test("parseQuotaHeader() returns [] for an absent header", () => {
  deepStrictEqual(parseQuotaHeader(null), []);
  deepStrictEqual(parseQuotaHeader(undefined), []);
  deepStrictEqual(parseQuotaHeader(""), []);
});

Deno.test("parseQuotaHeader() tolerates whitespace, order, unknown keys and empty segments", () => {
  deepStrictEqual(
    parseQuotaHeader(
      " , t = 3540 ; x=1;; r=7 ;q=10; b = per_hour ,, ;b=per_day;Q=50;r=47;t=43200; ,",
    ),
    [HOUR, DAY],
  );
});

Deno.test("parseQuotaHeader() keeps unknown bucket names", () => {
  deepStrictEqual(parseQuotaHeader("b=per_minute;q=1;r=0;t=5"), [
    { bucket: "per_minute", limit: 1, remaining: 0, resetAfter: 5 },
  ]);
});

Deno.test("parseQuotaHeader() returns frozen buckets", () => {
  const [bucket] = parseQuotaHeader("b=per_hour;q=1;r=0;t=5");
  equal(Object.isFrozen(bucket), true);
});

Deno.test("parseQuotaHeader() throws SyntaxError with the reason and the part at fault", async (t) => {
  const cases: [string, string, string][] = [
    ["q=10;r=7;t=3540", "missing-key", "q=10;r=7;t=3540"],
    ["b=per_hour;r=7;t=3540", "missing-key", "b=per_hour;r=7;t=3540"],
    ["b=per_hour;q=10;t=3540", "missing-key", "b=per_hour;q=10;t=3540"],
    ["b=per_hour;q=10;r=7", "missing-key", "b=per_hour;q=10;r=7"],
    ["b=;q=10;r=7;t=1", "missing-key", "b=;q=10;r=7;t=1"],
    ["b=per_hour;q10;r=7;t=3540", "missing-equals", "q10"],
    ["b=per_hour;q=-1;r=7;t=3540", "bad-number", "-1"],
    ["b=per_hour;q=1.5;r=7;t=3540", "bad-number", "1.5"],
    ["b=per_hour;q=10;r=abc;t=3540", "bad-number", "abc"],
    [
      "b=per_hour;q=10;r=7;t=9007199254740993",
      "bad-number",
      "9007199254740993",
    ],
    // An empty number is a bad number (the key is there), its part the empty text.
    ["b=per_hour;q=10;r=7;t=", "bad-number", ""],
    ["b=per_hour;q=10;r= ;t=1", "bad-number", ""],
    // A name formatQuotaHeader refuses to write: a pair with a second '='.
    ["b=a=b;q=1;r=0;t=2", "missing-equals", "b=a=b"],
    ["b=x;q=1=2;r=0;t=2", "missing-equals", "q=1=2"],
    [
      "b=per_hour;q=1;q=2;r=7;t=1",
      "repeated-key",
      "b=per_hour;q=1;q=2;r=7;t=1",
    ],
  ];
  for (const [value, reason, part] of cases) {
    await t.step(value, () => {
      throws(() => parseQuotaHeader(value), (error: unknown) => {
        ok(error instanceof SyntaxError);
        equal((error as SyntaxError & { reason: string }).reason, reason);
        equal((error as SyntaxError & { part: string }).part, part);
        return true;
      });
    });
  }
});

Deno.test("formatQuotaHeader() writes what parseQuotaHeader() reads", () => {
  equal(
    formatQuotaHeader([HOUR, DAY]),
    "b=per_hour;q=10;r=7;t=3540,b=per_day;q=50;r=47;t=43200",
  );
});

Deno.test("the quota helpers given what is no header or no buckets (a number, an object, null in the array, a string, numbers as text) throw a TypeError naming the argument or field, never the runtime's own or an odd result (r168b F6: a bare TypeError, or 'a' for nextExhaustedBucket(\"abc\"), '5' for a reset given as text)", () => {
  const named = (option: string) => (error: unknown) =>
    error instanceof TypeError &&
    (error as TypeError & { option?: string }).option === option;
  for (const value of [5, {}, [], true]) {
    throws(() => parseQuotaHeader(value as never), named("value"));
  }
  const helpers = [formatQuotaHeader, nextExhaustedBucket, quotaResetAfter];
  for (const helper of helpers) {
    throws(() => helper("abc" as never), named("buckets"));
    throws(() => helper([null] as never), named("buckets"));
    const asText = { ...HOUR, remaining: "0", resetAfter: "5" };
    throws(() => helper([asText] as never), named("remaining"));
  }
});

Deno.test("formatQuotaHeader() refuses what the format cannot carry", () => {
  throws(() => formatQuotaHeader([{ ...HOUR, bucket: "a;b" }]), TypeError);
  throws(() => formatQuotaHeader([{ ...HOUR, bucket: "" }]), TypeError);
  throws(() => formatQuotaHeader([{ ...HOUR, limit: -1 }]), RangeError);
  throws(() => formatQuotaHeader([{ ...HOUR, resetAfter: 0.5 }]), RangeError);
});

Deno.test("what formatQuotaHeader() writes from any bucket name, a Headers object takes and parseQuotaHeader() reads back as it was; else it refuses the name (a line break passed, and no header took it)", () => {
  const name = fc.oneof(
    fc.string({
      unit: fc.constantFrom(
        "a",
        " ",
        "\n",
        "\r",
        "\t",
        "\0",
        "\x01",
        "é",
        "ÿ",
        "漢",
        "~",
        "\u00a0",
      ),
    }),
    fc.string(),
  );
  fc.assert(
    fc.property(name, (bucket) => {
      let written: string;
      try {
        written = formatQuotaHeader([{ ...HOUR, bucket }]);
      } catch (error) {
        ok(error instanceof TypeError);
        return;
      }
      const headers = new Headers({ [QUOTA_HEADER]: written });
      deepStrictEqual(parseQuotaHeader(headers.get(QUOTA_HEADER)), [
        { ...HOUR, bucket },
      ]);
    }),
    { numRuns: runs(300, 1_500) },
  );
  // What a response may carry, parsed, is written back as it was.
  for (const bucket of ["per\thour", "quotaé", "a b"]) {
    const written = formatQuotaHeader([{ ...HOUR, bucket }]);
    deepStrictEqual(parseQuotaHeader(written), [{ ...HOUR, bucket }]);
  }
  throws(() => formatQuotaHeader([{ ...HOUR, bucket: 5 as never }]), {
    name: "TypeError",
    option: "bucket",
  });
  throws(() => formatQuotaHeader(null as never), { option: "buckets" });
});

Deno.test("nextExhaustedBucket() picks the fewest remaining, then the latest reset", () => {
  equal(nextExhaustedBucket([]), undefined);
  equal(nextExhaustedBucket([HOUR, DAY]), HOUR);
  const day = { ...DAY, remaining: 7 };
  equal(nextExhaustedBucket([HOUR, day]), day);
});

Deno.test("quotaResetAfter() waits for the last exhausted bucket, else the first reset", () => {
  equal(quotaResetAfter([]), undefined);
  equal(quotaResetAfter([HOUR, DAY]), 3540);
  equal(quotaResetAfter([{ ...HOUR, remaining: 0 }, DAY]), 3540);
  equal(
    quotaResetAfter([{ ...HOUR, remaining: 0 }, { ...DAY, remaining: 0 }]),
    43200,
  );
});

const count = fc.maxSafeNat();
const bucketName = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_.-]{0,15}$/);
const bucketArb: fc.Arbitrary<QuotaBucket> = fc.record({
  bucket: bucketName,
  limit: count,
  remaining: count,
  resetAfter: count,
}).map((bucket) => ({ ...bucket }));

/**
 * Any code point but a lone surrogate, as fast-check's `unit: "binary"`, whose
 * first use takes 0.7 s to build a map of all 1,112,064 of them.
 */
const anyCodePoint = fc.nat(0x10ffff - 0x800).map((n) =>
  String.fromCodePoint(n < 0xd800 ? n : n + 0x800)
);

/** A header's keys and marks, one character each: what spliced pieces are made of. */
const KEYS_AND_MARKS = ["b", "q", "r", "t", "=", ";", ",", " "];

/** Valid headers of 1 to `buckets` buckets, with `least` to `most` of `pieces` put in at one place. */
function splicedHeaders(
  pieces: fc.Arbitrary<string>,
  buckets: number,
  [least, most]: [number, number],
) {
  return fc.tuple(
    fc.array(bucketArb, { minLength: 1, maxLength: buckets }),
    fc.nat(),
    fc.array(pieces, { minLength: least, maxLength: most }),
  ).map(([list, at, added]) => {
    const header = formatQuotaHeader(list);
    const cut = at % (header.length + 1);
    return header.slice(0, cut) + added.join("") + header.slice(cut);
  });
}

Deno.test("parseQuotaHeader() never throws anything but SyntaxError", () => {
  const pieces = fc.constantFrom(
    ...KEYS_AND_MARKS,
    "per_hour",
    "1",
    "-",
    "9007199254740993",
  );
  // A valid header with a piece put in somewhere: pieces alone never make a
  // header that parses, so the buckets' own checks would go untried.
  const spliced = splicedHeaders(pieces, 3, [1, 1]);
  const text = fc.oneof(
    fc.string({ unit: anyCodePoint }),
    fc.array(pieces).map((parts) => parts.join("")),
    spliced,
  );
  const outcomes = new Set<string>();
  fc.assert(
    fc.property(text, (value) => {
      try {
        const buckets = parseQuotaHeader(value);
        outcomes.add(buckets.length === 0 ? "none" : "buckets");
        return buckets.every((b) =>
          [b.limit, b.remaining, b.resetAfter].every(Number.isSafeInteger)
        );
      } catch (error) {
        outcomes.add("refused");
        return error instanceof SyntaxError;
      }
    }),
    { numRuns: runs(1000, 20_000) },
  );
  // The few runs of the quick subset still reach every outcome.
  deepStrictEqual([...outcomes].sort(), ["buckets", "none", "refused"]);
});

Deno.test("parseQuotaHeader() round-trips what formatQuotaHeader() writes", () => {
  fc.assert(
    fc.property(fc.array(bucketArb, { maxLength: 5 }), (buckets) => {
      deepStrictEqual(parseQuotaHeader(formatQuotaHeader(buckets)), buckets);
    }),
    { numRuns: runs(100, 4_000) },
  );
});

Deno.test("formatQuotaHeader() and parseQuotaHeader() are each other's inverse, for any bucket name", () => {
  const name = fc.string({
    unit: fc.constantFrom("a", "Z", "_", "=", ",", ";", " ", "\t", "\u00e9"),
    maxLength: 6,
  });
  const buckets = fc.array(
    fc.record({
      bucket: name,
      limit: count,
      remaining: count,
      resetAfter: count,
    }).map((bucket) => ({ ...bucket })),
    { maxLength: 3 },
  );
  const written = new Set<boolean>();
  fc.assert(
    fc.property(buckets, (buckets) => {
      let header: string;
      try {
        header = formatQuotaHeader(buckets);
      } catch (error) {
        written.add(false);
        return error instanceof TypeError; // a name the format cannot carry
      }
      written.add(true);
      deepStrictEqual(parseQuotaHeader(header), buckets);
      return true;
    }),
    { numRuns: runs(300, 8_000) },
  );
  deepStrictEqual([...written].sort(), [false, true]);
  // And what parseQuotaHeader reads, formatQuotaHeader writes back as it was.
  const pieces = fc.constantFrom(...KEYS_AND_MARKS, "x", "1");
  const spliced = splicedHeaders(pieces, 2, [0, 3]);
  fc.assert(
    fc.property(spliced, (header) => {
      let read: QuotaBucket[];
      try {
        read = parseQuotaHeader(header);
      } catch (error) {
        return error instanceof SyntaxError;
      }
      deepStrictEqual(parseQuotaHeader(formatQuotaHeader(read)), read);
      return true;
    }),
    { numRuns: runs(1000, 20_000) },
  );
});

Deno.test("parseQuotaHeader() reads any spacing and key order of a valid header", () => {
  const space = fc.constantFrom("", " ", "  ", "\t");
  fc.assert(
    fc.property(
      fc.array(fc.tuple(bucketArb, fc.nat(23), space), { maxLength: 4 }),
      (entries) => {
        const header = entries.map(([b, order, pad]) => {
          const pairs = [
            `b${pad}=${pad}${b.bucket}`,
            `q=${b.limit}`,
            `r=${pad}${b.remaining}`,
            `t=${b.resetAfter}${pad}`,
          ];
          const rotated = [
            ...pairs.slice(order % 4),
            ...pairs.slice(0, order % 4),
          ];
          return `${pad}${rotated.join(`${pad};${pad}`)}${pad}`;
        }).join(",");
        deepStrictEqual(parseQuotaHeader(header), entries.map(([b]) => b));
      },
    ),
    { numRuns: runs(100, 4_000) },
  );
});

Deno.test("quotaResetAfter() reads 200,000 buckets without overflowing the stack", () => {
  const buckets = Array.from({ length: 200_000 }, (_, i) => ({
    bucket: `b${i}`,
    limit: 10,
    remaining: i % 2,
    resetAfter: i,
  }));
  equal(quotaResetAfter(buckets), 199_998, "the largest exhausted reset");
  equal(
    quotaResetAfter(buckets.map((b) => ({ ...b, remaining: 1 }))),
    0,
    "else the smallest",
  );
});
