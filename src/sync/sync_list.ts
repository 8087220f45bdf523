// syncList: each run reads what is new (the head pass), then spends its sweep budget reading again what the copy
// holds (the rolling cycle), both with _pass.ts's overlapping windows; _checkpoint.ts decides where each pass starts.

import {
  afterHeadWindow,
  grownBy,
  nextVerified,
  type RunStart,
  runStart,
  sweepLeft,
} from "./_checkpoint.ts";
import { type Committed, runPass, unjoinedPages } from "./_pass.ts";
import { Committer, type SweepRun } from "./_committer.ts";
import { listOptions, type SyncConfig, syncConfig } from "./_config.ts";
import type { SyncCheckpoint } from "./sink.ts";
import type { SyncKey } from "./_window.ts";
import type { SyncOptions, SyncResult, SyncSource } from "./sync_options.ts";
import { deletesRefused } from "./_deletes.ts";
import { sweep } from "./_sweep.ts";
import { holdsNone } from "./_foreign_page.ts";
import { steadyClock } from "../core/_clock.ts";
import { ownDeadlines } from "../core/_deadlines.ts";
import { settledOrAborted } from "./_lease.ts";
import { given, MAX_TIMER_MS } from "../core/_check.ts";
import { secretsHidden, SyncError } from "./sync_error.ts";

/**
 * Copies the list at `path` into `sink` and keeps it current: complete and once, also when items are inserted or deleted
 * anywhere while it pages. Items and checkpoint commit together, so a run killed at any point resumes where it stopped;
 * a later run reads what was added, then sweeps part of the copy again. See docs/sync.md.
 *
 * @param client The client: its pacing, retries and token.
 * @param path The list, e.g. `"transactions"`.
 * @throws {TypeError} (`option`) Before any request, for bad options, or a sink whose checkpoint is for another path,
 * order, id field or query (`option: "sink"`).
 * @throws {RangeError} (`option`) Before any request, for a bad size.
 * @throws {SyncError} For an item without id (`"missing-id"`), a page out of order (`"unordered"`), or another
 * `SyncErrorReason`; nothing past the last good batch is written.
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
  const { hide, stop } = secretsHidden(client);
  try {
    const config = syncConfig(path, options);
    // The client checks the list options when pages are asked for, before any request: here, before the sink is touched.
    void client.pages(config.identity.path, listOptions(config, undefined));
    config.signal?.throwIfAborted(); // aborted already: the sink untouched (a SQLite file not made)
    // A sink's call may hang: the run ends at its signal all the same, and lets go of the lock once that call settles.
    return await settledOrAborted(
      lockedRun(client, config, hide),
      config.signal,
    );
  } catch (error) {
    // A refusal quotes the options given, a SyncError or a sink's error ids or items: a user may paste a secret into
    // the first, a service echo one in the others.
    throw hide(error);
  } finally {
    stop();
  }
}

/** The run under the sink's lock. */
async function lockedRun<T>(
  client: SyncSource,
  config: SyncConfig<T>,
  clean: (text: string) => string,
): Promise<SyncResult> {
  // No `await using`: Node 20 cannot parse it.
  const lock = await config.sink.lock?.(given({ signal: config.signal }));
  try {
    const start = runStart(await config.sink.load(), config.identity, config);
    return await runFrom(client, config, start, clean);
  } finally {
    await lock?.[Symbol.asyncDispose]();
  }
}

/** What the passes of a run share. */
interface Run<T> extends SweepRun<T> {
  /** When the run began (`config.now`). */
  readonly startedAt: number;
  /** Newest first, how many items the head found above the copy's newest (all before the sweep's cursor). */
  readonly grown: { count: number };
}

