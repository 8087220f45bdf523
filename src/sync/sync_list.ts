// syncList: a copy of a list that stays true while the list moves under
// offset paging. The decisions are pure functions in _window.ts; this file
// sends the windows, commits what they prove, and keeps the pipeline full.

import type { PartnerClient } from "../client/mod.ts";
import { ApiError } from "../core/errors.ts";
import { runStart } from "./_checkpoint.ts";
import { SyncError } from "./sync_error.ts";
import { type SyncConfig, syncConfig } from "./_config.ts";
import type { SyncCheckpoint, SyncOptions, SyncResult } from "./_types.ts";
import {
  followingWindow,
  judgeWindow,
  nextWindow,
  refusedWindow,
  type WindowPlan,
  type WindowState,
} from "./_window.ts";

/** A window requested and not yet judged. */
interface Flight<T> {
  readonly plan: WindowPlan;
  readonly controller: AbortController;
  readonly items: Promise<readonly T[]>;
}

/** A run's counters. */
interface Counts {
  written: number;
  pages: number;
  requests: number;
  skipped: number;
  skippedIds: string[];
}

/**
 * Windows in a row that may add nothing before the run gives up: a service
 * that ignores `page` answers every window with the first page, which the
 * copy already holds. Drift alone leaves a window with nothing new only
 * when at least a window's worth was inserted before it.
 */
const IDLE_WINDOWS = 3;

/** How many skipped ids a result names. */
const SKIPPED_IDS_SHOWN = 100;

/**
 * Copies the list at `path` into `sink` and keeps it current: complete and
 * once, also when items are inserted or deleted anywhere while it pages.
 *
 * Each window overlaps the items already committed; a window that starts
 * after them may have skipped items and is read again earlier. Items and
 * the checkpoint commit together, so a run killed at any point resumes
 * where it stopped (reading at most one window again), and a later run
 * reads only what was added at the end. See docs/sync.md.
 *
 * @param client The client: its pacing, retries and token.
 * @param path The list, e.g. `"transactions"`.
 * @param options The id, the order, the sink, and sizes.
 * @returns What the run did.
 * @throws {TypeError} (`option`) Before any request, for bad options, or a
 * sink whose checkpoint is for another path, order, id field or query
 * (`option: "sink"`).
 * @throws {RangeError} (`option`) Before any request, for a bad size.
 * @throws {SyncError} For an item without id (`"missing-id"`) or a page out
 * of order (`"unordered"`); nothing past the last good batch is written.
 * @throws {ApiError} When a window cannot be read after the client's retries.
 *
 * @example Keeping a copy of transactions in SQLite
 * ```ts
 * import { createClient } from "@partner-api/client/client";
 * import { createSqliteSink, syncList } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal, ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ items: { transactions: 120 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * using sink = createSqliteSink(":memory:", { table: "transactions" });
 * const options = { id: "transactionID", sortBy: "creationDate", sink };
 * const first = await syncList(client, "transactions", options);
 * api.insertTransactions(5);
 * const second = await syncList(client, "transactions", options);
 * equal(first.written, 120);
 * equal(second.written, 5); // only what was added
 * ok(second.requests <= 2);
 * ```
 */
export async function syncList<T>(
  client: PartnerClient,
  path: string,
  options: SyncOptions<T>,
): Promise<SyncResult> {
  const config = syncConfig(path, options);
  // Path and list options are checked by the client now, before any request.
  void client.list(config.identity.path, listOptions(config, undefined));
  // One run at a time: the sink checks the copy, then takes it. (No
  // `await using`: Node 20 cannot parse it.)
  const lock = await config.sink.lock?.(
    config.signal === undefined ? {} : { signal: config.signal },
  );
  try {
    return await runFromCheckpoint(client, config);
  } finally {
    await lock?.[Symbol.asyncDispose]();
  }
}

