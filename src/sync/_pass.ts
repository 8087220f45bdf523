// Internal: one pass over the list, for the head and the sweep alike: windows read in a pipeline, each judged by
// _window.ts, what they prove handed on in order.

import type { SyncSource } from "./sync_options.ts";
import { listOptions, type SyncConfig } from "./_config.ts";
import {
  judgeWindow,
  MIN_WINDOW,
  refusedWindow,
  type SyncKey,
  type Verdict,
  type WindowPlan,
  type WindowState,
} from "./_window.ts";
import { followingWindow, nextWindow, windowCap } from "./_window_plan.ts";
import { SyncError } from "./sync_error.ts";
import { goesOn, notFound, type PageRead, sizeRefusal } from "./_short_end.ts";

/** A window the pass committed: its items and ids, the state after it, and its verdict's `ended`, `lost`, `reached`. */
export interface Committed<T>
  extends Pick<Verdict, "ended" | "lost" | "reached"> {
  readonly items: readonly T[];
  readonly ids: readonly string[];
  readonly state: WindowState;
  /** Where the pass's first edge now stands, when this window showed it. */
  readonly edgeAt?: number;
  /** Its keys at or before the edge the pass stood at (read before), if any. */
  readonly passed?: readonly SyncKey[];
  /** Its keys past the pass's domain (descending, the head's: those the copy held already), if any. */
  readonly beyond?: readonly SyncKey[];
  /** The page size it was asked with. */
  readonly limit?: number;
  /** The offset it was asked at (0: page 1). */
  readonly start?: number;
}

/** Windows in a row, two windows apart or more, with one first item: the service ignores `page` (a moving list won't). */
const REPEATS = 3;
/** Windows that sought the edge with none moving on: a search over 2^30 windows takes 60 at most (twice 30 halvings). */
const MAX_MISSES = 64;
/** Short reads in a row each bringing what the list gained since (another list growing before the cycle's end). */
const MAX_CHASED = 64;

/** A window requested and not yet judged: its plan, its controller, its items to come. */
type Flight<T> = Readonly<ReturnType<typeof launch<T>>>;

/** What every pass of a run shares; `requests` counts each request sent, and the items they answered. */
export interface PassRun<T> {
  readonly client: SyncSource;
  readonly config: SyncConfig<T>;
  readonly requests: { count: number; items: number };
  /** Aborted at `maxDuration`: the windows still waiting are given up, the pass stops where it stands. */
  readonly stop?: AbortSignal | undefined;
  /** No window read ahead while one commits: a pass that most often ends at its first (reading again one row). */
  readonly alone?: boolean;
  /** A sweep's: the ids its windows showed where it stood already, which its cycle's end keeps (a probe's may be stale). */
  readonly shown?: Set<string>;
}

/** Reads windows from `start` until the pass ends or `budget` is spent, each to `commit` in order (`false`: stop). */
export async function runPass<T>(
  run: PassRun<T>,
  start: WindowState,
  budget: number,
  commit: (window: Committed<T>) => Promise<void | false>,
  timeUp: () => boolean = () => false,
  doubt?: (window: Committed<T>) => Promise<boolean>,
): Promise<{ state: WindowState; ended: boolean }> {
  let state = start, spent = 0, free = 0, chased = 0, afterShort = false;
  let repeated: Repeats | undefined, width = 1; // one window first: a run with nothing new costs one request
  const flights: Flight<T>[] = [], { path } = run.config.identity;
  const launcher = windowLauncher(run, timeUp), reads = unstoppedRead(run);
  const fill = () => {
    // The read that confirms a short page is that window's: it may come past the budget (once), or no run would end.
    const allowed = () => budget + free + (state.short !== undefined ? 1 : 0);
    while (flights.length < width && spent < allowed()) {
      if (!launcher.next(state, flights, afterShort)) break;
      spent++;
    }
  };
  try {
    while (true) {
      fill();
      const flight = flights.shift();
      if (flight === undefined) return { state, ended: false };
      const judged = await judge(flight, state, run, start.edge, doubt);
      if (judged.kind === "stopped") return { state, ended: false };
      afterShort = judged.kind === "commit" && !judged.full; // the next read settles it: a cut, or the end
      const nothing = judged.kind === "commit" && !judged.window.items.length;
      free = unspent(free, judged, state, nothing);
      const next = judged.next, over = flight.plan.limit > windowCap(state);
      state = nothing && over ? { ...next, overTried: next.offset } : next;
      const missed = judged.kind === "gap" || (nothing && !!state.seek); // sought, not found, or doubted
      if (missed) state = unjoined(state, flight.plan, path);
      if ("doubted" in judged) flights.unshift(launcher.again(flight.plan)); // first: those after it stand if it does
      else if (judged.kind !== "commit" || unsure(state)) {
        land(flights); // windows planned on a wrong guess are not worth reading
        width = 1;
      }
      if (judged.kind !== "commit") continue;
      if (judged.window.items.length > 0) state = { ...state, misses: 0 };
      repeated = repeatsOf(repeated, flight.plan, judged.first, path);
      // After a short window that is no end, the next goes alone too.
      if (!judged.ended && !unsure(state) && judged.full && !run.alone) {
        width = run.config.concurrency;
        fill(); // the service works while the sink writes
      }
      const cut = judged.endsBefore !== undefined && // no tick where none is asked
        await goesOn(reads, judged.endsBefore, state, flight.plan.limit);
      const window = cut ? { ...judged.window, ended: false } : judged.window;
      if (await commit(window) === false) return { state, ended: false };
      if (window.ended) return { state, ended: true };
      chased = state.short === undefined ? 0 : chased + 1; // MAX_CHASED
      const halted = judged.halted || cut || chased > MAX_CHASED;
      if (halted) return { state, ended: false };
    }
  } finally {
    land(flights);
  }
}

