// Internal: pure functions: where a run's passes start (the head: what is new; the sweep: the copy read again in a
// rolling cycle), the checkpoint each committed window leaves, and the check of a saved checkpoint.

import { given, tried, typeError } from "../core/_check.ts";
import { type DeleteRecord, withDeletes } from "./_deletes.ts";
import type { SweepCursor, SyncCheckpoint } from "./sink.ts";
import {
  MIN_MARGIN,
  MIN_WINDOW,
  RESUME_MARGIN,
  type SyncKey,
  type WindowState,
} from "./_window.ts";

/** What makes two checkpoints about the same copy. */
export type SyncIdentity =
  & Pick<SyncCheckpoint, "path" | "sortBy" | "id" | "query">
  & { readonly sortDirection: "ASC" | "DESC" };

/** Where a run begins: the checkpoint it extends, and the head pass's start. */
export type RunStart = Readonly<ReturnType<typeof runStart>>;

type Sizes = { readonly maxLimit: number; readonly limit?: number };

/**
 * Where a run starts: the saved checkpoint (or a new one), the head pass from its edge (or, descending, from the top).
 * @throws {TypeError} (`option: "sink"`) For a checkpoint that is not one, or another path, order, id field or query.
 */
export function runStart(saved: unknown, identity: SyncIdentity, sizes: Sizes) {
  const checkpoint = saved === undefined
    ? newCheckpoint(identity)
    : checkCheckpoint(saved, identity);
  const descending = identity.sortDirection === "DESC";
  const cursor = descending ? checkpoint.head ?? null : checkpoint;
  // The head's margin on resuming: wide enough for the deletes since the last run, with room left for new items.
  const quarter = Math.floor(sizes.maxLimit / 4);
  const margin = Math.max(MIN_MARGIN, Math.min(RESUME_MARGIN, quarter));
  const head: WindowState = {
    ...sizing(checkpoint, sizes),
    ...resumeAt(cursor?.edge ?? null, cursor?.offset ?? 0, margin),
    ...(descending ? { domain: { above: checkpoint.edge, upTo: null } } : {}),
  };
  return {
    checkpoint,
    head,
    /** The run continues a head pass an earlier run left unfinished. */
    resumed: !checkpoint.complete &&
      (checkpoint.edge !== null || checkpoint.head !== undefined),
  };
}

/** The checkpoint once a head window is committed (`top`: its first fresh key). */
export function afterHeadWindow(
  base: SyncCheckpoint,
  state: WindowState,
  ended: boolean,
  top: SyncKey | undefined,
): SyncCheckpoint {
  const { edge, offset } = state;
  if (base.sortDirection !== "DESC") {
    return { ...base, ...accepted(state), edge, offset, complete: ended };
  }
  // Descending, the newest item becomes the edge once the pass is whole.
  const newest = base.head?.top ?? top ?? null;
  const { head: _, ...rest } = { ...base, ...accepted(state) };
  // A whole first read's end stands past the list's last item: `offset` then says how long it is (sweepLeft's measure).
  const length = base.edge === null ? { offset: state.offset } : {};
  return ended
    ? { ...rest, ...length, edge: newest ?? base.edge, complete: true }
    : { ...rest, complete: false, head: { edge, offset, top: newest } };
}

/** The sweep's start: the cycle under way (unless `fresh`), or a new one up to the edge (`begins`); undefined with nothing to sweep. */
export function sweepStart(
  checkpoint: SyncCheckpoint,
  sizes: Sizes,
  at: { readonly now: number; readonly fresh: boolean },
): { state: WindowState; sweep: SweepCursor; begins: boolean } | undefined {
  const under = checkpoint.sweep;
  const goesOn = under !== undefined && !at.fresh;
  if (!goesOn && checkpoint.edge === null) return undefined;
  const sweep: SweepCursor = goesOn ? under : {
    edge: null,
    offset: 0,
    upTo: checkpoint.edge,
    // A cycle given up for a fresh one, or refused, leaves its number behind.
    cycle: 1 + Math.max(
      checkpoint.cycles ?? 0,
      under?.cycle ?? 0,
      checkpoint.refused?.cycle ?? 0,
    ),
    startedAt: at.now,
  };
  return {
    state: {
      ...sizing(checkpoint, sizes),
      // A new cycle learns the page size again: a size honoured before would make a page the service now cuts the end.
      ...(goesOn ? {} : { accepted: 0 }),
      // The sweep pays the narrowest margin: a cycle costs ~⌈n / window⌉ requests, a delete behind it one window more.
      ...resumeAt(sweep.edge, sweep.offset, MIN_MARGIN),
      ...given({ seek: sweep.seek, misses: sweep.misses }),
      domain: { above: null, upTo: sweep.upTo },
    },
    sweep,
    begins: !goesOn,
  };
}