/** Loads the checkpoint and runs the windows from it. */
async function runFromCheckpoint<T>(
  client: PartnerClient,
  config: SyncConfig<T>,
): Promise<SyncResult> {
  const saved = await config.sink.load();
  const start = runStart(saved, config.identity, config, config.full);
  const counts: Counts = {
    written: 0,
    pages: 0,
    requests: 0,
    skipped: 0,
    skippedIds: [],
  };
  if (start.beginsFullPass) {
    await config.sink.write([], start.checkpoint, []);
  }
  await runWindows(client, config, start.state, start.checkpoint, counts);
  return {
    ...counts,
    skippedIds: [...counts.skippedIds],
    resumed: start.resumed,
  };
}

/** Reads, judges and commits windows until one proves the end of the list. */
async function runWindows<T>(
  client: PartnerClient,
  config: SyncConfig<T>,
  initial: WindowState,
  base: SyncCheckpoint,
  counts: Counts,
): Promise<void> {
  let state = initial;
  let saved = base;
  const flights: Flight<T>[] = [];
  const committer = new Committer(config, counts, base);
  // One window first: a run with nothing new costs one request, not one
  // per window in flight.
  let width = 1;
  // Committed windows in a row that added nothing and did not end the pass.
  let idle = 0;
  const fill = () => {
    while (flights.length < width) {
      const last = flights.at(-1);
      const plan = last === undefined
        ? nextWindow(state)
        : followingWindow(last.plan, state);
      flights.push(launch(client, config, plan));
      counts.requests++;
    }
  };
  try {
    while (true) {
      fill();
      const flight = flights.shift()!;
      const judged = await judge(flight, state, config);
      state = judged.next;
      if (judged.kind !== "commit") {
        // Windows planned on a wrong guess are not worth reading.
        land(flights);
        continue;
      }
      saved = {
        ...saved,
        edge: state.edge,
        offset: state.offset,
        ...(state.accepted > 0 ? { accepted: state.accepted } : {}),
        full: saved.full && !judged.ended,
        complete: judged.ended,
      };
      counts.pages++;
      idle = judged.fresh.length > 0 || judged.ended ? 0 : idle + 1;
      if (idle === IDLE_WINDOWS) throw repeatedPages(config, flight.plan);
      if (!judged.ended) {
        // The next window is on its way while this one is written.
        width = config.concurrency;
        fill();
      }
      await committer.commit(judged.fresh, saved);
      if (judged.ended) break;
    }
  } finally {
    land(flights);
    await committer.settle();
  }
  await committer.done();
}

function repeatedPages<T>(config: SyncConfig<T>, plan: WindowPlan): SyncError {
  return new SyncError(
    `Cannot sync ${config.identity.path}: ${IDLE_WINDOWS} windows in a row, the last page ${plan.page} of ${plan.limit}, held only items already copied: the service seems to ignore 'page'; what was committed stays`,
    "repeated-page",
  );
}

/** A window's verdict; a refused size is a verdict too (read smaller). */
async function judge<T>(
  flight: Flight<T>,
  state: WindowState,
  config: SyncConfig<T>,
) {
  let items: readonly T[];
  try {
    items = await flight.items;
  } catch (error) {
    if (
      error instanceof ApiError && error.status === 400 &&
      flight.plan.limit > Math.max(state.accepted, config.limit)
    ) {
      return {
        kind: "refused" as const,
        next: refusedWindow(state, flight.plan.limit),
      };
    }
    throw error;
  }
  const verdict = judgeWindow(state, flight.plan, items.map(config.keyOf));
  if (verdict.kind !== "commit") return verdict;
  return { ...verdict, fresh: items.slice(items.length - verdict.fresh) };
}

/** Starts reading one window. */
function launch<T>(
  client: PartnerClient,
  config: SyncConfig<T>,
  plan: WindowPlan,
): Flight<T> {
  const controller = new AbortController();
  const signal = config.signal === undefined
    ? controller.signal
    : AbortSignal.any([config.signal, controller.signal]);
  const items = (async () => {
    const items: T[] = [];
    const pages = client.list<T>(config.identity.path, {
      ...listOptions(config, signal),
      limit: plan.limit,
      page: plan.page,
      maxPages: 1,
    });
    for await (const item of pages) items.push(item);
    return items;
  })();
  // A window dropped in flight may still reject; nobody waits for it.
  items.catch(() => {});
  return { plan, controller, items };
}

