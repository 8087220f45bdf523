// Internal: the transaction of a SQLite sink's connection. Each batch is a savepoint with its checkpoint; while batches
// come fast under a lease, several share one transaction (a page eight batches touch is written to the WAL once). The
// write lock is waited for on timers: SQLite's busy wait blocks the thread (no timer, no Ctrl-C).

import type { DatabaseSync } from "node:sqlite";
import { unrefTimer } from "../core/_deadlines.ts";
import { steadyClock } from "../core/_clock.ts";
import { type LockWait, waitForLock } from "./_lease.ts";

/** Who holds the copy while another connection's transaction keeps a step of the sink out. */
export const WRITER = "another connection to the database, in a transaction";

// Batches that may share a transaction, from a table of GROUP_FROM rows on (below, a commit per batch costs little),
// for at most GROUP_WAIT ms: what a killed run reads again.
const [GROUP_BATCHES, GROUP_FROM, GROUP_WAIT] = [8, 20_000, 100];

/** The transaction of a sink's connection, and when it commits. */
export class Commits {
  readonly #db: DatabaseSync;
  readonly #what: string;
  /** How long `open` waits, and who hears it (each time another connection holds the lock past the busy wait). */
  readonly #wait: Omit<LockWait, "signal">;
  /** How long a transaction has been open is a span: the steady clock's. */
  readonly #clock = steadyClock();
  #batches = 0;
  #opened = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** A commit the timer could not make: the next batch throws it. */
  #failed: unknown;
  /** Whether the open transaction is ours: a caller's own (on a DatabaseSync of theirs) is theirs to end. */
  #ours = false;
  /** The lease this sink's run holds: batches share transactions only while one does. */
  held: string | undefined;
  /** Rows in the table: batches share transactions from GROUP_FROM on. */
  rows = 0;

  constructor(db: DatabaseSync, what: string, wait: Omit<LockWait, "signal">) {
    this.#db = db;
    this.#what = what;
    this.#wait = wait;
  }

  /** Opens this sink's transaction unless one is open, waiting on timers while another connection holds the write lock. */
  async open(signal: AbortSignal | undefined): Promise<void> {
    // Open already (batches sharing one, a caller's own): no busy-wait statements on every batch.
    if (!this.#db.isTransaction) {
      await this.whenFree(signal, () => this.begin() ?? true);
    }
  }

  /** What `write` answers once another connection's lock lets it: tried with a short busy wait, again on timers. */
  async whenFree<R>(
    signal: AbortSignal | undefined,
    write: () => R,
  ): Promise<R> {
    // Carried beside the wait, not as its `taken`: narrowed there, `R` fails a checkout's check under Deno's defaults.
    let done: R | undefined;
    await waitForLock(this.#what, { ...this.#wait, signal }, () => {
      done = withinBusyWait(this.#db, BUSY_STEP, write);
      return Promise.resolve(
        done === undefined ? { holder: WRITER } : { taken: true },
      );
    });
    return done!;
  }

  /** Opens this sink's transaction unless one is open, within the busy wait set (`whenFree`'s, else SQLite's whole one). */
  begin(): void {
    const db = this.#db;
    if (db.isTransaction) return;
    db.exec("BEGIN IMMEDIATE");
    this.#ours = true;
    this.#batches = 0;
    this.#opened = this.#clock();
  }

  /** Runs `apply` as one batch, in its own savepoint in the open transaction (or a new one): one that throws rolls back alone. */
  batch<R>(apply: () => R): R {
    const failed = this.#failed;
    this.#failed = undefined;
    if (failed !== undefined) throw failed;
    const db = this.#db;
    this.begin();
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
    const age = this.#clock() - this.#opened;
    if (
      this.held === undefined || this.rows < GROUP_FROM ||
      ++this.#batches >= GROUP_BATCHES || age >= GROUP_WAIT
    ) {
      this.commit();
    } else {
      this.#timer ??= setTimeout(() => {
        try {
          this.commit();
        } catch (error) {
          this.#failed = error;
        }
      }, GROUP_WAIT - age);
      unrefTimer(this.#timer);
    }
    return result;
  }

  commit(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const ours = this.#ours && this.#db.isOpen && this.#db.isTransaction;
    this.#ours = false;
    if (!ours) return;
    try {
      this.#db.exec("COMMIT");
    } catch (error) {
      // Not committed (outside WAL, a reader holds the file): rolled back, not left holding the lock; read again.
      this.#db.exec("ROLLBACK");
      throw error;
    }
  }
}

/** How long a write tried again waits in SQLite for another connection's write lock: a writer of yours with a busy wait
 * would win every no-wait try; longer blocks the thread. */
export const BUSY_STEP = 100;

/**
 * Runs `write` with SQLite's busy wait cut to `ms` (a long one would keep this thread's shared transaction from
 * committing on its timer): undefined when another connection still holds the write lock.
 */
export function withinBusyWait<R>(
  db: DatabaseSync,
  ms: number,
  write: () => R,
): R | undefined {
  const timeout = Number(db.prepare("PRAGMA busy_timeout").get()!.timeout);
  db.exec(`PRAGMA busy_timeout = ${ms}`);
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
