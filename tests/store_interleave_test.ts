// Outside attack r151 F7: a plain set() on one KV store object made another
// object of the same database read the record as absent. The set read the
// stored version, the other object wrote two newer ones meanwhile, and the
// set then landed sealed older than what that object had seen: it refused
// the newest record as a rollback, and its update() handed change()
// `undefined`. The lease holder's publish did the same, checking only its
// lease. tests/_store_schedule.ts says what is checked (on Redis:
// tests/redis/redis_store_interleave_test.ts).

import { createKvTokenStore } from "../src/store/kv.ts";
import { checkInterleavings, type Gate } from "./_store_schedule.ts";

/** `kv` as one store object reaches it: each read, write and commit through `gate`. */
function gated(kv: Deno.Kv, gate: Gate): Deno.Kv {
  return new Proxy(kv, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name === "atomic") {
        return () => {
          const operation = target.atomic();
          const commit = operation.commit.bind(operation);
          operation.commit = () => gate(commit);
          return operation;
        };
      }
      if (typeof value !== "function") return value;
      const bound = value.bind(target);
      const held = ["get", "getMany", "set", "delete"].includes(String(name));
      return held ? (...args: unknown[]) => gate(() => bound(...args)) : bound;
    },
  });
}

Deno.test("KV: store objects whose set(), update() and coordinate() calls interleave each read the write that landed last, never absent", async () => {
  using kv = await Deno.openKv(":memory:");
  await checkInterleavings(
    (gate) => createKvTokenStore(gated(kv, gate), { maxWait: 0 }),
    1, // getMany
    2, // the publish's commit, and the read of the lease it finds replaced
    async () => {
      // A lease run out, as KV's expiry removes it.
      for await (const { key } of kv.list({ prefix: [] })) {
        if (key.at(-1) === "lease") await kv.delete(key);
      }
    },
  );
});
