import type { TokenRecord, TokenStore } from "./types.ts";

/**
 * Creates a token store in this process's memory: pass one to several providers to share their token.
 * @returns An empty store.
 *
 * @example Records kept as frozen copies
 * ```ts
 * import { createMemoryTokenStore } from "@partner-api/client/store";
 * import { equal, ok } from "node:assert/strict";
 *
 * const store = createMemoryTokenStore();
 * await store.set("client", { blockedUntil: 1 });
 * ok(Object.isFrozen(await store.get("client")));
 * equal(await store.get("other client"), undefined);
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
