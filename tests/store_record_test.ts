// What a store publishes after a token request, over the record as it
// stands once the request answered.

import { deepStrictEqual } from "node:assert/strict";
import { published } from "../src/store/_record.ts";
import type { TokenRecord } from "../src/store/mod.ts";

Deno.test("a read that fails once after the request is made again: a 401 renewal another process stored meanwhile stays (it fell back to the record read before, and lost it)", async () => {
  const renewal = { at: 2_000, expiresAt: 3_600_000, token: "fingerprint" };
  const before: TokenRecord = {};
  const stored: TokenRecord = { renewal };
  let reads = 0;
  const read = () =>
    ++reads === 1
      ? Promise.reject(new Error("one dropped command"))
      : Promise.resolve(stored);
  const record = await published({ blockedUntil: 5_000 }, before, read);
  deepStrictEqual(record, { blockedUntil: 5_000, renewal });
  // A store that keeps failing: the record read before, as ever.
  const failing = () => Promise.reject(new Error("down"));
  deepStrictEqual(await published({}, { renewal }, failing), { renewal });
});
