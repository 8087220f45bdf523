// The sink contract of a sync: what a sink stores (the checkpoint, with the
// sweep's cursor), what it must do (load, write, lock), and what it hears
// and reports of each batch. Any store that keeps this contract is a sink.

/**
 * Where a sync stands, saved with the items it covers. Plain JSON: a sink
 * stores it as text and gives it back from `load()` as it was.
 *
 * @example What a sink saves
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { createSqliteSink, type SyncCheckpoint, syncList } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual, equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ items: { transactions: 10 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * using sink = createSqliteSink(":memory:", { table: "transactions" });
 * await syncList(client, "transactions", { id: "transactionID", sortBy: "creationDate", sink });
 * const saved: SyncCheckpoint | undefined = await sink.load();
 * equal(saved?.path, "transactions");
 * equal(saved?.complete, true); // the pass reached the end of the list
 * deepStrictEqual(JSON.parse(JSON.stringify(saved)), saved); // plain JSON
 * ```
 */
export interface SyncCheckpoint {
  /** The format of this object. */
  readonly version: 1;
  /** The list's path, without a leading `/`. */
  readonly path: string;
  /** The sort field asked for; `null` for the service's default order. */
  readonly sortBy: string | null;
  /** The id field; `null` when `id` was given as a function. */
  readonly id: string | null;
  /** Further query parameters (filters) of the list. */
  readonly query: Readonly<Record<string, string>>;
  /**
   * The last item committed, by sort value and id: every item up to it that
   * existed for the whole run is in the sink. `null` before the first.
   */
  readonly edge:
    | { readonly value: string | number; readonly id: string }
    | null;
  /** Where the item after `edge` stood in the list when it was last read. */
  readonly offset: number;
  /** Always false now: 0.3's `full` pass (replaced by the sweep). */
  readonly full: boolean;
  /** The head pass reached its end: the copy has everything new it saw. */
  readonly complete: boolean;
  /** `"DESC"` when the list is read newest first; absent for ascending. */
  readonly sortDirection?: "DESC";
  /**
   * The largest page size the service was seen to honour (a full page of
   * it came back): a shorter page of at most that size is the list's end.
   * Absent before the first such page (and in 0.3's checkpoints).
   */
  readonly accepted?: number;
  /**
   * Descending only: the head pass under way (read from the top down to
   * `edge`, the newest item committed before it): where it stands, and the
   * newest item it committed, which becomes `edge` when it ends.
   */
  readonly head?: {
    readonly edge:
      | { readonly value: string | number; readonly id: string }
      | null;
    readonly offset: number;
    readonly top:
      | { readonly value: string | number; readonly id: string }
      | null;
  };
  /** The sweep cycle under way, if any. */
  readonly sweep?: SweepCursor;
  /** Sweep cycles completed. */
  readonly cycles?: number;
  /** When (epoch ms) the last completed cycle started: every item of the copy was true then or later. */
  readonly verifiedAt?: number;
  /**
   * The deletes of cycles completed in the last 24 hours: what the guard
   * counts against `maxDeletes` of the largest size the copy had in them.
   */
  readonly deletions?: readonly {
    readonly at: number;
    readonly deleted: number;
    readonly held: number;
  }[];
  /**
   * The last cycle the guard refused, when no cycle completed since: it
   * committed none of its inserts or deletes; the next run begins a new
   * one. `maxDeletes` is what would have let it.
   */
  readonly refused?: {
    readonly cycle: number;
    readonly at: number;
    readonly maxDeletes: number;
  };
}

/**
 * Where the sweep stands in its cycle: it reads the list again from the
 * start, with the head's overlapping windows, over every item up to
 * `upTo` (the newest item committed when the cycle began); rows not seen
 * by the time it gets there are removed.
 *
 * @example Where the sweep stands after a run with a small budget
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { createSqliteSink, type SweepCursor, syncList } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ items: { organizations: 300 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * using sink = createSqliteSink(":memory:", { table: "organizations" });
 * const options = { id: "organizationID", sink, maxLimit: 100 };
 * await syncList(client, "organizations", options); // the first read is a whole cycle
 * await syncList(client, "organizations", { ...options, sweep: 1 }); // one window of cycle 2
 * const cursor: SweepCursor | undefined = (await sink.load())?.sweep;
 * equal(cursor?.cycle, 2);
 * equal(cursor?.upTo?.id, "org_000300"); // it covers up to the newest item when it began
 * ```
 */
