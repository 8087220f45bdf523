// What the KV store's tests share: an in-memory database with providers
// that stand for separate processes, and the names their records go by.

import {
  createKvTokenStore,
  type KvTokenStoreOptions,
} from "../src/store/kv.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import {
  type FakePartnerApi,
  type FakePartnerApiOptions,
  startFakePartnerApi,
} from "../src/testing/mod.ts";
import { hexDigest, storeKey } from "../src/store/_key.ts";

/** One in-memory KV database, and providers that stand for separate processes. */
export async function fleet(fake: FakePartnerApiOptions = {}) {
  const api = await startFakePartnerApi(fake);
  const kv = await Deno.openKv(":memory:");
  const process = (options: KvTokenStoreOptions = {}, now?: () => number) =>
    createTokenProvider({
      ...api.environment,
      ...api.credentials,
      // Each process has its own store object, as it would its own connection.
      store: createKvTokenStore(kv, { pollInterval: 5, ...options }),
      retry: false,
      ...(now === undefined ? {} : { now }),
    });
  return {
    api,
    kv,
    process,
    async [Symbol.asyncDispose]() {
      kv.close();
      await api.close();
    },
  };
}

/** The key a provider uses, as the KV store sees it. */
export function storeKeyOf(
  api: Pick<FakePartnerApi, "environment" | "credentials">,
): Promise<string> {
  return storeKey({
    url: api.environment.tokenUrl,
    audience: api.environment.audience,
    clientId: api.credentials.clientId,
    secret: api.credentials.clientSecret,
  });
}

/** The KV key name of `api`'s client: a digest of its store key. */
export async function keyOf(
  api: Pick<FakePartnerApi, "environment" | "credentials">,
): Promise<string> {
  return await hexDigest(await storeKeyOf(api), 16);
}