/** The head pass, then the sweep, from `start`; what the run did. */
async function runFrom<T>(
  client: SyncSource,
  config: SyncConfig<T>,
  start: RunStart,
  clean: (text: string) => string,
): Promise<SyncResult> {
  const requests = { count: 0, items: 0 };
  const committer = new Committer(config, start.checkpoint, requests, clean);
  const grown = { count: 0 }, startedAt = config.now();
  const run = { client, config, requests, committer, startedAt, grown };
  // A first read of the whole list is a cycle of its own: no sweep after it.
  const { edge, head: under, cycles } = start.checkpoint;
  const first = edge === null && under === undefined && cycles === undefined;
  try {
    let shift = await head(run, start, first);
    // Newest first, a resumed head read down from its pass's old top: a head from page 1 reads what came since.
    if (under !== undefined && committer.latest.head === undefined) {
      const again = runStart(committer.latest, config.identity, config);
      shift = await head(run, again, false) ?? shift;
    }
    // Where the head found the edge, else each run searches again; newest first, the sweep's cursor moves on by what
    // the head found above the copy.
    await committer.flush("head", grownBy(committer.latest, grown.count));
    const inserted = committer.tally.inserted;
    const clock = steadyClock(config.now);
    const read = { from: requests.count, began: clock() };
    if (!first) await timedSweep(run, clock, read.began);
    const sweepInserted = committer.tally.inserted - inserted;
    await committer.done();
    const { tally, latest } = committer;
    const { verifiedAt } = latest;
    return {
      ...tally,
      skippedIds: [...tally.skippedIds],
      requests: requests.count,
      resumed: start.resumed,
      // A cycle this run began and completed verified the whole copy (a shift may be items it never lost).
      behind: (verifiedAt ?? -Infinity) >= run.startedAt
        ? 0
        : Math.max(0, (shift ?? 0) - sweepInserted),
      ...(verifiedAt === undefined ? {} : { verifiedAt }),
      sweepLeft: sweepLeft(latest),
      ...nextVerified(latest, {
        requests: requests.count - read.from,
        span: clock() - read.began,
        now: config.now(),
      }),
    };
  } catch (error) {
    // What went on record, once a batch under way settled: a refused sweep's run committed the head's new items.
    await committer.settle();
    const progress = committer.snapshot();
    if (error instanceof SyncError) Object.assign(error, { progress });
    throw error;
  } finally {
    await committer.settle(); // settled already after a failure
  }
}

/** The sweep, stopped `maxDuration` after `began`. */
async function timedSweep<T>(run: Run<T>, clock: () => number, began: number) {
  // A window waiting for a rate slot at maxDuration is given up: live traffic may hold the slots for long. No timer
  // for ever: fake time fires one.
  const { maxDuration } = run.config, ms = Math.min(maxDuration, MAX_TIMER_MS);
  const stop = ms < MAX_TIMER_MS ? ownDeadlines(ms).start(undefined) : null;
  const timeUp = () => clock() - began >= maxDuration;
  const limited = stop ? { ...run, stop: stop.signal } : run;
  await sweep(limited, timeUp).finally(() => stop?.clear());
}

/** The windows a descending head holds back at most until one reaches the copy: as many as a killed run reads again. */
const HELD_WINDOWS = 8;

/** The head pass: what is new; how far the last item committed moved, if seen. */
async function head<T>(
  run: Run<T>,
  start: RunStart,
  first: boolean,
  strayed?: ReadonlySet<string>,
): Promise<number | undefined> {
  const { config, committer } = run;
  let shift: number | undefined, lost = false, again: string[] | undefined;
  const descending = config.identity.sortDirection === "DESC";
  // Descending, new items are held back until a window reaches the copy (dropped if page 1 begins after all they hold;
  // read again from page 1, once, if a window overlapping them holds an item they lack): else another list's items, or
  // a list that lost every item of the copy, would be committed first.
  const held: [SyncCheckpoint, Committed<T>][] = [];
  const hasCopy = start.checkpoint.edge !== null;
  const underWay = start.checkpoint.head !== undefined;
  let holding = descending && config.maxDeletes < 1 && hasCopy && !underWay;
  let latest = committer.latest, heldWindows = 0;
  const foreignAt = overlapCheck(run, start.checkpoint.edge);
  let foreign = false;
  const grew = { fresh: 0, above: 0 };
  await runPass(run, start.head, Infinity, async (window) => {
    committer.tally.read += window.items.length; // as it arrives: held back, declined or committed
    if ((foreign = await foreignAt(window))) return false;
    if (holding && window.lost === true) {
      [held.length, heldWindows, latest] = [0, 0, committer.latest];
    }
    const { path } = config.identity;
    again ??= holding ? heldStrays(held, window, strayed, path) : undefined;
    // Page 1 begins after all the copy holds (ascending), or the list ended before it (descending): the list lost it
    // all, or another list answered; removing the whole copy takes maxDeletes 1. A new head that read nothing new
    // leaves an empty list to the sweep.
    const endedBefore = window.ended && !window.reached && hasCopy &&
      (underWay || heldWindows > 0 || window.items.length > 0);
    lost = !again && (descending ? endedBefore : window.lost === true) &&
      config.maxDeletes < 1 && !await holdsNone(run);
    if (lost || again) return false;
    shift ??= shiftOf(start.checkpoint, window);
    const top = window.items[0];
    const topKey = top === undefined ? undefined : config.keyOf(top);
    const after = afterHeadWindow(latest, window.state, window.ended, topKey);
    latest = first && window.ended
      ? { ...after, cycles: 1, verifiedAt: run.startedAt }
      : after;
    held.push([latest, window]);
    if (window.items.length > 0) heldWindows++;
    // A short window's confirming read is held too: it tells whether the list ends before the copy.
    const room = heldWindows < HELD_WINDOWS || window.state.short !== undefined;
    holding &&= !window.reached && !window.ended && room;
    for (const [checkpoint, each] of holding ? [] : held.splice(0)) {
      await committer.commit("head", checkpoint, each);
      grew.fresh += each.items.length;
      grew.above ||= above(descending ? start.checkpoint.edge : null, each);
    }
    return;
  });
  if (again) return await head(run, start, first, new Set(again));
  run.grown.count += Math.min(grew.above, grew.fresh); // an item moved down is not growth
  return lost || foreign ? refuseHead(run, foreign) : shift;
}

