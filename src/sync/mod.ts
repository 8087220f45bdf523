/**
 * A copy of a list that stays true: {@linkcode syncList} copies a list into a sink (SQLite, JSONL, PostgreSQL, or your
 * own) and keeps it current, complete and once under inserts and deletes anywhere, across crashes and reruns.
 *
 * @example A copy of transactions, brought up to date
 * ```ts
 * import { createClient } from "@partner-api/client/client";
 * import { createJsonlSink, syncList } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ items: { transactions: 80 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * await Deno.mkdir(".test-tmp", { recursive: true });
 * const path = ".test-tmp/doc-sync-transactions.jsonl";
 * for (const file of [path, `${path}.checkpoint.json`]) await Deno.remove(file).catch(() => {});
 * const options = { id: "transactionID", sortBy: "creationDate", sink: createJsonlSink(path) };
 * equal((await syncList(client, "transactions", options)).written, 80);
 * api.update("transactions", "tx_000007", { amount: 1 });
 * api.remove("transactions", "tx_000008");
 * const result = await syncList(client, "transactions", { ...options, sweep: Infinity });
 * equal(result.deleted, 1); // a whole cycle now: the copy is the list again
 * equal((await Deno.readTextFile(path)).trim().split("\n").length, 79);
 * ```
 *
 * @module
 */

export { syncList } from "./sync_list.ts";
export { SyncError, type SyncErrorReason } from "./sync_error.ts";
export type {
  SinkLockOptions,
  SweepCursor,
  SyncCheckpoint,
  SyncSink,
  SyncWriteContext,
  SyncWriteReport,
} from "./sink.ts";
export type {
  SyncEvent,
  SyncOptions,
  SyncProgress,
  SyncResult,
  SyncSkippedEvent,
  SyncSource,
} from "./sync_options.ts";
export {
  createSqliteSink,
  type SqliteSink,
  type SqliteSinkOptions,
} from "./sqlite_sink.ts";
export { createJsonlSink, type JsonlSinkOptions } from "./jsonl_sink.ts";
export {
  createPostgresSink,
  type PostgresSinkOptions,
} from "./postgres_sink.ts";

// Types this entry's signatures name, homed in other entries, so it passes `deno doc --lint` alone.
export type { PartnerApiError } from "../core/errors.ts";