export interface SweepCursor {
  /** The last item the sweep committed; null at the cycle's start. */
  readonly edge:
    | { readonly value: string | number; readonly id: string }
    | null;
  /** Where the item after `edge` stood. */
  readonly offset: number;
  /** The last item the cycle covers: the newest committed when it began. */
  readonly upTo:
    | { readonly value: string | number; readonly id: string }
    | null;
  /** The cycle's number (from 1). */
  readonly cycle: number;
  /** When (epoch ms) the cycle began. */
  readonly startedAt: number;
  /**
   * While the sweep looks for its edge (items before it were removed):
   * where windows bracketed it, and how many missed it.
   */
  readonly seek?: {
    readonly low?: number;
    readonly high?: number;
    readonly probes: number;
  };
}

/**
 * Where a sync writes: the items and the checkpoint that covers them, in
 * one atomic step, so that a run killed at any point resumes without loss
 * or duplicates.
 *
 * @example An in-memory sink for a test
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { type SyncCheckpoint, syncList, type SyncSink } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const rows = new Map<string, unknown>();
 * let saved: SyncCheckpoint | undefined;
 * const sink: SyncSink<unknown> = {
 *   load: () => Promise.resolve(saved),
 *   write(items, checkpoint, ids) {
 *     items.forEach((item, i) => rows.set(ids[i]!, item));
 *     saved = checkpoint;
 *     return Promise.resolve();
 *   },
 * };
 * await using api = await startFakePartnerApi({ items: { organizations: 30 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * await syncList(client, "organizations", { id: "organizationID", sink });
 * equal(rows.size, 30);
 * equal(saved?.complete, true);
 * ```
 */
export interface SyncSink<T> {
  /**
   * The checkpoint saved last, if any, once the copy is checked against it.
   * Changes nothing.
   */
  load(): Promise<SyncCheckpoint | undefined>;
  /**
   * Saves `items` (with their `ids`, in the same order, each id once) and
   * `checkpoint` atomically: after a crash, either both are there or
   * neither. Items the store cannot hold are left out and named in the
   * report.
   */
  write(
    items: readonly T[],
    checkpoint: SyncCheckpoint,
    ids: readonly string[],
    context?: SyncWriteContext,
  ): Promise<void | SyncWriteReport>;
  /**
   * Takes the copy for one run, so that two runs never interleave: checks
   * the copy first (changing nothing when it is refused), then waits for a
   * run that holds it. While held, `write` commits only if the lock is
   * still this run's. Disposing releases it. A sink without it has one
   * writer by the caller's care.
   */
  lock?(options?: { signal?: AbortSignal }): Promise<AsyncDisposable>;
  /** False for a sink that cannot mark deleted rows (`deletes: "mark"` is refused for it). */
  readonly marksDeletes?: boolean;
}

/**
 * What every sink of this module takes about its lock and its clock.
 *
 * @example Waiting at most 5 s for another run, on a test's clock
 * ```ts
 * import { createJsonlSink, type SinkLockOptions } from "@partner-api/client/sync";
 * import { equal } from "node:assert/strict";
 *
 * const options: SinkLockOptions = { lockWait: 5_000, now: () => Date.UTC(2026, 0, 1) };
 * const sink = createJsonlSink(".test-tmp/doc-sink-lock-options.jsonl", options);
 * equal(typeof sink.lock, "function");
 * ```
 */
export interface SinkLockOptions {
  /**
   * How long a run waits for another that holds the copy, in ms, before it
   * gives up with `SyncError` (`"locked"`); up to 2147483647, or
   * `Infinity` to wait until the run's signal aborts. Measured on a steady
   * clock: a wall clock stepped back does not stretch it.
   *
   * @default {30000}
   */
  lockWait?: number;
  /** Hears once that a run waits, with who holds the copy (e.g. `pid 42`). */
  onLockWait?: (holder: string) => void;
  /**
   * The wall clock (epoch ms) of the copy's records: the lock's refresh
   * stamps and staleness, and the change table's `at` and `deleted_at`.
   *
   * @default {Date.now}
   */
  now?: () => number;
}

