import type { TokenRecord, TokenStore } from "./types.ts";

/**
 * Creates a token store in this process's memory: pass one to several providers to share their token.
 *
 * @returns An empty store.
 *
 * @example Providers made one after another share the token
 * ```ts
 * import { createMemoryTokenStore } from "@partner-api/client/store";
 * import { createTokenProvider } from "@partner-api/client/token";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const options = { ...api.environment, ...api.credentials, store: createMemoryTokenStore() };
 * const first = await createTokenProvider(options).getToken();
 * const second = await createTokenProvider(options).getToken();
 * equal(second.accessToken, first.accessToken);
 * ```
 */
export function createMemoryTokenStore(): TokenStore {
  const records = new Map<string, TokenRecord>();
  return {
    get: (key) => Promise.resolve(records.get(key)),
    set: (key, record) => {
      records.set(key, Object.freeze({ ...record }));
      return Promise.resolve();
    },
    update: (key, change) => {
      const next = change(records.get(key));
      if (next !== undefined) records.set(key, Object.freeze({ ...next }));
      return Promise.resolve(records.get(key));
    },
  };
}
