// Issue 46: a cold start pays no PBKDF2 for a secret as the service issues
// them. A client secret of 32 characters or more is keyed by HKDF; a shorter
// one keeps PBKDF2, and its store key is the one 0.3 wrote.

import { equal, notEqual } from "node:assert/strict";
import fc from "fast-check";
import { storeKey } from "../src/store/_key.ts";
import { runs } from "./_property_runs.ts";

const url = new URL("https://idp.example/token");

/** The secret's part of the store key of a client `c` of audience `api`. */
async function secretPart(secret: string): Promise<string> {
  return JSON.parse(
    await storeKey({ url, audience: "api", clientId: "c", secret }),
  )
    .at(-1);
}

Deno.test("a secret under 32 characters keeps its PBKDF2 key: a store written by 0.3 is read as it was", async () => {
  // PBKDF2-SHA256, 210,000 rounds, salt "partner-api token store key v2",
  // 16 bytes: the value 0.3 computed (and Python's hashlib.pbkdf2_hmac).
  equal(
    await secretPart("short-secret-31-characters-long"),
    "9a7741b46cdb65bdb56dba7da5be5c45",
  );
});

Deno.test("a secret of 32 characters or more is keyed by HKDF, unstretched", async () => {
  // HKDF-SHA256, salt "partner-api token store key v3", no info, 16 bytes
  // (RFC 5869, checked with Python's hmac). 0.3 gave this secret
  // "fa365fee37e181e8ae200643ebdf134c": its first provider after the upgrade
  // finds no record and requests one token, once.
  equal(
    await secretPart("a-long-secret-of-32-characters!!"),
    "35dcadc1e7627cc90f1509d8f8e7f20c",
  );
});

Deno.test("another secret never shares a key, short or long, on either side of 32 characters", async () => {
  // Lengths around the boundary, and each secret beside a one-character change.
  const secret = fc.string({ minLength: 1, maxLength: 40 });
  await fc.assert(
    fc.asyncProperty(secret, secret, async (a, b) => {
      fc.pre(a !== b);
      notEqual(await secretPart(a), await secretPart(b));
      notEqual(await secretPart(a), await secretPart(`${a}x`));
    }),
    { numRuns: runs(8, 100) },
  );
  // A long secret and its short prefix: one keyed each way, never equal.
  const long = "x".repeat(32);
  notEqual(await secretPart(long), await secretPart(long.slice(0, 31)));
});
