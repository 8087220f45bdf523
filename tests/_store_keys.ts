// The digest the token stores put in a client's key names, for tests that
// write a record or a lease there before any provider runs.

import type { FakePartnerApi } from "../src/testing/mod.ts";
import { hexDigest, storeKey } from "../src/store/_key.ts";

/** The digest of `api`'s client in the token stores' key names. */
export async function clientDigest(
  api: Pick<FakePartnerApi, "environment" | "credentials">,
): Promise<string> {
  return await hexDigest(
    await storeKey({
      url: api.environment.tokenUrl,
      audience: api.environment.audience,
      clientId: api.credentials.clientId,
      secret: api.credentials.clientSecret,
    }),
    16,
  );
}
