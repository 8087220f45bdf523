// The Redis key names the token store gives a client, for tests that put
// something there before any provider runs.

import type { FakePartnerApi } from "../../src/testing/mod.ts";
import { clientDigest } from "../_store_keys.ts";

/** The Redis key names of `api`'s record and lease under the default prefix. */
export async function keysOf(
  api: FakePartnerApi,
): Promise<{ record: string; lease: string }> {
  const digest = await clientDigest(api);
  return {
    record: `partner-api:token:{${digest}}:record`,
    lease: `partner-api:token:{${digest}}:lease`,
  };
}
