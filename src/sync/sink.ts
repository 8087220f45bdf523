// The sink contract: the checkpoint a sink stores, what it must do (load, write, lock), what it hears and reports.

/**
 * Where a sync stands, saved with the items it covers. Plain JSON: a sink stores it and `load()` gives it back as was.
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
  /** The last item committed: every item past where its pass began, up to it, that existed for the whole run is in the sink. */
  readonly edge:
    | { readonly value: string | number; readonly id: string }
    | null;
  /** Where the item after `edge` stood in the list when it was last read (newest first: the list's length then). */
  readonly offset: number;
  /** Always false now: 0.3's `full` pass (replaced by the sweep). */
  readonly full: boolean;
  /** The head pass reached its end. */
  readonly complete: boolean;
  /** `"DESC"` when the list is read newest first; absent for ascending. */
  readonly sortDirection?: "DESC";
  /** The largest page size the service was seen to honour: a shorter page of at most it (under `limit` items) is the end. */
  readonly accepted?: number;
  /** The smallest page size the service refused (a 400) or cut: no window asks that many for 8 cycles. */
  readonly refusedLimit?: number;
  /**
   * Descending only: the head pass under way (top down to `edge`): where it stands, and the newest item it committed
   * (`edge` once it ends).
   */
  readonly head?: {
    readonly edge: SyncCheckpoint["edge"];
    readonly offset: number;
    readonly top: SyncCheckpoint["edge"];
  };
  /** The sweep cycle under way, if any. */
  readonly sweep?: SweepCursor;
  /** Sweep cycles completed. */
  readonly cycles?: number;
  /** When (epoch ms) the last completed cycle started: every item of the copy was true then or later. */
  readonly verifiedAt?: number;
  /** The time (epoch ms) the last completed cycle dated its deletes by: a run on a clock behind dates its own no earlier. */
  readonly guardTime?: number;
  /** The deletes of cycles completed in the last 24 hours (kept a day longer), which the guard counts. */
  readonly deletions?: readonly {
    readonly at: number;
    readonly deleted: number;
    readonly held: number;
    /** A cycle's deletes made by a run stopped before it counted them: the guard takes its 24 hours' share as spent. */
    readonly uncounted?: true;
  }[];
  /** The last cycle the guard refused, if none completed since; `maxDeletes` would have let it. */
  readonly refused?: {
    readonly cycle: number;
    readonly at: number;
    readonly maxDeletes: number;
  };
}

/**
 * Where the sweep stands in its cycle: it reads the list again up to `upTo` (the newest item committed when the cycle
 * began); rows not seen by then are removed.
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
  readonly edge: SyncCheckpoint["edge"];
  /** Where the item after `edge` stood. */
  readonly offset: number;
  /** The last item the cycle covers. */
  readonly upTo: SyncCheckpoint["edge"];
  /** The cycle's number (from 1). */
  readonly cycle: number;
  /** When (epoch ms) the cycle began. */
  readonly startedAt: number;
  /** While the sweep looks for its edge: where windows bracketed it, and how many missed it. */
  readonly seek?: {
    readonly low?: number;
    readonly high?: number;
    readonly probes: number;
  };
  /** Windows that sought the edge since one brought an item, over runs: past 64, a run fails (`"unordered"`). */
  readonly misses?: number;
}

