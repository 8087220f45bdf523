// syncList's options, progress, events and result.

import type { SyncSink } from "./sink.ts";

/**
 * What `syncList` reads a list through: the `pages` of a client, and
 * nothing else of it. A `PartnerClient` of `./client` is one; so is a
 * wrapper of your own around it.
 *
 * @example A client is a source
 * ```ts
 * import { createClient } from "@partner-api/client/client";
 * import type { SyncSource } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ items: { organizations: 3 } });
 * const source: SyncSource = createClient({ environment: api.environment, ...api.credentials });
 * let items = 0;
 * for await (const page of source.pages("organizations", {})) items += page.items.length;
 * equal(items, 3);
 * ```
 */
export interface SyncSource {
  /**
   * The pages of the list at `path`, in order, as `PartnerClient.pages`
   * yields them. `options` are the list options `syncList` builds from its
   * own (`limit`, `page`, `maxPages`, sort, `query`, `items`, `signal`).
   */
  pages<T>(
    path: string,
    options: object,
  ): AsyncIterable<{ readonly items: readonly T[] }>;
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
  /**
   * The wall clock (epoch ms) of the run's decisions: when a cycle began
   * (`verifiedAt`) and what `sweep: Infinity` counts as begun before the
   * run. Give a sink its own `now` for its records.
   *
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * The priority of the run's list requests (Fetch's `RequestInit.priority`),
   * which the client's limiter reads: `"low"` waits while live calls wait
   * and leaves the limiter's reserve to them.
   *
   * @default {"low"}
   */
  priority?: "high" | "low" | "auto";
  /**
   * How long the sweep may read, in ms. Without `sweep`, the run keeps
   * sweeping the cycle under way at its priority while the limiter has
   * spare slots, until the cycle completes or this time is up: a copy as
   * fresh as the budget allows (`nextVerifiedAt` says when).
   *
   * @default {unbounded}
   */
  maxDuration?: number;
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
  /**
   * Items read and committed in this run, written or not: a sweep that
   * finds nothing changed reads many and writes none.
   */
  readonly read: number;
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
  /**
   * Items read and committed in this run, written or not: a sweep that
   * finds nothing changed reads many and writes none.
   */
  readonly read: number;
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
  /**
   * When (epoch ms) the whole copy will next have been verified, at the
   * rate this run's sweep read (its share of the limiter); undefined when
   * it read nothing.
   */
  readonly nextVerifiedAt?: number;
}
