// Shared by the KV and Redis interleaving tests (outside attack r151 F7):
// store objects over one database, whose every database operation waits
// until a schedule lets it go, one at a time, so that a test chooses how
// their set() and update() calls interleave. Every object must then read the
// write that landed last, and no change() is ever handed `undefined` while a
// record is stored.

import { deepStrictEqual, equal } from "node:assert/strict";
import fc from "fast-check";
import type { TokenRecord, TokenStore } from "../src/store/mod.ts";
import { runs } from "./_property_runs.ts";

/** Runs one database operation of a store object when the schedule lets it (at once when no schedule runs). */
export type Gate = <T>(operation: () => Promise<T>) => Promise<T>;

/** What each store object does, in order. */
export type Plan = readonly ("set" | "update")[];

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

/**
 * One object per plan (`open` makes a store object over the database, its operations through `gate`), after a first
 * record: their calls interleaved by `picks`. Each then reads the write that landed last, as a new object does.
 */
export async function interleave(
  open: (gate: Gate) => TokenStore,
  key: string,
  plans: readonly Plan[],
  picks: readonly number[],
): Promise<void> {
  const schedule = new Schedule();
  const stores = plans.map((_, task) => open(schedule.gate(task)));
  let next = 0;
  const landed: TokenRecord[] = [{ blockedUntil: ++next }];
  await stores[0]!.set(key, landed[0]!);
  let handedNothing = 0;
  await schedule.run(
    plans.map((plan, task) => async () => {
      for (const call of plan) {
        const record = { blockedUntil: ++next };
        if (call === "set") await stores[task]!.set(key, record);
        else {
          await stores[task]!.update!(key, (stored) => {
            if (stored === undefined) handedNothing++;
            return record;
          });
        }
        // Before any other object goes on: the order of landing.
        landed.push(record);
      }
    }),
    picks,
  );
  equal(handedNothing, 0, "change() handed undefined while a record is stored");
  const last = landed.at(-1);
  deepStrictEqual(await open((run) => run()).get(key), last, "a new object");
  for (const [at, store] of stores.entries()) {
    deepStrictEqual(await store.get(key), last, `object ${at}'s get()`);
    const handed: unknown[] = [];
    await store.update!(key, (stored) => void handed.push(stored));
    deepStrictEqual(handed, [last], `object ${at}'s update()`);
  }
}

/**
 * The checks: object 1's set() reads, object 0 updates twice, then the set lands (outside attack r151 F7); then
 * any plans of two and three objects, interleaved at random.
 */
export async function checkInterleavings(open: (gate: Gate) => TokenStore) {
  let run = 0;
  await interleave(open, `f7-${run++}`, [["update", "update"], ["set"]], [
    1, // the set's read
    ...[0, 0, 0, 0], // two updates, each a read and a compare-and-set
    1, // the set's write
  ]);
  const plan = fc.array(fc.constantFrom("set" as const, "update" as const), {
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
      (plans, picks) => interleave(open, `run-${run++}`, plans, picks),
    ),
    { numRuns: runs(100, 1000) },
  );
}
