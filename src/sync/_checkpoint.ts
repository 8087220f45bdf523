// Internal: a checkpoint's identity and validation, and, as pure functions,
// where a run's passes start and the checkpoint each committed window
// leaves: the head pass (what is new) and the sweep (what the copy holds,
// read again in a rolling cycle).

import { optionError } from "../core/_check.ts";
import { type DeleteRecord, withDeletes } from "./_deletes.ts";
import type { SweepCursor, SyncCheckpoint } from "./sink.ts";
import {
  MIN_MARGIN,
  RESUME_MARGIN,
  type SyncKey,
  type WindowState,
} from "./_window.ts";

/** What makes two checkpoints about the same copy. */
export interface SyncIdentity {
  readonly path: string;
  readonly sortBy: string | null;
  readonly id: string | null;
  readonly query: Readonly<Record<string, string>>;
  readonly sortDirection: "ASC" | "DESC";
}

/** Where a run begins: the checkpoint it extends, and the head pass's start. */
export interface RunStart {
  readonly checkpoint: SyncCheckpoint;
  readonly head: WindowState;
  /** The run continues a head pass an earlier run left unfinished. */
  readonly resumed: boolean;
}

const CONTEXT = "Cannot sync";

/** The sizes every pass of a run shares. */
type Sizes = { readonly limit: number; readonly maxLimit: number };

/**
 * Where a run starts: the saved checkpoint (a new one without), and the
 * head pass from its edge (ascending), or from the top down to the newest
 * item committed (descending).
 *
 * @throws {TypeError} (`option: "sink"`) For a checkpoint that is not one,
 * or was written for another path, order, direction, id field or query.
 */
export function runStart(
  saved: unknown,
  identity: SyncIdentity,
  sizes: Sizes,
): RunStart {
  const checkpoint = saved === undefined
    ? newCheckpoint(identity)
    : checkCheckpoint(saved, identity);
  const descending = identity.sortDirection === "DESC";
  const base = sizing(checkpoint, sizes, descending);
  const cursor = descending ? checkpoint.head ?? null : checkpoint;
  return {
    checkpoint,
    head: {
      ...base,
      ...resumeAt(cursor?.edge ?? null, cursor?.offset ?? 0, headMargin(sizes)),
      ...(descending ? { domain: { above: checkpoint.edge, upTo: null } } : {}),
    },
    resumed: !checkpoint.complete && (checkpoint.edge !== null ||
      checkpoint.head !== undefined),
  };
}

/** The checkpoint once a head window is committed (`top`: its first fresh key). */
export function afterHeadWindow(
  base: SyncCheckpoint,
  state: WindowState,
  ended: boolean,
  top: SyncKey | undefined,
): SyncCheckpoint {
  const accepted = state.accepted > 0 ? { accepted: state.accepted } : {};
  if (base.sortDirection !== "DESC") {
    return {
      ...base,
      ...accepted,
      edge: state.edge,
      offset: state.offset,
      complete: ended,
    };
  }
  // Descending, the newest item becomes the edge once the pass is whole.
  const newest = base.head?.top ?? top ?? null;
  const { head: _, ...rest } = base;
  return ended
    ? { ...rest, ...accepted, edge: newest ?? base.edge, complete: true }
    : {
      ...rest,
      ...accepted,
      complete: false,
      head: { edge: state.edge, offset: state.offset, top: newest },
    };
}

/**
 * The sweep's start: the cycle under way, or a new one over everything up
 * to the newest item committed; undefined when there is nothing to sweep.
 * `begins` is set when a new cycle starts (its checkpoint is written first).
 */