/**
 * A newest-first checkpoint once its run's head committed `by` items first: the list's length (`offset`) and the sweep's
 * cursor and search `by` further on (else a sweep of a list growing fast sought its edge further every run, and failed).
 */
export function grownBy(checkpoint: SyncCheckpoint, by: number) {
  const { sweep } = checkpoint;
  if (by === 0 || sweep === undefined || sweep.edge === null) return checkpoint;
  const moved = (at?: number) => at === undefined ? undefined : at + by;
  const { seek } = sweep;
  const bounds = given({ low: moved(seek?.low), high: moved(seek?.high) });
  const cursor = {
    ...sweep,
    offset: sweep.offset + by,
    ...(seek && { seek: { probes: seek.probes, ...bounds } }),
  };
  return { ...checkpoint, offset: checkpoint.offset + by, sweep: cursor };
}

/** Cycles that keep a refused size before one asks it again. */
const REPROBE_EVERY = 8;

/** The checkpoint once a sweep window is committed. */
export function afterSweepWindow(
  base: SyncCheckpoint,
  sweep: SweepCursor,
  state: WindowState,
  ended: boolean,
): SyncCheckpoint {
  const { sweep: _, ...rest } = base;
  if (ended) {
    const { refused: __, ...done } = rest;
    const { cycle: cycles, startedAt: verifiedAt } = sweep;
    // A refused size is asked again every REPROBE_EVERY cycles: a transient 400 is not kept for good, and a list a run
    // reads whole does not probe again every run.
    const { refusedLimit, ...sizes } = { ...done, ...accepted(state) };
    const keep = refusedLimit !== undefined && cycles % REPROBE_EVERY !== 0;
    const kept = keep ? { refusedLimit } : {};
    // Descending, where the cycle ended is the list's length (ascending, `offset` is the head's: the same).
    const length = base.sortDirection === "DESC"
      ? { offset: state.offset }
      : {};
    return { ...sizes, ...kept, ...length, cycles, verifiedAt };
  }
  // A refusal stays until a cycle completes: the run that ends the next one may be its confirmation.
  const { seek: _seek, misses: _misses, ...cursor } = sweep;
  // A run out of budget while looking for the edge: the next goes on from what this one bracketed, its misses counted on.
  const { edge, offset, seek, misses } = state;
  const seeking = given({ seek, misses: misses || undefined });
  return {
    ...rest,
    ...accepted(state),
    sweep: { ...cursor, edge, offset, ...seeking },
  };
}

/**
 * The checkpoint once a completed cycle's deletes are on record (dated `record.at`, which `guardTime` keeps; the
 * others kept or pruned at the run's clock `now`; `confirmed`: its run answered a refusal).
 */
export function afterDeletes(
  base: SyncCheckpoint,
  record: DeleteRecord,
  confirmed: boolean,
  now: number,
): SyncCheckpoint {
  const { deletions: _, ...rest } = base;
  const deletions = withDeletes(base.deletions, record, confirmed, now);
  const kept = deletions.length === 0 ? {} : { deletions };
  return { ...rest, guardTime: record.at, ...kept };
}

function newCheckpoint(identity: SyncIdentity): SyncCheckpoint {
  const { sortDirection, ...rest } = identity;
  return {
    version: 1,
    ...rest,
    ...(sortDirection === "DESC" ? { sortDirection } : {}),
    edge: null,
    offset: 0,
    full: false,
    complete: false,
  };
}

function accepted(state: WindowState) {
  const { rejected = Infinity } = state;
  const known = state.capped?.accepted ?? state.accepted; // not a read again's cap
  return {
    ...(known > 0 ? { accepted: known } : {}),
    ...(rejected < Infinity ? { refusedLimit: rejected } : {}),
  };
}

function sizing(checkpoint: SyncCheckpoint, sizes: Sizes) {
  // A size refused in an earlier run of the cycle is not asked again (probing every run would spend a small sweep budget
  // on 400s). One under the smallest window is not a page size.
  const refused = checkpoint.refusedLimit ?? 0;
  return {
    accepted: checkpoint.accepted ?? 0,
    ...(refused > MIN_WINDOW
      ? { refused, rejected: refused }
      : { refused: Infinity }),
    maxLimit: sizes.maxLimit,
    ...(sizes.limit === undefined ? {} : { limit: sizes.limit, full: 0 }),
    descending: checkpoint.sortDirection === "DESC",
  };
}

