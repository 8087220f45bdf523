// Internal: the public shapes of a sync (re-exported, with these docs, by
// mod.ts).

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
  };
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
}

/**
 * Options of `syncList`.
 *
 * @example Transactions in creation order, into SQLite
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { createSqliteSink, syncList, type SyncOptions } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok } from "node:assert/strict";
 *
 * type Transaction = { transactionID: string; creationDate: string };
 * await using api = await startFakePartnerApi({ items: { transactions: 100 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * using sink = createSqliteSink<Transaction>(":memory:", { table: "transactions" });
 * const options: SyncOptions<Transaction> = { id: "transactionID", sortBy: "creationDate", sink, limit: 20 };
 * const result = await syncList(client, "transactions", options);
 * equal(result.written, 100);
 * ok(result.requests <= 1.1 * Math.ceil(100 / 20) + 2); // the cost `limit` bounds
 * ```
 */
export interface SyncOptions<T> {
  /** The unique id: a field name (e.g. `"transactionID"`), or a function of the item. */
  id: string | ((item: T) => string);
  /**
   * A field the service sorts by, in whose order new items come last, read
   * ascending (e.g. `"creationDate"`). Ties must be ordered by id.
   *
   * @default {the id field (sent as sortBy); the service's default order when `id` is a function}
   */
  sortBy?: string;
  /** Where the items and the checkpoint go, together. */
  sink: SyncSink<T>;
  /**
   * Sets the cost: a first run of `n` items makes at most about
   * `1.1 × ⌈n / limit⌉ + 2` list requests. Windows may be larger (up to
   * `maxLimit`); the service must honour this size.
   *
   * @default {50}
   */
  limit?: number;
  /**
   * The largest window asked for. The run finds the service's largest
   * accepted size at or below it (refused or cut pages shrink it).
   *
   * @default {1000, or limit when larger}
   */
  maxLimit?: number;
  /**
   * Windows in flight at once (1 to 64). The window after the last may be
   * read for nothing: up to `concurrency - 1` extra requests per run.
   *
   * @default {1}
   */
  concurrency?: number;
  /** Stops the run; what is committed stays committed. */
  signal?: AbortSignal;
  /** Further query parameters, e.g. filters; part of the checkpoint's identity. */
  query?: Record<string, string>;
  /**
   * Picks the items out of a page's JSON body.
   *
   * @default {the body if it is an array, else its only array-valued property}
   */
  items?: (body: unknown) => readonly T[];
  /**
   * The order read: `"ASC"`, in which new items come last, or `"DESC"`
   * (newest first), in which a run reads from the top until it meets the
   * newest item it committed before.
   *
   * @default {"ASC"}
   */
  sortDirection?: "ASC" | "DESC";
  /**
   * List requests a run may spend reading again what the copy holds,
   * continuing the rolling cycle where the last run stopped: it brings in
   * changed items, items inserted behind the copy's end, and (when a cycle
   * completes) removes deleted ones. `Infinity` completes a whole cycle
   * now (0.3's `full: true`); `0` never sweeps. Every change reaches the
   * copy within about `⌈n / (window × sweep)⌉` runs.
   *
   * @default {10}
   */
  sweep?: number;
  /**
   * What a completed cycle does with rows it did not see: `"remove"` them,
   * or `"mark"` them (a `deleted_at` time; SQL sinks only).
   *
   * @default {"remove"}
   */
  deletes?: "remove" | "mark";
  /**
   * The share of the copy (0 to 1) one cycle may remove. A cycle that would
   * remove more removes nothing and ends with `SyncError`
   * (`"too-many-deletes"`): a service answering an empty or filtered list
   * by mistake must not empty the copy.
   *
   * @default {0.1}
   */
  maxDeletes?: number;
  /**
   * SQL sinks: keep `<table>_changes` (`seq` rising, `id`, `change`
   * `insert | update | delete`, `at`), written in each row's transaction,
   * so that a consumer reading by `seq` sees each change once.
   *
   * @default {false}
   */
  changes?: boolean;
  /** Hears each committed batch. What it throws is ignored. */
  onProgress?: (progress: SyncProgress) => void;
  /** Hears what the run wants known, such as items skipped. What it throws is ignored. */
  onEvent?: (event: SyncEvent) => void;
}