/** The budget's reads a pass gets back once `judged` (`nothing`: committing no item) is judged after `state`. */
function unspent(
  free: number,
  judged: { kind: string; next: WindowState },
  state: WindowState,
  nothing: boolean,
): number {
  // A window cut with nothing new is not the budget's, twice a pass: a sweep of 1 spent each run on one, for good.
  if (nothing && judged.next.refused < state.refused) {
    free = Math.min(free + 1, 2);
  }
  // Nor a size refused under the cap (learnt again each pass: the same for good), each time.
  const least = judged.kind === "refused" && judged.next.least !== state.least;
  return least ? free + 1 : free;
}

/** While the edge is sought, or a short page awaits its confirming read, windows go one at a time. */
function unsure(state: WindowState): boolean {
  return state.seek !== undefined || state.short !== undefined;
}

/**
 * Counts a window that sought the edge: past MAX_MISSES the list moves faster than it is read, or another list answers.
 * @throws {SyncError} (`"unordered"`)
 */
function unjoined(state: WindowState, plan: WindowPlan, path: string) {
  const misses = state.misses ?? 0;
  if (misses < MAX_MISSES) return { ...state, misses: misses + 1 };
  const why =
    `${MAX_MISSES} windows (the last page ${plan.page} of ${plan.limit}) sought the last item read, and none brought anything after it`;
  throw unjoinedPages(path, why);
}

/** The pages of `path` do not join, because `why` (so they are no one list's). */
export function unjoinedPages(path: string, why: string): SyncError {
  const message =
    `Cannot sync ${path}: ${why}: the pages do not join (the list moves faster than it is read, or another list answered its first pages); what was committed stays`;
  return new SyncError(message, "unordered");
}

/** Windows in a row whose first item is the same: how many, and how far apart. */
type Repeats = { first: string; low: number; high: number; n: number };

/** The windows in a row that began with `first`, once `plan`'s did. @throws {SyncError} (`"repeated-page"`) */
function repeatsOf(
  before: Repeats | undefined,
  plan: WindowPlan,
  first: string | undefined,
  path: string,
): Repeats | undefined {
  if (first === undefined) return undefined;
  const { start, limit } = plan;
  const was = before?.first === first ? before : undefined;
  const repeats = {
    first,
    low: Math.min(was?.low ?? start, start),
    high: Math.max(was?.high ?? start, start),
    n: (was?.n ?? 0) + 1,
  };
  if (repeats.n < REPEATS || repeats.high - repeats.low < 2 * limit) {
    return repeats;
  }
  const message =
    `Cannot sync ${path}: ${REPEATS} windows or more in a row, two pages or more apart, the last page ${plan.page} of ${limit}, began with the same item: the service seems to ignore 'page'; what was committed stays`;
  throw new SyncError(message, "repeated-page");
}

/** A window's verdict; a refused size is a verdict too (read smaller). */
async function judge<T>(
  flight: Flight<T>,
  state: WindowState,
  { config, shown }: PassRun<T>,
  firstEdge: SyncKey | null,
  doubt?: (window: Committed<T>) => Promise<boolean>,
) {
  let items: readonly T[];
  try {
    items = await flight.items;
  } catch (error) {
    const next = sizeRefused(error, flight.plan.limit, state, config.limit);
    if (next !== undefined) return { kind: "refused" as const, next };
    if (flight.stop?.aborted) return { kind: "stopped" as const }; // at maxDuration
    throw error;
  }
  const keys = items.map(config.keyOf);
  const verdict = judgeWindow(state, flight.plan, keys);
  if (verdict.kind !== "commit") return verdict;
  const at = firstEdge === null || state.edge !== firstEdge
    ? -1
    : keys.findIndex((key) => key.id === firstEdge.id);
  const { from, to } = verdict.fresh;
  const window: Committed<T> = {
    items: items.slice(from, to),
    ids: keys.slice(from, to).map((key) => key.id),
    state: verdict.next,
    ended: verdict.ended,
    reached: verdict.reached,
    limit: flight.plan.limit,
    start: flight.plan.start,
    ...(at < 0 ? {} : { edgeAt: flight.plan.start + at }),
    ...(verdict.lost === true ? { lost: true } : {}),
    ...(from > 0 ? { passed: keys.slice(0, from) } : {}),
    ...(to < keys.length ? { beyond: keys.slice(to) } : {}),
  };
  // What it shows where the pass stood stands (the items it commits are written): a sweep keeps it (`shown`).
  for (const key of window.passed ?? []) shown?.add(key.id);
  // Doubted: read again from where the pass stands (a window sought, as after a gap).
  if (await doubt?.(window) === true) {
    return { kind: "gap" as const, next: state, doubted: true };
  }
  const full = keys.length >= flight.plan.limit;
  return { ...verdict, window, first: keys[0]?.id, full };
}

