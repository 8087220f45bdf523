// The key as text: a database's plain text order reads a copy's rows in the pass's order.

import fc from "fast-check";
import { equal } from "node:assert/strict";
import { compareKeys } from "../src/sync/_key_order.ts";
import type { SyncKey } from "../src/sync/_window.ts";
import { keyText } from "../src/sync/_key_text.ts";
import { runs } from "./_property_runs.ts";

const sign = (n: number) => Math.sign(n) || 0;
const text = fc.string({ unit: "binary", maxLength: 6 });
const value = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -3, max: 3 }),
  text,
);
const key: fc.Arbitrary<SyncKey> = fc.record({ value, id: text });

Deno.test("two keys' texts compare as the keys do (numbers before strings, -0 as 0, a prefix first, lone surrogates too)", () => {
  fc.assert(
    fc.property(key, key, (a, b) => {
      const [x, y] = [keyText(a), keyText(b)];
      equal(sign(x < y ? -1 : x > y ? 1 : 0), sign(compareKeys(a, b)));
    }),
    { numRuns: runs(300, 20_000) },
  );
});

Deno.test("the text is ASCII without NUL (PostgreSQL text holds none): every database orders it byte by byte as JS does; an ASCII id costs a byte a character", () => {
  fc.assert(
    fc.property(
      key,
      (a) => equal([...keyText(a)].every((c) => c > "\0" && c < "\x80"), true),
    ),
    { numRuns: runs(100, 2_000) },
  );
  equal(keyText({ value: -0, id: "a" }), keyText({ value: 0, id: "a" }));
  const uuid = "3f2b8c1e-9d4a-4e6b-8f1c-2a7d5e9b0c3d";
  equal(keyText({ value: uuid, id: uuid }).length, 2 + 2 * 36); // it was 2 + 8 × 36
});
