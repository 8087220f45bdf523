// What a store publishes after a token request, over the record as it
// stands once the request answered.

import { deepStrictEqual, equal, rejects } from "node:assert/strict";
import { published, storeOver } from "../src/store/_record.ts";
import { createMemoryTokenStore, type TokenRecord } from "../src/store/mod.ts";
import { storeKey } from "../src/store/_key.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { TokenRequestError } from "../src/core/errors.ts";
import { inProcessFake } from "./_fast_setup.ts";
import { manualClock } from "./_helpers.ts";

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

// Review r9: a 429's block published over a record holding an earlier failure dropped the failure, which a provider
// keeps past a 429 (only a token ends it): the fleet's next failure began its cooldown again at 10 s, not escalated.
Deno.test("a 429's block stored over a failure keeps it: the next failure's cooldown escalates from it, and a new provider within it sends no request (it sent one)", async () => {
  const clock = manualClock();
  const api = inProcessFake({ now: clock });
  using _ = api;
  const store = createMemoryTokenStore();
  const key = await storeKey({
    url: api.environment.tokenUrl,
    audience: api.environment.audience,
    clientId: api.credentials.clientId,
    secret: api.credentials.clientSecret,
  });
  const attempt = async (status: number) => {
    api.service.injectTokenFaults({ kind: "status", status, retryAfter: 5 });
    await rejects(
      createTokenProvider({
        ...api.environment,
        ...api.credentials,
        fetch: api.fetch,
        now: clock,
        retry: { retries: 0 },
        store,
      }).getToken(),
      TokenRequestError,
    );
    const { failure, blockedUntil } = (await store.get(key))!;
    return {
      failures: failure?.failures,
      until: blockedUntil ?? failure!.until,
    };
  };
  // Each by a new provider (another process), once the last one's cooldown or block is over.
  for (const status of [503, 503, 429]) {
    clock.set((await attempt(status)).until);
  }
  const escalated = await attempt(503);
  equal(escalated.failures, 3);
  // Within the escalated cooldown, past the first one's 10 s: no request.
  clock.advance(15_000);
  await attempt(503);
  equal(api.service.tokenRequests, 4);
});