/** A pass's cursor: from the head of the list, or at an edge, read again with `margin`. */
function resumeAt(edge: SyncKey | null, offset: number, margin: number) {
  return edge === null
    ? { edge: null, offset: 0, margin: MIN_MARGIN }
    : { edge, offset, margin };
}

/** `saved` as a checkpoint of this copy, or the TypeError that refuses it. */
function checkCheckpoint(saved: unknown, identity: SyncIdentity) {
  const refusal = (rule: string) => typeError("Cannot sync", "sink", rule);
  if (!isCheckpoint(saved)) {
    throw refusal("holds a checkpoint this version cannot read");
  }
  // A checkpoint without `sortDirection` is ascending; a query is the same whatever its keys' order.
  const was = { ...saved, sortDirection: saved.sortDirection ?? "ASC" };
  const fields = ["sortDirection", "path", "sortBy", "id", "query"] as const;
  for (const field of fields) {
    const [before, now] = [was[field], identity[field]].map((value) =>
      JSON.stringify(
        field === "query" ? byKey(value as SyncCheckpoint["query"]) : value,
      )
    );
    if (before !== now) {
      // A query's values (filters) are the user's data: named, not printed.
      const which = field === "query"
        ? "another query"
        : `${field} ${before}, not ${now}`;
      throw refusal(`holds a checkpoint for ${which}; sync into another copy`);
    }
  }
  return saved;
}

/** A check of a JSON value's shape (the side file's use them too). */
export type Check = (value: unknown) => boolean;
export const text: Check = (v) => typeof v === "string";
export const count: Check = (v) =>
  Number.isSafeInteger(v) && (v as number) >= 0;
const optional = (check: Check): Check => (v) => v === undefined || check(v);
const textOrNull: Check = (v) => v === null || text(v);
export const shape = (fields: Record<string, Check>): Check => (v) =>
  typeof v === "object" && v !== null &&
  Object.entries(fields).every(([name, check]) =>
    check((v as Record<string, unknown>)[name])
  );
const keyOrNull: Check = (v) =>
  v === null ||
  shape({ id: text, value: (x) => text(x) || Number.isFinite(x) })(v);

/** Whether a value has the shape of a checkpoint this version writes (or 0.3 wrote). */
export const isCheckpoint = shape({
  version: (v) => v === 1,
  path: text,
  sortBy: textOrNull,
  id: textOrNull,
  query: (v) => shape({})(v) && Object.values(v as object).every(text),
  sortDirection: (v) => v === undefined || v === "DESC",
  edge: keyOrNull,
  offset: count,
  full: (v) => typeof v === "boolean",
  complete: (v) => typeof v === "boolean",
  accepted: optional(count),
  refusedLimit: optional(count),
  cycles: optional(count),
  verifiedAt: optional(count),
  guardTime: optional(count),
  head: optional(shape({ edge: keyOrNull, offset: count, top: keyOrNull })),
  sweep: optional(shape({
    edge: keyOrNull,
    offset: count,
    upTo: keyOrNull,
    cycle: count,
    startedAt: count,
    seek: optional(
      shape({ probes: count, low: optional(count), high: optional(count) }),
    ),
    misses: optional(count),
  })),
  deletions: optional((v) =>
    Array.isArray(v) &&
    v.every(shape({
      ...{ at: count, deleted: count, held: count },
      uncounted: optional((v) => v === true),
    }))
  ),
  refused: optional(shape({
    cycle: count,
    at: count,
    maxDeletes: (v) => typeof v === "number",
  })),
}) as (value: unknown) => value is SyncCheckpoint;

/** The value of a JSON text, or undefined when it is not JSON (a damaged checkpoint). */
export function parsedJson(text: string): unknown {
  return tried(() => JSON.parse(text));
}

/** A query's pairs in key order (keys are unique): the same query whatever order its keys came in. */
function byKey(query: SyncCheckpoint["query"]): [string, string][] {
  return Object.entries(query).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
}

/** List requests the cycle under way still needs, about. */
export function sweepLeft(checkpoint: SyncCheckpoint): number {
  const sweep = checkpoint.sweep;
  if (sweep === undefined) return 0;
  const window = Math.max(1, checkpoint.accepted ?? 1);
  return Math.max(1, Math.ceil((checkpoint.offset - sweep.offset) / window));
}

/** When the copy will next be verified at this run's sweep rate: the cycle's rest, or a whole one (⌈n / window⌉ + 1). */
export function nextVerified(
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