export function sweepStart(
  checkpoint: SyncCheckpoint,
  sizes: Sizes,
  at: { readonly now: number; readonly freshBefore: number },
): { state: WindowState; sweep: SweepCursor; begins: boolean } | undefined {
  const descending = checkpoint.sortDirection === "DESC";
  const base = sizing(checkpoint, sizes, descending);
  const under = checkpoint.sweep;
  if (under !== undefined && under.startedAt >= at.freshBefore) {
    return {
      state: {
        ...base,
        // The sweep pays its margin on every run: the narrowest keeps a
        // cycle within about ⌈n / window⌉ requests; a delete more than it
        // behind the cursor costs one window read again.
        ...resumeAt(under.edge, under.offset, MIN_MARGIN),
        ...(under.seek === undefined ? {} : { seek: under.seek }),
        domain: { above: null, upTo: under.upTo },
      },
      sweep: under,
      begins: false,
    };
  }
  if (checkpoint.edge === null) return undefined;
  const sweep: SweepCursor = {
    edge: null,
    offset: 0,
    upTo: checkpoint.edge,
    // A cycle given up for a fresh one, or refused, leaves its number behind.
    cycle: Math.max(
      checkpoint.cycles ?? 0,
      under?.cycle ?? 0,
      checkpoint.refused?.cycle ?? 0,
    ) + 1,
    startedAt: at.now,
  };
  return {
    state: {
      ...base,
      ...resumeAt(null, 0, MIN_MARGIN),
      domain: { above: null, upTo: sweep.upTo },
    },
    sweep,
    begins: true,
  };
}

/** The checkpoint once a sweep window is committed. */
export function afterSweepWindow(
  base: SyncCheckpoint,
  sweep: SweepCursor,
  state: WindowState,
  ended: boolean,
): SyncCheckpoint {
  const { sweep: _, refused: __, ...rest } = base;
  const accepted = state.accepted > 0 ? { accepted: state.accepted } : {};
  const { seek: _seek, ...cursor } = sweep;
  return ended
    ? { ...rest, ...accepted, cycles: sweep.cycle, verifiedAt: sweep.startedAt }
    : {
      ...rest,
      ...accepted,
      sweep: {
        ...cursor,
        edge: state.edge,
        offset: state.offset,
        // A run out of budget while it looked for the edge: the next
        // goes on looking from what this one bracketed.
        ...(state.seek === undefined ? {} : { seek: state.seek }),
      },
    };
}

/**
 * The checkpoint once the guard refused cycle `cycle` (at `now`): the cycle
 * is given up, and the refusal recorded; the next run begins a new one.
 */
export function afterRefusal(
  base: SyncCheckpoint,
  cycle: number,
  maxDeletes: number,
  now: number,
): SyncCheckpoint {
  const { sweep: _, ...rest } = base;
  return { ...rest, refused: { cycle, at: now, maxDeletes } };
}

/** The checkpoint once a completed cycle's deletes are on record. */
export function afterDeletes(
  base: SyncCheckpoint,
  record: DeleteRecord,
): SyncCheckpoint {
  const { deletions: _, ...rest } = base;
  const deletions = withDeletes(base.deletions, record);
  return deletions.length === 0 ? rest : { ...rest, deletions };
}

/** The cycle whose rows a batch written now is seen in. */
export function cycleOf(checkpoint: SyncCheckpoint): number {
  return checkpoint.sweep?.cycle ?? checkpoint.cycles ?? 0;
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

function sizing(
  checkpoint: SyncCheckpoint,
  sizes: Sizes,
  descending: boolean,
) {
  return {
    accepted: checkpoint.accepted ?? 0,
    refused: Infinity,
    maxLimit: sizes.maxLimit,
    descending,
  };
}

/** A pass's cursor: from the head of the list, or at an edge, read again with `margin`. */
function resumeAt(edge: SyncKey | null, offset: number, margin: number) {
  return edge === null
    ? { edge: null, offset: 0, margin: MIN_MARGIN }
    : { edge, offset, margin };
}

/**
 * The head's margin on resuming: wide enough to see the deletes since the
 * last run, narrow enough to leave most of the window for new items.
 */
function headMargin(sizes: Sizes): number {
  return Math.max(
    MIN_MARGIN,
    Math.min(RESUME_MARGIN, Math.floor(sizes.maxLimit / 4)),
  );
}

/** `saved` as a checkpoint of this copy, or the TypeError that refuses it. */
export function checkCheckpoint(
  saved: unknown,
  identity: SyncIdentity,
): SyncCheckpoint {
  if (!isCheckpoint(saved)) {
    throw refusal("holds a checkpoint this version cannot read");
  }
  const direction = saved.sortDirection ?? "ASC";
  if (direction !== identity.sortDirection) {
    throw refusal(
      `holds a copy read ${direction}, not ${identity.sortDirection}; sync into another copy`,
    );
  }
  for (const field of ["path", "sortBy", "id"] as const) {
    if (saved[field] !== identity[field]) {
      throw refusal(
        `holds a checkpoint for ${field} ${JSON.stringify(saved[field])}, not ${
          JSON.stringify(identity[field])
        }; sync into another copy`,
      );
    }
  }
  if (!sameQuery(saved.query, identity.query)) {
    throw refusal(
      "holds a checkpoint for another query; sync into another copy",
    );
  }
  return saved;
}

function refusal(rule: string): TypeError {
  return optionError(TypeError, CONTEXT, "sink", rule);
}

function sameQuery(
  a: Readonly<Record<string, string>>,
  b: Readonly<Record<string, string>>,
): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length &&
    keys.every((key) => a[key] === b[key]);
}

