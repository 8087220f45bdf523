import type { TokenRecord, TokenStore } from "./types.ts";
import { storeOver, type Writes } from "./_record.ts";
import { delay, raceAbort } from "../core/_deadlines.ts";
import { steadyClock } from "../core/_clock.ts";

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
  /** Per key, the end of the request under way, which the other callers wait for, and when it is overdue. */
  const flights = new Map<string, Flight>();
  const clock = steadyClock();
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
    async coordinate(key, { settled, request, signal, requestBudget }) {
      while (true) {
        const before = await this.get(key);
        if (before !== undefined && settled(before)) return before;
        let flight = flights.get(key);
        // Its holder's request overdue (work a runtime dropped never ends): this caller's request is the flight.
        if (flight !== undefined && clock() >= flight.dueBy) {
          flights.delete(key);
          flight = undefined;
        }
        if (flight === undefined) {
          // None under way: this caller's request is the flight (one that throws stores nothing).
          let end = () => {};
          const ended = new Promise<void>((resolve) => end = resolve);
          flights.set(key, { ended, dueBy: clock() + requestBudget + SLACK });
          try {
            const writes = writesThrough(this, { get, set, update });
            return await storeOver(writes, key, await request(), before);
          } finally {
            if (flights.get(key)?.ended === ended) flights.delete(key);
            end();
          }
        }
        // It ended, or is overdue (this caller's request is then the next flight): look again. A waiter given up on
        // leaves it: a holder allowed longer may still bring its token.
        if (await overdueBeforeEnd(flight, clock, signal)) {
          if (flights.get(key) === flight) flights.delete(key);
        }
      }
    },
  };
}

/** How a flight stores its answer through `store`, a store made of the memory store's `own` functions or of some of them. */
function writesThrough(
  store: TokenStore,
  own: Pick<Required<TokenStore>, "get" | "set"> & Writes,
): Writes {
  // Its own get or set beside this update(), which reads and writes neither: stored through them.
  const wrapped = (store.update ?? own.update) === own.update &&
    (store.get !== own.get || store.set !== own.set);
  return {
    set: (at, record) => store.set(at, record),
    update: async (at, change) => {
      if (!wrapped) return store.update?.(at, change) ?? own.update(at, change);
      const next = change(await store.get(at));
      if (next !== undefined) await store.set(at, next);
      return next;
    },
  };
}

/** A request under way: its end, and when it is overdue on the store's clock. */
type Flight = { readonly ended: Promise<void>; readonly dueBy: number };

/** Past a request's budget before it counts as overdue: one that ends at its budget's edge brings its token alone. */
const SLACK = 5_000;

/** Whether `flight`'s request came to be overdue before it ended; `signal` aborting rejects with its reason. */
async function overdueBeforeEnd(
  flight: Flight,
  clock: () => number,
  signal: AbortSignal,
): Promise<boolean> {
  const done = new AbortController();
  // Its timer cleared (rejected) once the race is decided: no failure.
  const due = delay(Math.max(0, flight.dueBy - clock()), done.signal)
    .then(() => true, () => false);
  try {
    const ended = flight.ended.then(() => false);
    return await raceAbort(Promise.race([ended, due]), signal);
  } finally {
    done.abort();
  }
}
