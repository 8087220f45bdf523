// Shared by the KV and Redis interleaving tests (outside attack r151 F7):
// store objects over one database, whose every database operation waits
// until a schedule lets it go, one at a time, so that a test chooses how
// their set(), update() and coordinate() calls interleave (a coordinate()
// holding the lease publishes as it lets go; one that finds the lease held
// requests alone and writes, its stores having `maxWait: 0`; a "stall" is a
// coordinate() whose lease runs out while it requests). Every object must
// then read the write that landed last, no change() or look is ever handed
// `undefined` while a record is stored, and no write of coordinate() loses
// the block (as a 401's renewal) of the write it landed over: it did not see
// it.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import fc from "fast-check";
import type { TokenRecord, TokenStore } from "../src/store/mod.ts";
import { runs } from "./_property_runs.ts";

/** Runs one database operation of a store object when the schedule lets it (at once when no schedule runs). */
export type Gate = <T>(operation: () => Promise<T>) => Promise<T>;

/** What each store object does, in order. */
export type Plan = readonly ("set" | "update" | "coordinate" | "stall")[];

/** Lets the held operations go one at a time; `picks` choose among the waiting objects, by their number. */
class Schedule {
  #waiting: { task: number; go: () => void }[] = [];
  #running = false;

  gate(task: number): Gate {
    return (operation) => {
      if (!this.#running) return operation();
      const held = new Promise<void>((go) => this.#waiting.push({ task, go }));
      return held.then(operation);
    };
  }

  async run(tasks: (() => Promise<void>)[], picks: readonly number[]) {
    this.#running = true;
    let done = 0;
    const all = Promise.all(tasks.map((task) => task().finally(() => done++)));
    for (let step = 0;; step++) {
      // Settled when every object waits at a gate or is done: what it does meanwhile (crypto, I/O) is not the schedule's.
      for (let turn = 0; this.#waiting.length + done < tasks.length; turn++) {
        if (turn > 10_000) throw new Error("the schedule never settled");
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      if (this.#waiting.length === 0) break;
      this.#waiting.sort((a, b) => a.task - b.task);
      const pick = (picks[step % picks.length] ?? 0) % this.#waiting.length;
      this.#waiting.splice(pick, 1)[0]!.go();
    }
    this.#running = false;
    await all;
  }
}

/** The token a stalled coordinate() brings: a lease lost publishes only a token newer than the one stored. */
export const STALLED_TOKEN = Object.freeze({
  accessToken: "stalled",
  tokenType: "Bearer" as const,
  expiresIn: 3600,
  expiresAt: 4_000_000_000_000,
  quota: [],
});

/**
 * One object per plan (`open` makes a store object over the database, its operations through `gate`, with `maxWait: 0`:
 * a coordinate() never polls), after a first record: their calls interleaved by `picks` (a stall's request runs
 * `expire`, which drops the leases held). Each then reads the write that landed last, as a new object does: that record.
 */
export async function interleave(
  open: (gate: Gate) => TokenStore,
  key: string,
  plans: readonly Plan[],
  picks: readonly number[],
  expire = () => Promise.resolve(),
): Promise<TokenRecord | undefined> {
  const schedule = new Schedule();
  const stores = plans.map((_, task) => open(schedule.gate(task)));
  let next = 0;
  const landed: TokenRecord[] = [{ blockedUntil: ++next }];
  await stores[0]!.set(key, landed[0]!);
  let handedNothing = 0;
  /** Each coordinate() as it landed: what it wrote, and the block of the write it landed over. */
  const coordinated: [TokenRecord, number | undefined][] = [];
  await schedule.run(
    plans.map((plan, task) => async () => {
      for (const call of plan) {
        let record: TokenRecord = { blockedUntil: ++next };
        if (call === "set") await stores[task]!.set(key, record);
        else if (call === "update") {
          await stores[task]!.update!(key, (stored) => {
            if (stored === undefined) handedNothing++;
            return record;
          });
        } else {
          // What it stores: the request's record over the one then stored (the later block of the two).
          let looked = 0;
          const request = call === "stall"
            ? { ...record, token: STALLED_TOKEN }
            : record;
          record = await stores[task]!.coordinate!(key, {
            settled: () => (looked++, false),
            request: async () => (call === "stall" && await expire(), request),
            signal: new AbortController().signal,
            requestBudget: 0,
          });
          if (looked === 0) handedNothing++; // every look saw the store empty
          coordinated.push([record, landed.at(-1)?.blockedUntil]);
        }
        // Before any other object goes on: the order of landing.
        landed.push(record);
      }
    }),
    picks,
  );
  equal(handedNothing, 0, "change() handed undefined while a record is stored");
  for (const [record, over] of coordinated) {
    // A 401's renewal or a quota block landed by another write must stand, as the later of two blocks.
    ok(
      record.blockedUntil! >= over!,
      "coordinate() lost a block it landed over",
    );
  }
  const last = landed.at(-1);
  deepStrictEqual(await open((run) => run()).get(key), last, "a new object");
  for (const [at, store] of stores.entries()) {
    deepStrictEqual(await store.get(key), last, `object ${at}'s get()`);
    const handed: unknown[] = [];
    await store.update!(key, (stored) => void handed.push(stored));
    deepStrictEqual(handed, [last], `object ${at}'s update()`);
  }
  return last;
}

/**
 * The checks: object 1's set() reads, object 0 updates twice, then the set lands (outside attack r151 F7); object 0
 * holds the lease and reads, object 1 updates twice (a 401 reported), then the holder publishes (`looks`: the database
 * operations of a look); object 1 finds the lease held and requests alone, reads, object 2 updates twice, then object
 * 1 writes; object 0's lease runs out (`expire`) as it requests, it finds it lost (`lost`: the database operations of
 * its publish then) and reads, object 1 updates twice, then object 0 writes; then any plans of two and three objects,
 * interleaved at random.
 */
export async function checkInterleavings(
  open: (gate: Gate) => TokenStore,
  looks: number,
  lost: number,
  expire: () => Promise<void>,
) {
  let run = 0;
  await interleave(open, `f7-${run++}`, [["update", "update"], ["set"]], [
    1, // the set's read
    ...[0, 0, 0, 0], // two updates, each a read and a compare-and-set
    1, // the set's write
  ]);
  const raced: Plan[] = [["coordinate"], ["update", "update"]];
  const published = await interleave(open, `publish-${run++}`, raced, [
    ...Array(looks + 2).fill(0), // the holder's look, take and read after the request
    ...[1, 1, 1, 1], // two updates
    ...Array(8).fill(0), // the holder's publish (and what it does when it finds the record changed)
  ]);
  // Over the record the updates left (their later block kept, as a 401's renewal must be), not the one read before.
  deepStrictEqual(published, { blockedUntil: 4 });
  const alone: Plan[] = [["coordinate"], ["coordinate"], ["update", "update"]];
  const lone = await interleave(open, `alone-${run++}`, alone, [
    ...Array(looks + 1).fill(0), // the holder's look and take
    ...Array(looks + 1).fill(1), // object 1's look, and its read after its request
    ...Array(4).fill(2), // two updates
    ...Array(4).fill(1), // object 1's write (and what it does when it finds the record changed)
    ...Array(8).fill(0), // the holder's read and publish
  ]);
  deepStrictEqual(lone, { blockedUntil: 5 });
  const stall: Plan[] = [["stall"], ["update", "update"]];
  const stalled = await interleave(open, `stall-${run++}`, stall, [
    ...Array(looks + 3 + lost).fill(0), // look, take, read, the publish refused, and the read after it
    ...[1, 1, 1, 1], // two updates
    ...Array(8).fill(0), // object 0's write (and what it does when it finds the record changed)
  ], expire);
  deepStrictEqual(stalled, { blockedUntil: 4, token: STALLED_TOKEN });
  const plan = fc.array(fc.constantFrom("set", "update", "coordinate"), {
    minLength: 1,
    maxLength: 4,
  });
  // Picks in runs of one object's steps: a race needs one object to go on for a while as another waits.
  const picks = fc.array(fc.tuple(fc.nat(2), fc.integer({ min: 1, max: 6 })), {
    minLength: 1,
    maxLength: 12,
  }).map((steps) => steps.flatMap(([task, n]) => Array(n).fill(task)));
  await fc.assert(
    fc.asyncProperty(
      fc.array(plan, { minLength: 2, maxLength: 3 }),
      picks,
      async (plans, picks) => {
        await interleave(open, `run-${run++}`, plans, picks);
      },
    ),
    { numRuns: runs(100, 1000) },
  );
}