/**
 * Items the sink could not store in one batch, left out of the copy: the
 * run goes on, and counts them in `SyncResult.skipped`.
 *
 * @example Logging skipped items
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { syncList, type SyncEvent, type SyncSink } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual, equal } from "node:assert/strict";
 *
 * // A sink that cannot store the organization "org_000002".
 * const sink: SyncSink<unknown> = {
 *   load: () => Promise.resolve(undefined),
 *   write: (_items, _checkpoint, ids) =>
 *     Promise.resolve({ skippedIds: ids.filter((id) => id === "org_000002") }),
 * };
 * const events: SyncEvent[] = [];
 * await using api = await startFakePartnerApi({ items: { organizations: 3 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * const result = await syncList(client, "organizations", { id: "organizationID", sink, onEvent: (e) => events.push(e) });
 * equal(result.skipped, 1);
 * deepStrictEqual(events, [{ type: "sync.skipped", ids: ["org_000002"] }]);
 * ```
 */
export interface SyncSkippedEvent {
  /** What happened: items were skipped. */
  readonly type: "sync.skipped";
  /** The ids left out of this batch. */
  readonly ids: readonly string[];
}

/**
 * Every event `SyncOptions.onEvent` hears; `type` tells them apart.
 *
 * @example A log line per event
 * ```ts
 * import { syncList, type SyncEvent, type SyncSink } from "@partner-api/client/sync";
 * import { createClient } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const line = (event: SyncEvent) => `${event.type}: ${event.ids.join(", ")}`;
 * const sink: SyncSink<unknown> = {
 *   load: () => Promise.resolve(undefined),
 *   write: (_items, _checkpoint, ids) => Promise.resolve({ skippedIds: ids.slice(0, 1) }),
 * };
 * const lines: string[] = [];
 * await using api = await startFakePartnerApi({ items: { organizations: 2 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * await syncList(client, "organizations", { id: "organizationID", sink, onEvent: (event) => lines.push(line(event)) });
 * deepStrictEqual(lines, ["sync.skipped: org_000001"]);
 * ```
 */
export type SyncEvent = SyncSkippedEvent;

/**
 * How far a run has come, after each committed batch.
 *
 * @example A progress line
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { createSqliteSink, syncList, type SyncProgress } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { match } from "node:assert/strict";
 *
 * const lines: string[] = [];
 * const line = (p: SyncProgress) => `${p.written} items, ${p.requests} requests`;
 * await using api = await startFakePartnerApi({ items: { organizations: 25 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * using sink = createSqliteSink(":memory:", { table: "organizations" });
 * await syncList(client, "organizations", {
 *   id: "organizationID",
 *   sink,
 *   onProgress: (progress) => lines.push(line(progress)),
 * });
 * match(lines.at(-1)!, /^25 items, \d+ requests$/);
 * ```
 */
export interface SyncProgress {
  /** Items written in this run. */
  readonly written: number;
  /** Windows committed in this run. */
  readonly pages: number;
  /** List requests made in this run. */
  readonly requests: number;
  /** Items the copy did not hold, written in this run. */
  readonly inserted: number;
  /** Items whose content changed, written in this run. */
  readonly updated: number;
  /** Rows removed (or marked) by a cycle completed in this run. */
  readonly deleted: number;
}

/**
 * What a run did.
 *
 * @example Reading a result
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { createSqliteSink, syncList, type SyncResult } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ items: { organizations: 25 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * using sink = createSqliteSink(":memory:", { table: "organizations" });
 * await syncList(client, "organizations", { id: "organizationID", sink });
 * const again: SyncResult = await syncList(client, "organizations", { id: "organizationID", sink, sweep: 0 });
 * equal(again.written, 0);
 * ok(again.requests <= 2); // with nothing new and no sweep, at most 2 requests
 * equal(again.behind, 0); // nothing known to be missing
 * ```
 */
export interface SyncResult {
  /** Items written in this run. */
  readonly written: number;
  /** Windows committed in this run. */
  readonly pages: number;
  /** List requests made in this run (refused, mended and verifying ones included). */
  readonly requests: number;
  /** The run continued a pass that an earlier run left unfinished. */
  readonly resumed: boolean;
  /** Items the sink could not store, left out and reported (never silently). */
  readonly skipped: number;
  /** The ids of the first 100 items skipped. */
  readonly skippedIds: readonly string[];
  /** Items the copy did not hold, written in this run. */
  readonly inserted: number;
  /** Items whose content changed, written in this run. */
  readonly updated: number;
  /** Rows removed (or marked) by a cycle completed in this run. */
  readonly deleted: number;
  /**
   * Items the run knows the list has and the copy lacks (0: none known):
   * for example items inserted behind the copy's end, seen as a shift of
   * its last item. The sweep brings them in.
   */
  readonly behind: number;
  /** When (epoch ms) the last complete cycle started; undefined before one completes. */
  readonly verifiedAt?: number;
  /** List requests the cycle under way still needs, about (0 when none is). */
  readonly sweepLeft: number;
}