/** Aborts and forgets every window in flight. */
function land<T>(flights: Flight<T>[]): void {
  for (const flight of flights.splice(0)) flight.controller.abort();
}

/** The list options every window shares. */
function listOptions<T>(
  config: SyncConfig<T>,
  signal: AbortSignal | undefined,
) {
  const { sortBy, query } = config.identity;
  return {
    sortDirection: "ASC" as const,
    ...(sortBy === null ? {} : { sortBy }),
    ...(Object.keys(query).length === 0 ? {} : { query: { ...query } }),
    ...(config.items === undefined ? {} : { items: config.items }),
    ...(signal === undefined ? {} : { signal }),
  };
}

/**
 * Writes batches one after another, each while the next window is read:
 * a batch starts once the one before is committed, and a failed write
 * stops the run at the batch before.
 */
class Committer<T> {
  #writing: Promise<void> = Promise.resolve();
  #last: SyncCheckpoint | undefined;
  readonly #config: SyncConfig<T>;
  readonly #counts: Counts;

  constructor(config: SyncConfig<T>, counts: Counts, saved: SyncCheckpoint) {
    this.#config = config;
    this.#counts = counts;
    this.#last = saved;
  }

  async commit(items: readonly T[], checkpoint: SyncCheckpoint): Promise<void> {
    await this.#writing;
    if (items.length === 0 && !checkpoint.complete) return;
    if (items.length === 0 && sameCheckpoint(this.#last, checkpoint)) return;
    const { sink, keyOf } = this.#config;
    const batch = lastOfEachId(items, keyOf);
    this.#writing = (async () => {
      const report = await sink.write(batch.items, checkpoint, batch.ids);
      this.#last = checkpoint;
      this.#counted(batch.items.length, report?.skippedIds ?? []);
    })();
    this.#writing.catch(() => {});
  }

  /** Counts a committed batch, and tells the listeners. */
  #counted(written: number, skippedIds: readonly string[]): void {
    const counts = this.#counts;
    const { onProgress, onEvent } = this.#config;
    counts.written += written - skippedIds.length;
    counts.skipped += skippedIds.length;
    const room = SKIPPED_IDS_SHOWN - counts.skippedIds.length;
    counts.skippedIds.push(...skippedIds.slice(0, Math.max(0, room)));
    if (skippedIds.length > 0 && onEvent !== undefined) {
      hear(onEvent, { type: "sync.skipped", ids: [...skippedIds] });
    }
    if (onProgress !== undefined) {
      const { written, pages, requests } = counts;
      hear(onProgress, { written, pages, requests });
    }
  }

  /** Waits for the batch being written, whatever its outcome. */
  async settle(): Promise<void> {
    await this.#writing.catch(() => {});
  }

  /** Waits for the batch being written; rejects if it failed. */
  async done(): Promise<void> {
    await this.#writing;
  }
}

/** Tells a listener; what it throws or rejects with is ignored. */
function hear<E>(listener: (event: E) => unknown, event: E): void {
  try {
    Promise.resolve(listener(Object.freeze(event))).catch(() => {});
  } catch {
    // A listener's failure must never change what the run does.
  }
}

/**
 * The batch with each id once, where it last occurs (the service's latest
 * word on that item), in order.
 */
function lastOfEachId<T>(
  items: readonly T[],
  keyOf: (item: T) => { readonly id: string },
): { items: T[]; ids: string[] } {
  const ids = items.map((item) => keyOf(item).id);
  const last = new Map<string, number>();
  ids.forEach((id, i) => last.set(id, i));
  if (last.size === ids.length) return { items: [...items], ids };
  const kept = ids.flatMap((id, i) => last.get(id) === i ? [i] : []);
  return { items: kept.map((i) => items[i]!), ids: kept.map((i) => ids[i]!) };
}

function sameCheckpoint(
  a: SyncCheckpoint | undefined,
  b: SyncCheckpoint,
): boolean {
  return a !== undefined && JSON.stringify(a) === JSON.stringify(b);
}
