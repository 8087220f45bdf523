// Internal: the SQLite sink's lease, one row per table that says which run
// holds the copy: taken without a busy wait, kept fresh, released.

import type { DatabaseSync } from "node:sqlite";
import {
  isStale,
  keepRefreshed,
  runToken,
  STALE_AFTER,
  waitForLock,
} from "./_lease.ts";
import type { SqliteCommits } from "./_sqlite_commits.ts";
import type { Statements } from "./_sqlite_batch.ts";

/**
 * Keeps a lease taken: refreshed every second, batches sharing
 * transactions, and on release the open one committed, then the lease
 * dropped.
 */
export function holdLease(
  db: DatabaseSync,
  st: Statements,
  commits: SqliteCommits,
  target: string,
  token: string,
): AsyncDisposable {
  const stop = keepRefreshed(() => {
    if (db.isOpen) st.refresh.run(Date.now(), target, token);
    return Promise.resolve();
  });
  commits.grouping = true;
  return {
    [Symbol.asyncDispose]() {
      stop();
      commits.grouping = false;
      commits.commit();
      if (db.isOpen) st.release.run(target, token);
      return Promise.resolve();
    },
  };
}

/** Takes the table's lease for a new run, waiting as `wait` says. */
export function takeLease(
  db: DatabaseSync,
  st: Statements,
  target: string,
  what: string,
  wait: Parameters<typeof waitForLock>[1],
): Promise<string> {
  const token = runToken();
  return waitForLock(what, wait, () => {
    const now = Date.now();
    const taken = withoutBusyWait(
      db,
      () => st.take.get(target, token, now, now - STALE_AFTER) !== undefined,
    );
    if (taken === true) return Promise.resolve({ taken: token });
    const holder = st.holder.get(target) as
      | { refreshed_at: number }
      | undefined;
    return Promise.resolve({
      holder: holder !== undefined && isStale(holder.refreshed_at, now)
        ? "a run that stopped"
        : "another run",
    });
  });
}

/**
 * Runs `write` without waiting for the database's write lock: undefined
 * when another connection holds it. A connection of this process that
 * holds it (a run whose batches share a transaction) commits from a timer,
 * which a busy wait on this thread would keep from running.
 */
function withoutBusyWait<R>(db: DatabaseSync, write: () => R): R | undefined {
  const { timeout } = db.prepare("PRAGMA busy_timeout").get() as {
    timeout: number;
  };
  db.exec("PRAGMA busy_timeout = 0");
  try {
    return write();
  } catch (error) {
    if (db.isTransaction || !/database is locked/.test(String(error))) {
      throw error;
    }
    return undefined;
  } finally {
    db.exec(`PRAGMA busy_timeout = ${timeout}`);
  }
}
