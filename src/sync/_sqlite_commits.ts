// Internal: when the SQLite sink commits. Each batch is its own savepoint
// with its checkpoint, so a checkpoint never commits without its items;
// while batches come fast (a run that holds the table's lease), several
// share one transaction. Items at random places of the primary key dirty
// about a page each, and a commit writes every dirty page to the WAL: a
// page touched by eight batches is written once, not eight times. And the
// lease those commits are made under: one row per table that says which run
// holds the copy, taken without a busy wait, kept fresh, released.

import type { DatabaseSync } from "node:sqlite";
import { unrefTimer } from "../core/_deadlines.ts";
import { steadyClock } from "../core/_clock.ts";
import {
  isStale,
  keepRefreshed,
  runToken,
  STALE_AFTER,
  waitForLock,
} from "./_lease.ts";
import type { Statements } from "./_sqlite_batch.ts";

/** Batches that may share a transaction. */
export const GROUP_BATCHES = 8;
/**
 * Rows a table holds before batches share transactions: in a smaller one a
 * batch's pages are few, and a commit per batch costs little.
 */
export const GROUP_FROM = 20_000;
/**
 * How long a transaction stays open for more batches, in ms: a killed run
 * reads again at most what came in this time (and at least one window).
 */
export const GROUP_WAIT = 100;

/** The transaction of a sink's connection, and when it commits. */
export class SqliteCommits {
  readonly #db: DatabaseSync;
  /** How long a transaction has been open is a span: the steady clock's. */
  readonly #clock = steadyClock();
  #batches = 0;
  #opened = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** A commit the timer could not make: the next batch throws it. */
  #failed: unknown;
  /** Batches share transactions only while a run holds the lease. */
  grouping = false;
  /** Rows in the table: batches share transactions from GROUP_FROM on. */
  rows = 0;

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  /**
   * Runs `apply` as one batch: in its own savepoint, inside the open
   * transaction (or a new one). A batch that throws is rolled back alone,
   * and what came before it commits.
   */
  batch<R>(apply: () => R): R {
    this.#throwFailed();
    const db = this.#db;
    if (!db.isTransaction) {
      db.exec("BEGIN IMMEDIATE");
      this.#batches = 0;
      this.#opened = this.#clock();
    }
    db.exec("SAVEPOINT partner_api_batch");
    let result: R;
    try {
      result = apply();
      db.exec("RELEASE partner_api_batch");
    } catch (error) {
      if (db.isTransaction) {
        db.exec("ROLLBACK TO partner_api_batch; RELEASE partner_api_batch");
      }
      this.commit();
      throw error;
    }
    this.#after();
    return result;
  }

  /** Commits the open transaction, if any. */
  commit(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#db.isOpen && this.#db.isTransaction) this.#db.exec("COMMIT");
  }

  /** After a batch: commit now, unless more may join it soon. */
  #after(): void {
    this.#batches++;
    const age = this.#clock() - this.#opened;
    if (
      !this.grouping || this.rows < GROUP_FROM ||
      this.#batches >= GROUP_BATCHES || age >= GROUP_WAIT
    ) {
      return this.commit();
    }
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      try {
        this.commit();
      } catch (error) {
        this.#failed = error;
      }
    }, GROUP_WAIT - age);
    unrefTimer(this.#timer);
  }

  #throwFailed(): void {
    const failed = this.#failed;
    if (failed === undefined) return;
    this.#failed = undefined;
    throw failed;
  }
}

/**
 * Keeps a lease taken: refreshed every second, batches sharing
 * transactions, and on release the open one committed, then the lease
 * dropped.
 */
export function holdLease(
  db: DatabaseSync,
  st: Statements,
  commits: SqliteCommits,
  { target, token }: { target: string; token: string },
  now: () => number,
): AsyncDisposable {
  const stop = keepRefreshed(() => {
    if (db.isOpen) st.refresh.run(now(), target, token);
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
  clock: () => number,
): Promise<string> {
  const token = runToken();
  return waitForLock<string>(what, wait, () => {
    const now = clock();
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
