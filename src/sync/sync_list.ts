// syncList: a copy of a list that stays true while the list moves under
// offset paging. Each run reads what is new (the head pass), then spends its
// sweep budget reading again what the copy holds (the rolling cycle), with
// the same overlapping windows (_pass.ts, decided by _window.ts); where each
// pass starts and what each window leaves in the checkpoint are pure
// functions in _checkpoint.ts.

import {
  afterDeletes,
  afterHeadWindow,
  afterRefusal,
  afterSweepWindow,
  cycleOf,
  type RunStart,
  runStart,
  sweepStart,
} from "./_checkpoint.ts";
import { type Committed, listOptions, runPass } from "./_pass.ts";
import { Committer } from "./_committer.ts";
import { type SyncConfig, syncConfig } from "./_config.ts";
import type { SyncCheckpoint, SyncWriteContext } from "./sink.ts";
import type { SyncOptions, SyncResult, SyncSource } from "./sync_options.ts";
import { recentDeletes } from "./_deletes.ts";
import { steadyClock } from "../core/_clock.ts";
import { SyncError } from "./sync_error.ts";
import type { SyncKey } from "./_window.ts";

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
 * ok(second.requests <= 2 + 10); // the head's, then the sweep's 10 at most
 * ```
 */
export async function syncList<T>(
  client: SyncSource,
  path: string,
  options: SyncOptions<T>,
): Promise<SyncResult> {
  const config = syncConfig(path, options);
  // The client checks the path and list options when the pages are asked
  // for, before any request: here, before the sink is touched.
  void client.pages(config.identity.path, listOptions(config, undefined));
  // One run at a time: the sink checks the copy, then takes it. (No
  // `await using`: Node 20 cannot parse it.)
  const lock = await config.sink.lock?.(
    config.signal === undefined ? {} : { signal: config.signal },
  );
  try {
    const start = runStart(await config.sink.load(), config.identity, config);
    return await runFrom(client, config, start);
  } finally {
    await lock?.[Symbol.asyncDispose]();
  }
}

/** The head pass, then the sweep, from `start`; what the run did. */
async function runFrom<T>(
  client: SyncSource,
  config: SyncConfig<T>,
  start: RunStart,
): Promise<SyncResult> {
  const requests = { count: 0 };
  const startedAt = config.now();
  const committer = new Committer(config, start.checkpoint);
  committer.requests = () => requests.count;
  // A first read of the whole list is a cycle of its own: no sweep after it.
  const first = start.checkpoint.edge === null &&
    start.checkpoint.head === undefined &&
    start.checkpoint.cycles === undefined;
  try {
    const shift = await head(client, config, committer, start, {
      first,
      startedAt,
    }, requests);
    const inserted = committer.tally.inserted;
    const read = { from: requests.count, clock: steadyClock(config.now) };
    const began = read.clock();
    const timeUp = () => read.clock() - began >= config.maxDuration;
    if (!first) {
      await sweep(client, config, committer, { startedAt, timeUp }, requests);
    }
    const sweepInserted = committer.tally.inserted - inserted;
    await committer.done();
    const { pages: _, ...tally } = committer.tally;
    const latest = committer.latest;
    return {
      ...tally,
      pages: committer.tally.pages,
      skippedIds: [...tally.skippedIds],
      requests: requests.count,
      resumed: start.resumed,
      behind: Math.max(0, (shift ?? 0) - sweepInserted),
      ...(latest.verifiedAt === undefined
        ? {}
        : { verifiedAt: latest.verifiedAt }),
      sweepLeft: sweepLeft(latest),
      ...nextVerified(latest, {
        requests: requests.count - read.from,
        span: read.clock() - began,
        now: config.now(),
      }),
    };
  } finally {
    await committer.settle();
  }
}

/**
 * The head pass: what is new since the checkpoint, committed window by
 * window. How far the last item committed moved, when a window showed it.
 */
async function head<T>(
  client: SyncSource,
  config: SyncConfig<T>,
  committer: Committer<T>,
  start: RunStart,
  { first, startedAt }: { first: boolean; startedAt: number },
  requests: { count: number },
): Promise<number | undefined> {
  let shift: number | undefined;
  await runPass(client, config, start.head, Infinity, async (window) => {
    shift ??= shiftOf(start.checkpoint, window);
    const after = afterHeadWindow(
      committer.latest,
      window.state,
      window.ended,
      window.items.length === 0 ? undefined : config.keyOf(window.items[0]!),
    );
    const checkpoint = first && window.ended
      ? { ...after, cycles: 1, verifiedAt: startedAt }
      : after;
    await committer.commit(
      window.items,
      checkpoint,
      context(config, checkpoint, "head"),
      window.ids,
    );
  }, requests);
  return shift;
}

/**
 * Spends the run's sweep budget on the cycle under way (or a new one).
 * `sweep: Infinity` leaves the copy equal to the list as it stood when the
 * run began (`startedAt`): a cycle begun before then is given up, since
 * what changed behind its cursor would wait for the next.
 */
async function sweep<T>(
  client: SyncSource,
  config: SyncConfig<T>,
  committer: Committer<T>,
  run: { startedAt: number; timeUp: () => boolean },
  requests: { count: number },
): Promise<void> {
  if (config.sweep === 0) return;
  const begun = sweepStart(committer.latest, config, {
    now: config.now(),
    freshBefore: config.fresh ? run.startedAt : -Infinity,
  });
  if (begun === undefined) return;
  const { sweep: cursor } = begun;
  if (begun.begins) {
    const checkpoint = { ...committer.latest, sweep: cursor };
    await committer.commit([], checkpoint, {
      ...context(config, checkpoint, "sweep"),
      beginsCycle: true,
    });
    committer.tally.pages--; // not a window
  }
  const end = await runPass(
    client,
    config,
    begun.state,
    config.sweep,
    async (window: Committed<T>) => {
      const checkpoint = afterSweepWindow(
        committer.latest,
        cursor,
        window.state,
        window.ended,
      );
      const ends = window.ended
        ? { endsCycle: cycleEnd(config, checkpoint) }
        : {};
      await committer.commit(window.items, checkpoint, {
        ...context(config, committer.latest, "sweep"),
        ...ends,
      }, window.ids);
    },
    requests,
    run.timeUp,
  );
  if (end.ended) return await endCycle(config, committer, cursor.cycle);
  // Out of budget mid-cycle: where the sweep stands is saved for the next
  // run, also where a window that found a gap moved it back to.
  const latest = committer.latest;
  const moved = afterSweepWindow(
    latest,
    latest.sweep ?? cursor,
    end.state,
    false,
  );
  await committer.flush(moved, context(config, latest, "sweep"));
}

/**
 * A completed cycle: its deletes go on record for the 24-hour guard; or,
 * refused by the guard (nothing of its end committed), the cycle is given
 * up and the refusal recorded before the run fails with it.
 */
async function endCycle<T>(
  config: SyncConfig<T>,
  committer: Committer<T>,
  cycle: number,
): Promise<void> {
  try {
    await committer.done();
  } catch (error) {
    if (!(error instanceof SyncError) || error.reason !== "too-many-deletes") {
      throw error;
    }
    const refused = afterRefusal(
      committer.written,
      cycle,
      error.maxDeletesNeeded ?? 1,
      config.now(),
    );
    // Recorded as a head's batch: no row is seen or written.
    await committer.restart(refused, context(config, refused, "head"));
    throw error;
  }
  const { deleted = 0, held = 0 } = committer.lastReport;
  const latest = committer.latest;
  await committer.flush(
    afterDeletes(latest, { at: config.now(), deleted, held }),
    context(config, latest, "sweep"),
  );
}

/** What the batch that completes a cycle asks of the sink. */
function cycleEnd<T>(config: SyncConfig<T>, checkpoint: SyncCheckpoint) {
  return {
    deletes: config.deletes,
    maxDeletes: config.maxDeletes,
    recent: recentDeletes(checkpoint.deletions, config.now()),
  };
}

/** The context of a batch that `checkpoint` covers. */
function context<T>(
  config: SyncConfig<T>,
  checkpoint: SyncCheckpoint,
  phase: "head" | "sweep",
): SyncWriteContext {
  return {
    cycle: cycleOf(checkpoint),
    phase,
    changes: config.changes,
    keyOf: config.keyOf as (item: unknown) => SyncKey,
  };
}

/**
 * How far the last item committed moved since the last run (ascending
 * only): items inserted behind it, net of deletes. A positive shift is a
 * lower bound on what the copy lacks.
 */
function shiftOf<T>(
  saved: SyncCheckpoint,
  window: Committed<T>,
): number | undefined {
  if (saved.sortDirection === "DESC" || saved.edge === null) return undefined;
  return window.edgeAt === undefined
    ? undefined
    : window.edgeAt - (saved.offset - 1);
}

/** List requests the cycle under way still needs, about: what is left over the window size. */
function sweepLeft(checkpoint: SyncCheckpoint): number {
  const sweep = checkpoint.sweep;
  if (sweep === undefined) return 0;
  const window = Math.max(1, checkpoint.accepted ?? 1);
  if (checkpoint.sortDirection === "DESC") return 1;
  return Math.max(1, Math.ceil((checkpoint.offset - sweep.offset) / window));
}

/**
 * When the whole copy will next have been verified, at the rate this run's
 * sweep read (`requests` in `span` ms of the steady clock): the cycle under
 * way's rest, or a whole cycle (⌈n / window⌉ + 1 requests) after one ended.
 */
function nextVerified(
  checkpoint: SyncCheckpoint,
  sweep: { requests: number; span: number; now: number },
): { nextVerifiedAt?: number } {
  if (sweep.requests === 0 || sweep.span <= 0) return {};
  const window = Math.max(1, checkpoint.accepted ?? 1);
  const left = sweepLeft(checkpoint) ||
    Math.ceil(checkpoint.offset / window) + 1;
  return {
    nextVerifiedAt: Math.round(sweep.now + left * sweep.span / sweep.requests),
  };
}