/**
 * What a batch is, for sinks that follow the sweep: the cycle its rows are
 * seen in, and whether it begins or ends one. A sink that ignores it still
 * keeps every item; it just never removes deleted ones.
 *
 * @example A sink that removes what a cycle did not see
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { type SyncCheckpoint, syncList, type SyncSink, type SyncWriteContext } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const rows = new Map<string, { item: unknown; seen: number }>();
 * let saved: SyncCheckpoint | undefined;
 * const sink: SyncSink<unknown> = {
 *   load: () => Promise.resolve(saved),
 *   write(items, checkpoint, ids, context?: SyncWriteContext) {
 *     items.forEach((item, i) => rows.set(ids[i]!, { item, seen: context?.cycle ?? 0 }));
 *     let deleted = 0;
 *     if (context?.endsCycle) {
 *       for (const [id, row] of rows) if (row.seen < context.cycle) deleted += Number(rows.delete(id));
 *     }
 *     saved = checkpoint;
 *     return Promise.resolve({ deleted });
 *   },
 * };
 * await using api = await startFakePartnerApi({ items: { organizations: 30 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * await syncList(client, "organizations", { id: "organizationID", sink });
 * api.remove("organizations", "org_000007");
 * const result = await syncList(client, "organizations", { id: "organizationID", sink, sweep: Infinity });
 * equal(result.deleted, 1);
 * equal(rows.size, 29);
 * ```
 */
export interface SyncWriteContext {
  /** The cycle the batch's rows are seen in (0 before the first). */
  readonly cycle: number;
  /** `"head"`: items new to the copy's end; `"sweep"`: items read again. */
  readonly phase: "head" | "sweep";
  /** The batch is the first of cycle `cycle` (it may hold no item). */
  readonly beginsCycle?: boolean;
  /**
   * The batch completes cycle `cycle`: rows not seen in it are removed, or
   * marked, unless they are more than `maxDeletes` of the copy (then
   * nothing is, and the write rejects with SyncError "too-many-deletes").
   */
  readonly endsCycle?: {
    readonly deletes: "remove" | "mark";
    readonly maxDeletes: number;
    /**
     * What cycles of the last 24 hours removed, and the largest size the
     * copy had then: the share counts against that size, less those
     * deletes (so that no sequence of runs slices a mass delete).
     */
    readonly recent?: { readonly deleted: number; readonly largest: number };
  };
  /**
   * An item's place in the list's order and its id, for a sink that needs
   * them (the JSONL sink, to tell a cycle's changes apart).
   */
  readonly keyOf?: (
    item: unknown,
  ) => { readonly value: string | number; readonly id: string };
  /** Keep the change table (SQL sinks). */
  readonly changes: boolean;
}

/**
 * What a sink did with one batch: what it could not store, and how many
 * rows it inserted, changed and removed.
 *
 * @example Counting what a batch changed
 * ```ts
 * import { syncList, type SyncSink, type SyncWriteReport } from "@partner-api/client/sync";
 * import { createClient } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const rows = new Map<string, string>();
 * const sink: SyncSink<unknown> = {
 *   load: () => Promise.resolve(undefined),
 *   write(items, _checkpoint, ids): Promise<SyncWriteReport> {
 *     let inserted = 0;
 *     items.forEach((item, i) => inserted += rows.has(ids[i]!) ? 0 : (rows.set(ids[i]!, JSON.stringify(item)), 1));
 *     return Promise.resolve({ inserted });
 *   },
 * };
 * await using api = await startFakePartnerApi({ items: { organizations: 4 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * equal((await syncList(client, "organizations", { id: "organizationID", sink })).inserted, 4);
 * ```
 */
export interface SyncWriteReport {
  /** Ids of the items left out, because the store cannot hold them. */
  readonly skippedIds?: readonly string[];
  /** Rows the batch added. */
  readonly inserted?: number;
  /** Rows whose content the batch changed. */
  readonly updated?: number;
  /** Rows the cycle it ended removed (or marked). */
  readonly deleted?: number;
  /** Ending a cycle: the live rows before its deletes. */
  readonly held?: number;
}