/**
 * Where a sync writes: the items and the checkpoint that covers them, in one atomic step, so a run killed at any
 * point resumes without loss.
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
  /** The checkpoint saved last, if any, once the copy is checked against it. Changes nothing. */
  load(): Promise<SyncCheckpoint | undefined>;
  /** Saves `items` (with their `ids`, each once) and `checkpoint` atomically; items the store cannot hold are left out and reported. */
  write(
    items: readonly T[],
    checkpoint: SyncCheckpoint,
    ids: readonly string[],
    context?: SyncWriteContext,
  ): Promise<void | SyncWriteReport>;
  /** Takes the copy for one run (checking it first), waiting for a holder; `write` commits only while held. Disposing releases it. */
  lock?(options?: { signal?: AbortSignal }): Promise<AsyncDisposable>;
  /** False for a sink that cannot mark deleted rows (`deletes: "mark"` is refused for it). */
  readonly marksDeletes?: boolean;
  /** False for a sink that keeps no change table (`changes: true` is refused for it). */
  readonly keepsChanges?: boolean;
  /**
   * Which of `ids` the copy holds as live rows (undefined: it cannot tell), with `cycle` also those that sweep cycle
   * staged for its end; reads only. With it, a head window past a gone last item, or a sweep window read twice alike,
   * commits only if it holds rows of the copy.
   */
  holds?(
    ids: readonly string[],
    keyOf: (item: unknown) => NonNullable<SyncCheckpoint["edge"]>,
    cycle?: number,
  ): Promise<ReadonlySet<string> | undefined>;
  /**
   * The copy's live rows, each with whether sweep cycle `cycle` saw it and its item as stored (a seen row's may be left
   * out); `keyOf` reads an id the store keeps none of; past `most` rows it may list none. Reads only, under the run's
   * lock, a page at a time. With it, `syncList` judges the guard before each sweep window commits (a sweep answered
   * with another list stops at its first window past `maxDeletes`); without, at the cycle's end.
   *
   * @example A sink that lists its rows for the guard
   * ```ts
   * import { createClient } from "@partner-api/client";
   * import { type SyncCheckpoint, SyncError, syncList, type SyncSink } from "@partner-api/client/sync";
   * import { startFakePartnerApi } from "@partner-api/client/testing";
   * import { equal, rejects } from "node:assert/strict";
   *
   * const rows = new Map<string, { item: unknown; seen: number }>();
   * let saved: SyncCheckpoint | undefined;
   * const sink: SyncSink<unknown> = {
   *   load: () => Promise.resolve(saved),
   *   write(items, checkpoint, ids, context) {
   *     items.forEach((item, i) => rows.set(ids[i]!, { item, seen: context?.cycle ?? 0 }));
   *     saved = checkpoint;
   *     return Promise.resolve();
   *   },
   *   async *liveRows(cycle) {
   *     for (const [id, row] of rows) yield { id, item: row.item, seen: row.seen >= cycle };
   *   },
   * };
   * await using api = await startFakePartnerApi({ items: { organizations: 300 } });
   * const client = createClient({ environment: api.environment, ...api.credentials });
   * const options = { id: "organizationID", sink, maxLimit: 100 };
   * await syncList(client, "organizations", options);
   * for (let i = 1; i <= 150; i++) api.remove("organizations", `org_${String(i).padStart(6, "0")}`);
   * await rejects(syncList(client, "organizations", { ...options, sweep: 1 }), SyncError); // at the first window
   * equal(rows.size, 300); // nothing of it was written
   * ```
   */
  liveRows?(
    cycle: number,
    keyOf: (item: unknown) => NonNullable<SyncCheckpoint["edge"]>,
    most?: number,
  ): AsyncIterable<
    { readonly id: string; readonly item: unknown; readonly seen: boolean }
  >;
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
   * How long a run waits for another that holds the copy, in ms (steady clock), before `SyncError` (`"locked"`); up to
   * 2147483647, or `Infinity` to wait until the run's signal aborts.
   * @default {30000}
   */
  lockWait?: number;
  /**
   * Hears that a run waits, with who holds the copy (e.g. `pid 42`): when a wait begins and when who holds it changes,
   * and on SQLite each time another connection's lock holds a step past 100 ms. What it throws is ignored.
   */
  onLockWait?: (holder: string) => void;
  /**
   * The wall clock (epoch ms) of the copy's records: the lock's staleness, the change table's `at` and `deleted_at`.
   * @default {Date.now}
   */
  now?: () => number;
}

/**
 * A batch's cycle, and whether it begins or ends one. A sink that ignores it never removes deleted rows.
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
   * The batch completes cycle `cycle`: rows not seen in it are removed, or marked, unless more than `maxDeletes` of the
   * copy, less what the last 24 hours removed (`recent`); then none is, and the write rejects with SyncError
   * `"too-many-deletes"`. A cycle in them whose count went unrecorded adds 2^52 to `recent.deleted`.
   */
  readonly endsCycle?: {
    readonly deletes: "remove" | "mark";
    readonly maxDeletes: number;
    readonly recent?: { readonly deleted: number; readonly largest: number };
  };
  /**
   * Ending a cycle: ids of rows it keeps, seen, though no batch wrote them (its last run could not read them again);
   * a sink that ignores it removes them.
   */
  readonly kept?: readonly string[];
  /** An item's place in the order and its id (the JSONL sink tells a cycle's changes apart by it). */
  readonly keyOf?: (item: unknown) => NonNullable<SyncCheckpoint["edge"]>;
  /** Keep the change table (SQL sinks). */
  readonly changes: boolean;
}

/**
 * What a sink did with one batch: what it could not store, and the rows it inserted, changed and removed.
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
  /** Rows the cycle it ended removed (or marked); without it (and `liveRows`), the guard counts the cycle uncounted. */
  readonly deleted?: number;
  /** Ending a cycle: the live rows before its deletes. */
  readonly held?: number;
}
