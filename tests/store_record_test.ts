// What a store publishes after a token request, over the record as it
// stands once the request answered.

import { deepStrictEqual } from "node:assert/strict";
import { published, storeOver } from "../src/store/_record.ts";
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

Deno.test("storeOver's set() after two failed update() calls keeps to its rule over the record they read: an older token is not written over a newer one (it was, whatever the rule)", async () => {
  const held = (expiresAt: number) =>
    ({
      token: { accessToken: `token-${expiresAt}`, expiresAt },
    }) as TokenRecord;
  const written: TokenRecord[] = [];
  const storeHolding = (stored: TokenRecord) => ({
    // Each update() reads the record, then its write is dropped.
    update: (_key: string, change: (r?: TokenRecord) => unknown) => (
      change(stored), Promise.reject(new Error("dropped"))
    ),
    set: (_key: string, record: TokenRecord) =>
      Promise.resolve(void written.push(record)),
  });
  const newer = (stored: TokenRecord | undefined, next: TokenRecord) =>
    (stored?.token?.expiresAt ?? -Infinity) >= next.token!.expiresAt;
  const result = held(1_000);
  await storeOver(
    storeHolding(held(2_000)),
    "k",
    result,
    {},
    newer,
  );
  deepStrictEqual(written, []);
  await storeOver(storeHolding(held(500)), "k", result, {}, newer);
  deepStrictEqual(written, [result]);
});
