// The copy stays true in PostgreSQL (issue 45), through both drivers, by
// the schedules and invariants of tests/_sweep_schedules.ts (memory, SQLite
// and JSONL: tests/sync_sweep_property_test.ts): each schedule syncs into a
// table of its own, on one cluster.

import { createPostgresSink } from "../../src/sync/mod.ts";
import { checkSchedules } from "../_sync_fake.ts";
import { DEADLINE, withinDeadline } from "../_processes.ts";
import {
  checkReplay,
  type Copy,
  reached,
  restored,
  type Row,
  runSchedule,
  schedules,
  STEPS,
} from "../_sweep_schedules.ts";
import {
  type Connection,
  drivers,
  inDatabase,
  startCluster,
} from "./_postgres.ts";

let tables = 0;

/** A copy in a new table of `db`. */
function postgresCopy(db: Connection): Copy {
  const table = `copy_${++tables}`;
  const live = async () =>
    await db.rows<{ id: string; item: string }>(
      `SELECT id, item::text AS item FROM "${table}" WHERE deleted_at IS NULL AND to_regclass($1::text) IS NOT NULL`,
      [table],
    ).catch(() => []); // no table before the first write
  let seq = "0";
  return {
    with: (run) => run(createPostgresSink<Row>({ query: db.query, table })),
    rows: async () => (await live()).map((row) => [row.id, row.item]),
    async checkChanges() {
      const changes = await db.rows<{ id: string; change: string }>(
        `SELECT id, change FROM "${table}_changes" ORDER BY seq`,
      );
      checkReplay(changes, (await live()).map((row) => row.id));
    },
    async deletesSince() {
      const rows = await db.rows<{ seq: string; id: string; change: string }>(
        `SELECT seq::text AS seq, id, change FROM "${table}_changes" WHERE seq > $1::text::bigint ORDER BY seq`,
        [seq],
      ).catch(() => []); // no change table before the first write
      seq = rows.at(-1)?.seq ?? seq;
      return rows.flatMap((row) => row.change === "delete" ? [row.id] : []);
    },
  };
}

const KINDS = [
  ...drivers.flatMap(({ name }) => [`${name} ASC`, `${name} DESC`]),
  ...STEPS,
];

Deno.test({
  name:
    "PostgreSQL: the copy equals the list within 2 × ⌈pages / sweep⌉ + ⌈seek / sweep⌉ + 2 runs after changes stop, across appends, back-dated inserts, changes, deletes, crashes, faults and sweep budgets, in both directions, through both drivers",
  // The drivers' pools keep sockets and timers between queries.
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withinDeadline(async () => {
      const cluster = await startCluster();
      if (cluster === undefined) return;
      const [first, second] = drivers as [typeof drivers[0], typeof drivers[0]];
      try {
        await inDatabase(cluster, first, (one) =>
          inDatabase(cluster, second, async (other) => {
            const db = { [first.name]: one, [second.name]: other };
            await checkSchedules(
              schedules(drivers.map(({ name }) =>
                name
              )),
              (schedule) =>
                runSchedule(
                  schedule,
                  (kind) => Promise.resolve(postgresCopy(db[kind]!)),
                ),
              {
                numRuns: 60,
                seed: 41,
                examples: drivers.map(({ name }) => restored(name)),
              },
              KINDS,
              reached,
            );
          }));
      } finally {
        await cluster.stop();
      }
    }, 3 * DEADLINE),
});
