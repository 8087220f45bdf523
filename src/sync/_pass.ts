// Internal: one pass over the list: windows read in a pipeline, each judged
// by the pure rules of _window.ts, what they prove handed on in order. A
// sync runs a head pass (what is new) and a sweep pass (what the copy
// holds, read again) with this same machinery; _committer.ts writes what a
// pass hands on.

import type { SyncSource } from "./sync_options.ts";
import { ApiError } from "../core/errors.ts";
import type { SyncConfig } from "./_config.ts";
import { followingWindow, nextWindow } from "./_window_plan.ts";
import {
  judgeWindow,
  refusedWindow,
  type SyncKey,
  type WindowPlan,
  type WindowState,
} from "./_window.ts";
import { SyncError } from "./sync_error.ts";

/** A window the pass committed: its items to write, and the state after it. */
export interface Committed<T> {
  readonly items: readonly T[];
  /** The items' ids, in order (read once, when the window was judged). */
  readonly ids: readonly string[];
  readonly state: WindowState;
  /** The pass is complete. */
  readonly ended: boolean;
  /** Where the pass's first edge now stands, when this window showed it. */
  readonly edgeAt?: number;
}

/** How a pass ended: its last state, and whether it completed. */
export interface PassEnd {
  readonly state: WindowState;
  readonly ended: boolean;
}

/**
 * Windows in a row answering with the same first item, spread over at
 * least two windows' worth of the list, before the pass gives up: a
 * service that ignores `page` answers every window with the first page. A
 * list that moves shifts items by what was inserted or deleted between two
 * requests, and is followed, however far.
 */
const REPEATS = 3;

/** A window requested and not yet judged. */
interface Flight<T> {
  readonly plan: WindowPlan;
  readonly controller: AbortController;
  readonly items: Promise<readonly T[]>;
}

/**
 * Reads windows from `start` until the pass completes or `budget` list
 * requests are spent, handing each committed window to `commit` in order
 * (awaited before the next is handed on; the next window is read
 * meanwhile). `requests` counts each request sent.
 */
export async function runPass<T>(
  client: SyncSource,
  config: SyncConfig<T>,
  start: WindowState,
  budget: number,
  commit: (window: Committed<T>) => Promise<void>,
  requests: { count: number },
  timeUp: () => boolean = () => false,
): Promise<PassEnd> {
  let state = start;
  let spent = 0;
  let repeated: Repeats | undefined;
  let width = 1; // one window first: a run with nothing new costs one request
  const flights: Flight<T>[] = [];
  const fill = () => {
    while (flights.length < width && spent < budget && !timeUp()) {
      const last = flights.at(-1);
      const plan = last === undefined
        ? nextWindow(state)
        : followingWindow(last.plan, state);
      flights.push(launch(client, config, plan));
      spent++;
      requests.count++;
    }
  };
  try {
    while (true) {
      fill();
      const flight = flights.shift();
      if (flight === undefined) return { state, ended: false };
      const judged = await judge(flight, state, config, start.edge);
      state = judged.next;
      if (judged.kind !== "commit" || state.seek !== undefined) {
        land(flights); // windows planned on a wrong guess are not worth reading
        width = 1;
        if (judged.kind !== "commit") continue;
      }
      repeated = sameFirst(repeated, flight.plan, judged.first);
      if (repeated !== undefined && ignoresPage(repeated, flight.plan)) {
        throw repeatedPages(config, flight.plan);
      }
      if (!judged.ended && state.seek === undefined) {
        width = config.concurrency;
        // The next windows go out before this one is written: the service
        // works while the sink does.
        fill();
      }
      await commit(judged.window);
      if (judged.ended) return { state, ended: true };
    }
  } finally {
    land(flights);
  }
}

/** Windows in a row whose first item is the same: how many, and how far apart. */
interface Repeats {
  readonly first: string;
  readonly low: number;
  readonly high: number;
  readonly n: number;
}

function sameFirst(
  before: Repeats | undefined,
  plan: WindowPlan,
  first: string | undefined,
): Repeats | undefined {
  if (first === undefined) return undefined;
  if (before?.first !== first) {
    return { first, low: plan.start, high: plan.start, n: 1 };
  }
  return {
    first,
    low: Math.min(before.low, plan.start),
    high: Math.max(before.high, plan.start),
    n: before.n + 1,
  };
}

/** Whether `repeats` show a service answering every page with the same one. */
function ignoresPage(repeats: Repeats, plan: WindowPlan): boolean {
  return repeats.n >= REPEATS && repeats.high - repeats.low >= 2 * plan.limit;
}

function repeatedPages<T>(config: SyncConfig<T>, plan: WindowPlan): SyncError {
  return new SyncError(
    `Cannot sync ${config.identity.path}: ${REPEATS} windows or more in a row, two pages or more apart, the last page ${plan.page} of ${plan.limit}, began with the same item: the service seems to ignore 'page'; what was committed stays`,
    "repeated-page",
  );
}

/** A window's verdict; a refused size is a verdict too (read smaller). */
async function judge<T>(
  flight: Flight<T>,
  state: WindowState,
  config: SyncConfig<T>,
  firstEdge: SyncKey | null,
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
  const keys = items.map(config.keyOf);
  const verdict = judgeWindow(state, flight.plan, keys);
  if (verdict.kind !== "commit") return verdict;
  const at = firstEdge === null || state.edge !== firstEdge
    ? -1
    : keys.findIndex((key) => key.id === firstEdge.id);
  const window: Committed<T> = {
    items: items.slice(verdict.fresh.from, verdict.fresh.to),
    ids: keys.slice(verdict.fresh.from, verdict.fresh.to).map((key) => key.id),
    state: verdict.next,
    ended: verdict.ended,
    ...(at < 0 ? {} : { edgeAt: flight.plan.start + at }),
  };
  return { ...verdict, window, first: keys[0]?.id };
}

/** Starts reading one window. */
function launch<T>(
  client: SyncSource,
  config: SyncConfig<T>,
  plan: WindowPlan,
): Flight<T> {
  const controller = new AbortController();
  const signal = config.signal === undefined
    ? controller.signal
    : AbortSignal.any([config.signal, controller.signal]);
  const items = (async () => {
    const pages = client.pages<T>(config.identity.path, {
      ...listOptions(config, signal),
      limit: plan.limit,
      page: plan.page,
      maxPages: 1,
    });
    for await (const page of pages) return page.items;
    return [];
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
export function listOptions<T>(
  config: SyncConfig<T>,
  signal: AbortSignal | undefined,
) {
  const { sortBy, query, sortDirection } = config.identity;
  return {
    sortDirection,
    ...(sortBy === null ? {} : { sortBy }),
    ...(Object.keys(query).length === 0 ? {} : { query: { ...query } }),
    priority: config.priority,
    ...(config.items === undefined ? {} : { items: config.items }),
    ...(signal === undefined ? {} : { signal }),
  };
}
