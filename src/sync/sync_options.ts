// syncList's options, progress, events and result.

import type { SyncSink } from "./sink.ts";

/**
 * What `syncList` reads a list through: the `pages` of a client (`PartnerClient` of `./client`, or a wrapper).
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
  /** The pages of the list at `path`, as `PartnerClient.pages` yields them, for `syncList`'s list options. */
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
  /**
   * The unique id, never empty: a field name (e.g. `"transactionID"`), or a function of the item, whose ids must order
   * ties of `sortBy` as the service orders them (as text), else every run fails `"unordered"`.
   */
  id: string | ((item: T) => string);
  /**
   * A field the service sorts by, in whose order new items come last (e.g. `"creationDate"`); ties ordered by id.
   * @default {the id field (sent as sortBy); the service's default order when `id` is a function}
   */
  sortBy?: string;
  /** Where the items and the checkpoint go, together. */
  sink: SyncSink<T>;
  /**
   * Sets the cost: a first run of `n` items makes at most about `1.1 × ⌈n / limit⌉ + 2` list requests. The service
   * must honour it.
   * @default {50}
   */
  limit?: number;
  /**
   * The largest window asked for; refused or cut pages shrink it to the service's largest.
   * @default {1000, or limit when larger}
   */
  maxLimit?: number;
  /**
   * Windows in flight at once (1 to 64): up to `concurrency - 1` requests per run may be read for nothing.
   * @default {1}
   */
  concurrency?: number;
  /** Stops the run; what is committed stays committed. */
  signal?: AbortSignal;
  /** Further query parameters, e.g. filters; part of the checkpoint's identity. A `path` holding a query is refused. */
  query?: Record<string, string>;
  /**
   * Picks the items (an array) out of a page's JSON body; what it throws reaches the caller as it is.
   * @default {the body if it is an array, else its only array-valued property}
   */
  items?: (body: unknown) => readonly T[];
  /**
   * `"ASC"`, new items last, or `"DESC"`, newest first (a run reads down to the newest item it committed before).
   * @default {"ASC"}
   */
  sortDirection?: "ASC" | "DESC";
  /**
   * List requests a run spends reading again what the copy holds (the rolling cycle: changes and items inserted behind
   * the end come in, a completed cycle removes deleted ones). `Infinity`: a whole cycle, a fresh one if the cycle under
   * way began before this run (with `maxDuration`, the cycle under way, as time allows); `0`: no sweep.
   * @default {10} (with `maxDuration`: `Infinity`, as time allows)
   */
  sweep?: number;
  /**
   * What a completed cycle does with rows it did not see: `"remove"` them, or `"mark"` them (`deleted_at`; SQL sinks).
   * @default {"remove"}
   */
  deletes?: "remove" | "mark";
  /**
   * The share of the copy (0 to 1) cycles may remove in 24 hours. A cycle that would remove more commits nothing and
   * ends with `SyncError` (`"too-many-deletes"`): a service answering an empty or foreign list must not empty the copy.
   * @default {0.1}
   */
  maxDeletes?: number;
  /**
   * SQL sinks: keep `<table>_changes` (`seq`, `id`, `change`, `at`, `item`) in each row's transaction; read by `seq`.
   * Once it exists, every run records into it, whatever `changes` says: drop it to stop.
   * @default {false}
   */
  changes?: boolean;
  /**
   * The wall clock (epoch ms) of the run's decisions (`verifiedAt`, the 24-hour delete window), checked once before any
   * request (a reading that is no epoch ms is a `TypeError`), then read where each decision is made, floored to whole
   * ms; a sink has its own (its lock's staleness: `SinkLockOptions.now`).
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * The list requests' priority (Fetch's `RequestInit.priority`): `"low"` yields to live calls on the client's limiter.
   * @default {"low"}
   */
  priority?: "high" | "low" | "auto";
  /**
   * How long the sweep may read, in ms. Without `sweep`, the run sweeps while the limiter has spare slots, until the
   * cycle completes or this time is up (`nextVerifiedAt` says when the copy will be verified). `Infinity`: unbounded.
   * @default {Infinity}
   */
  maxDuration?: number;
  /** Hears each committed batch. What it throws is ignored. */
  onProgress?: (progress: SyncProgress) => void;
  /** Hears what the run wants known, such as items skipped. What it throws is ignored. */
  onEvent?: (event: SyncEvent) => void;
}

/**
 * Items the sink could not store in one batch, left out: the run goes on, and counts them in `SyncResult.skipped`.
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
 * How far a run has come, after each committed batch (and at a refusal that commits nothing: what it read).
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
  /** Items read from the list in this run, as each window arrives: committed or not (a refused run's too), written or not. */
  readonly read: number;
  /** Windows committed in this run. */
  readonly pages: number;
  /** List requests made in this run (refused, mended and verifying ones included). */
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
export interface SyncResult extends SyncProgress {
  /** The run continued a pass that an earlier run left unfinished. */
  readonly resumed: boolean;
  /** Items the sink could not store, left out and reported (never silently). */
  readonly skipped: number;
  /** The ids of the first 100 items skipped. */
  readonly skippedIds: readonly string[];
  /** Items the run knows the list has and the copy lacks, e.g. inserted behind the copy's end (0: none known). */
  readonly behind: number;
  /** When (epoch ms) the last complete cycle started; undefined before one completes. */
  readonly verifiedAt?: number;
  /** List requests the cycle under way still needs, about (0 when none is). */
  readonly sweepLeft: number;
  /** When (epoch ms) the whole copy will next be verified at this run's sweep rate; undefined if its sweep sent no request. */
  readonly nextVerifiedAt?: number;
}