/** Whether `value` has the shape of a checkpoint this version writes (or 0.3 wrote). */
export function isCheckpoint(value: unknown): value is SyncCheckpoint {
  if (typeof value !== "object" || value === null) return false;
  const c = value as Record<string, unknown>;
  const text = (v: unknown) => typeof v === "string";
  return c.version === 1 && text(c.path) &&
    (c.sortBy === null || text(c.sortBy)) && (c.id === null || text(c.id)) &&
    typeof c.query === "object" && c.query !== null &&
    Object.values(c.query).every(text) &&
    (c.sortDirection === undefined || c.sortDirection === "DESC") &&
    isKeyOrNull(c.edge) && isCount(c.offset) &&
    typeof c.full === "boolean" && typeof c.complete === "boolean" &&
    optional(c.accepted, isCount) && optional(c.cycles, isCount) &&
    optional(c.verifiedAt, isCount) && optional(c.head, isHead) &&
    optional(c.sweep, isSweep) && optional(c.deletions, isDeletions) &&
    optional(c.refused, isRefused);
}

function isDeletions(value: unknown): boolean {
  return Array.isArray(value) &&
    value.every((record) =>
      typeof record === "object" && record !== null &&
      isCount(record.at) && isCount(record.deleted) && isCount(record.held)
    );
}

function isRefused(value: unknown): boolean {
  const refused = value as Record<string, unknown> | null;
  return typeof refused === "object" && refused !== null &&
    isCount(refused.cycle) && isCount(refused.at) &&
    typeof refused.maxDeletes === "number";
}

function optional(value: unknown, check: (v: unknown) => boolean): boolean {
  return value === undefined || check(value);
}

function isCount(value: unknown): boolean {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isKeyOrNull(value: unknown): boolean {
  if (value === null) return true;
  if (typeof value !== "object") return false;
  const key = value as Record<string, unknown>;
  return typeof key.id === "string" &&
    (typeof key.value === "string" || Number.isFinite(key.value));
}

function isHead(value: unknown): boolean {
  const head = value as Record<string, unknown> | null;
  return typeof head === "object" && head !== null &&
    isKeyOrNull(head.edge) && isCount(head.offset) && isKeyOrNull(head.top);
}

function isSweep(value: unknown): boolean {
  const sweep = value as Record<string, unknown> | null;
  return typeof sweep === "object" && sweep !== null &&
    isKeyOrNull(sweep.edge) && isCount(sweep.offset) &&
    isKeyOrNull(sweep.upTo) && isCount(sweep.cycle) &&
    isCount(sweep.startedAt) && optional(sweep.seek, isSeek);
}

function isSeek(value: unknown): boolean {
  const seek = value as Record<string, unknown> | null;
  return typeof seek === "object" && seek !== null && isCount(seek.probes) &&
    optional(seek.low, isCount) && optional(seek.high, isCount);
}

/** The value of a JSON text, or undefined when it is not JSON (a damaged checkpoint). */
export function parsedJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
