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
  /** A `full` pass is under way (a JSONL sink rewrites its file during one). */
  readonly full: boolean;
  /** The pass reached the end of the list. */
  readonly complete: boolean;
  /**
   * The largest page size the service was seen to honour (a full page of
   * it came back): a shorter page of at most that size is the list's end.
   * Absent before the first such page (and in 0.3's checkpoints).
   */
  readonly accepted?: number;
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
  ): Promise<void | SyncWriteReport>;
  /**
   * Takes the copy for one run, so that two runs never interleave: checks
   * the copy first (changing nothing when it is refused), then waits for a
   * run that holds it. While held, `write` commits only if the lock is
   * still this run's. Disposing releases it. A sink without it has one
   * writer by the caller's care.
   */
  lock?(options?: { signal?: AbortSignal }): Promise<AsyncDisposable>;
}

/**
 * What a sink could not store of one batch.
 *
 * @example A sink that cannot hold ids with a NUL
 * ```ts
 * import type { SyncWriteReport } from "@partner-api/client/sync";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const report = (ids: readonly string[]): SyncWriteReport => ({
 *   skippedIds: ids.filter((id) => id.includes("\0")),
 * });
 * deepStrictEqual(report(["a", "b\0"]).skippedIds, ["b\0"]);
 * ```
 */
export interface SyncWriteReport {
  /** Ids of the items left out, because the store cannot hold them. */
  readonly skippedIds?: readonly string[];
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
   * Reads the whole list again (picks up items inserted behind the
   * checkpoint). A JSONL sink rewrites its file; SQLite and PostgreSQL
   * upsert by id.
   *
   * @default {false}
   */
  full?: boolean;
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
  readonly type: "sync.skipped";
  /** The ids left out of this batch. */
  readonly ids: readonly string[];
}

/** Every event `SyncOptions.onEvent` hears; `type` tells them apart. */
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
 * const again: SyncResult = await syncList(client, "organizations", { id: "organizationID", sink });
 * equal(again.written, 0);
 * ok(again.requests <= 2); // a run with nothing new costs at most 2 requests
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
}