/**
 * The items `window` holds where it overlaps the `held` windows that they did not bring (another list's, or back-dated),
 * for the head to read again from page 1 (`strayed`: those of the first read).
 * @throws {SyncError} (`"unordered"`) When the read again lacked one of `strayed` too.
 */
function heldStrays<T>(
  held: readonly (readonly [unknown, Committed<T>])[],
  window: Committed<T>,
  strayed: ReadonlySet<string> | undefined,
  path: string,
): string[] | undefined {
  if (held.length === 0 || window.passed === undefined) return undefined;
  const brought = new Set(held.flatMap(([, each]) => each.ids));
  const strays = window.passed.map((key) => key.id)
    .filter((id) => !brought.has(id));
  if (strays.some((id) => strayed?.has(id))) {
    const why =
      "page 1, read twice, lacked an item the pages after it place there both times";
    throw unjoinedPages(path, why);
  }
  return strayed === undefined && strays.length > 0 ? strays : undefined;
}

/**
 * Whether the head window over the copy's last item `edge` shows another list, checked once: holding that item, it is
 * the same list; else it must hold rows of the copy, there or among its items (a sink that cannot tell: believed).
 */
function overlapCheck<T>(run: Run<T>, edge: SyncKey | null) {
  const { config } = run;
  const descending = config.identity.sortDirection === "DESC";
  let checked = edge === null || config.maxDeletes >= 1;
  return async (window: Committed<T>) => {
    const around = descending ? window.beyond : window.passed;
    if (checked || (around === undefined && descending)) return false;
    // Ascending, a window of items all before that item: the edge stands further on (back-dated items).
    if (!descending && window.ids.length === 0 && !window.ended) return false;
    checked = true;
    // Among its items too: the edge's item may have moved up. An empty copy has nothing to lose.
    const ids = around?.map((key) => key.id);
    return ids !== undefined && !ids.includes(edge!.id) &&
      await holdsNone(run, [...ids, ...window.ids]) && !await holdsNone(run);
  };
}

/** The head's refusal: the list lost every row of the copy, or (`foreign`) those where its last item stood. */
function refuseHead<T>(run: Run<T>, foreign: boolean): never {
  run.committer.progress(); // nothing committed (holdsNone waited for the batches before) or recorded: what was read
  const why = foreign
    ? "where the copy's last item stood (it is gone), the list holds none of the copy's rows"
    : "the list holds no item the copy holds (its first page begins after them, or newest first, it ends before them)";
  throw deletesRefused(
    `${why}, so it lost them, or another list answered; nothing was committed`,
    `the copy of ${run.config.identity.path}`,
    1,
  );
}

/**
 * Newest first, how many items stand above the copy's newest item `top` where `window` shows it (not shown: 0): the
 * growth since, deletes above it taken off. Either count alone can put the sweep past its place (deletes above, or an
 * item moved down): the head takes the lesser of this and its new items.
 */
function above<T>(top: SyncKey | null, window: Committed<T>): number {
  const at = top && window.beyond?.findIndex((key) => key.id === top.id);
  if (at === undefined || at === null || at < 0) return 0;
  const { start = 0, passed = [], items } = window;
  return start + passed.length + items.length + at;
}

/** How far the last item committed moved since the last run (ascending): at least what the copy lacks. */
function shiftOf<T>(saved: SyncCheckpoint, window: Committed<T>) {
  // No edge saved: none to show (`edgeAt`).
  if (saved.sortDirection === "DESC" || window.edgeAt === undefined) return;
  return window.edgeAt - (saved.offset - 1);
}
