import type { TokenRecord, TokenStore } from "./types.ts";
import { storeOver, type Writes } from "./_record.ts";
import { raceAbort } from "../core/_deadlines.ts";

/**
 * Creates a token store in this process's memory: pass one to several providers to share their token.
 * Providers that need one at the same moment send one request: the others wait for it.
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
  /** Per key, the end of the request under way, which the other callers wait for. */
  const flights = new Map<string, Promise<void>>();
  const put = (key: string, record: TokenRecord) =>
    records.set(key, Object.freeze({ ...record }));
  const update: Writes["update"] = (key, change) => {
    const next = change(records.get(key));
    if (next !== undefined) put(key, next);
    return Promise.resolve(records.get(key));
  };
  const get: TokenStore["get"] = (key) => Promise.resolve(records.get(key));
  const set: TokenStore["set"] = (key, record) =>
    Promise.resolve(void put(key, record));
  return {
    get,
    set,
    update,
    // Through `this`: a store made of this one with its own get, set or update keeps them.
    async coordinate(key, { settled, request, signal }) {
      while (true) {
        const before = await this.get(key);
        if (before !== undefined && settled(before)) return before;
        const flight = flights.get(key);
        if (flight === undefined) {
          // None under way: this caller's request is the flight (one that throws stores nothing).
          let end = () => {};
          const ended = new Promise<void>((resolve) => end = resolve);
          flights.set(key, ended);
          try {
            // Its own get or set beside this update(), which reads and writes neither: stored through them.
            const wrapped = (this.update ?? update) === update &&
              (this.get !== get || this.set !== set);
            const writes: Writes = {
              set: (at, record) => this.set(at, record),
              update: async (at, change) => {
                if (!wrapped) {
                  return this.update?.(at, change) ?? update(at, change);
                }
                const next = change(await this.get(at));
                if (next !== undefined) await this.set(at, next);
                return next;
              },
            };
            return await storeOver(writes, key, await request(), before);
          } finally {
            if (flights.get(key) === ended) flights.delete(key);
            end();
          }
        }
        // It ended: look again. A waiter given up on drops it too: it is overdue (work a runtime dropped never ends).
        await raceAbort(flight, signal).catch((error) => {
          if (flights.get(key) === flight) flights.delete(key);
          throw error;
        });
      }
    },
  };
}
