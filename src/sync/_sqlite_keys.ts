// Internal: the SQLite copy's keys (`keyText`) for the guard's range reads: rows written without one (by 0.4, or staged)
// keyed a page at a time, then a range's unseen rows read from the key's index, each looked up in the cycle's log.

import type { DatabaseSync } from "node:sqlite";
import { setImmediate } from "node:timers";
import { storedKey, type UnseenRow } from "./_key_text.ts";
import type { Commits } from "./_sqlite_commits.ts";
import {
  type Ask,
  keyEndsSql,
  keysWrong,
  once,
  SEEN_TABLE,
  unkeySql,
  unseenSql,
} from "./_sql_sink.ts";

/** Range reads that key the live rows without a key at the first: made again for each run, and after a cycle's end. */
export function keyedCopy(db: DatabaseSync, table: string, target: string) {
  const unkeyed = db.prepare(
    `SELECT rowid, item FROM ${table} WHERE deleted_at IS NULL AND partner_api_key IS NULL AND rowid >= ? ORDER BY rowid LIMIT 1000`,
  );
  const key = db.prepare(
    `UPDATE ${table} SET partner_api_key = ? WHERE rowid = ?`,
  );
  const ends = db.prepare(keyEndsSql(table, "item"));
  // Each looked up in the log's index (NOT IN read the cycle's whole log a window: 38 ms at 50,000 seen).
  const unseen =
    `NOT EXISTS (SELECT 1 FROM ${SEEN_TABLE} WHERE target = ?1 AND cycle = ?2 AND id = t.id)`;
  /** Keys each live row whose key is NULL (all, when `keysWrong`), a page a batch (the lease refreshed between); one `keyOf` cannot key stays NULL. */
  const keys = once(async (commits: Commits, keyOf: Ask[3], signal: Ask[4]) => {
    if (keysWrong(ends.all(), keyOf)) {
      await commits.open(signal);
      commits.batch(() => db.exec(unkeySql(table)));
    }
    unkeyed.setReadBigInts(true);
    for (let from = -(2n ** 63n); from < 2n ** 63n;) {
      signal?.throwIfAborted(); // the pages keyed so far stay
      const page = unkeyed.all(from);
      if (page.length === 0) return;
      await commits.open(signal); // on timers while another connection holds the write lock
      commits.batch(() => {
        for (const { rowid, item } of page) {
          const text = storedKey(keyOf, JSON.parse(`${item}`));
          if (text !== null) key.run(text, rowid as bigint);
        }
      });
      from = (page.at(-1)!.rowid as bigint) + 1n;
      await new Promise((resolve) => setImmediate(resolve));
    }
  });
  return async (
    commits: Commits,
    ...[cycle, range, most, keyOf, signal]: Ask
  ): Promise<UnseenRow[]> => {
    await keys.get(commits, keyOf, signal);
    const params = [target, cycle, Number.isFinite(most) ? most : -1];
    const bind = (key: string) => `?${params.push(key)}`;
    const sql = unseenSql(table, range, bind, unseen, "?3");
    const rows = db.prepare(sql).all(...params);
    return rows.map((row) => ({ id: `${row.id}`, key: `${row.key}` }));
  };
}