/**
 * The state once the service refused a window of `limit` (`error`: a size it refuses), to read smaller or larger;
 * undefined for any other failure, or a size the pass needs (the error ends the run, the service's answer saying why).
 */
function sizeRefused(
  error: unknown,
  limit: number,
  state: WindowState,
  userLimit: number,
): WindowState | undefined {
  if (!sizeRefusal(error)) return undefined;
  const floor = Math.max(userLimit, MIN_WINDOW),
    least = Math.max(limit, state.least ?? 0);
  // A short page read again at its own size: under the service's least page, read again as one under MIN_WINDOW is.
  if (state.capped) return { ...state, ...state.capped, capped: null, least };
  // Placed under the cap to reach further: the service's least page size, none so small again this pass.
  const placed = limit < windowCap(state) && limit > (state.least ?? 0);
  if (limit <= floor && placed) return { ...state, least };
  // A 400 refuses the size, even one honoured before (the service may have lowered its largest); not at the floor.
  return error.status === 400 && limit > floor
    ? refusedWindow(state, limit)
    : undefined;
}

/**
 * Launches a pass's next window into `flights`, and says whether it did: none past maxDuration but, once a pass, the
 * read confirming a short page (`afterShort`). That read, and a doubted window's read again (`again`), are never
 * stopped at maxDuration: else a run with time for the window before it began again at that window each run.
 */
function windowLauncher<T>(run: PassRun<T>, timeUp: () => boolean) {
  let late = false; // that read made past the time
  const unstopped = { ...run, stop: undefined };
  const next = (
    state: WindowState,
    flights: Flight<T>[],
    afterShort: boolean,
  ) => {
    const past = timeUp(), confirms = afterShort || state.short !== undefined;
    if (past && (late || !confirms)) return false;
    late ||= past;
    const last = flights.at(-1);
    const plan = last ? followingWindow(last.plan, state) : nextWindow(state);
    flights.push(launch(confirms ? unstopped : run, plan, true));
    return true;
  };
  return { next, again: (plan: WindowPlan) => launch(unstopped, plan, true) };
}

/**
 * Requests the window `plan` (counted); aborted by the run's signal, its `stop`, or its own controller. A window's 404
 * past page 1 (`window`) is an empty page (services answer so past their end): a gap, read earlier, never an end. The
 * reads of `keysOf` keep the 404: no 404 alone says where a list ends.
 */
function launch<T>(run: PassRun<T>, plan: WindowPlan, window = false) {
  const { client, config, stop } = run, controller = new AbortController();
  run.requests.count++;
  const signals = [config.signal, stop, controller.signal];
  const signal = AbortSignal.any(signals.filter((s) => s !== undefined));
  const items = (async () => {
    const pages = client.pages<T>(config.identity.path, {
      ...listOptions(config, signal),
      limit: plan.limit,
      page: plan.page,
      maxPages: 1,
    });
    for await (const page of pages) {
      run.requests.items += page.items.length;
      return page.items;
    }
    return [];
  })().catch((error) => {
    if (window && plan.page > 1 && notFound(error)) return [];
    throw error;
  });
  items.catch(() => {}); // a window dropped in flight may still reject
  return { plan, controller, items, stop };
}

function land<T>(flights: Flight<T>[]): void {
  for (const flight of flights.splice(0)) flight.controller.abort();
}

/**
 * The keys of the list's page `page` of `limit`, read past maxDuration too (stopped, every run would stop there). A size
 * the service refuses tells nothing (undefined); another failure ends the run.
 */
export async function listHead<T>(run: PassRun<T>, limit: number, page = 1) {
  try {
    const start = (page - 1) * limit;
    return await unstoppedRead(run).keysOf({ start, limit, page });
  } catch (error) {
    if (sizeRefusal(error)) return;
    throw error;
  }
}

/** `run`'s reads of one page's keys (one request each), past maxDuration too: stopped, a cycle would never end there. */
function unstoppedRead<T>({ stop: _, ...run }: PassRun<T>): PageRead {
  return {
    sign: run.config.identity.sortDirection === "DESC" ? -1 : 1,
    keysOf: async (plan) =>
      (await launch(run, plan).items).map(run.config.keyOf),
  };
}
