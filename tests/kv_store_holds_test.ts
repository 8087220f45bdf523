// Issue 38, the KV token store: a sealed record carries a version that the
// seal covers, and a process that has seen a newer record refuses a
// replayed older copy (a database restored from a backup, a value written
// back) instead of serving its token again. (KV itself refuses values over
// 64 KiB, so no record there is larger.) The fake in process, no socket.

import { notEqual, ok } from "node:assert/strict";
import { createKvTokenStore } from "../src/store/kv.ts";
import { clientDigest } from "./_store_keys.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { inProcessFake } from "./_fast_setup.ts";

Deno.test("a rolled-back sealed KV record is refused: after a 401 renewed the token, a replayed copy of the older record is not served by a process that saw the newer one", async () => {
  using api = inProcessFake();
  using kv = await Deno.openKv(":memory:");
  const digest = await clientDigest(api);
  const recordKey = ["partner-api", "token", digest, "record"];
  const store = createKvTokenStore(kv);
  const provider = () =>
    createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      store,
    });
  const first = provider();
  const older = await first.getToken();
  const copy = await kv.get(recordKey);
  ok(copy.value !== null, "the record is stored");
  await first.reportUnauthorized?.(older.accessToken); // the API said 401
  const renewed = await first.getToken();
  notEqual(renewed.accessToken, older.accessToken);
  await kv.set(recordKey, copy.value); // the store rolled back
  const after = await provider().getToken();
  notEqual(after.accessToken, older.accessToken, "the older token again");
});
