// Internal: a checkpoint's identity, its validation, and the state a run
// starts from, as pure functions.

import { optionError } from "../core/_check.ts";
import type { SyncCheckpoint } from "./_types.ts";
import { MIN_MARGIN, RESUME_MARGIN, type WindowState } from "./_window.ts";

/** What makes two checkpoints about the same copy. */
export type SyncIdentity = Pick<
  SyncCheckpoint,
  "path" | "sortBy" | "id" | "query"
>;

/** Where a run begins: its state, the checkpoint it extends, whether it resumes. */
export interface RunStart {
  readonly state: WindowState;
  readonly checkpoint: SyncCheckpoint;
  readonly resumed: boolean;
  /** A full pass begins: its empty checkpoint is written before any window. */
  readonly beginsFullPass: boolean;
}

const CONTEXT = "Cannot sync";

/**
 * The state a run starts from: a fresh pass without a checkpoint or with
 * `full` (unless a full pass is already under way), else the saved edge,
 * read again with a wide margin.
 *
 * @throws {TypeError} (`option: "sink"`) For a checkpoint that is not one,
 * or was written for another path, order, id field or query.
 */
export function runStart(
  saved: unknown,
  identity: SyncIdentity,
  sizes: { limit: number; maxLimit: number },
  full: boolean,
): RunStart {
  const checked = saved === undefined
    ? undefined
    : checkCheckpoint(saved, identity);
  const sizing = {
    accepted: checked?.accepted ?? 0,
    refused: Infinity,
    maxLimit: sizes.maxLimit,
  };
  const continuesFull = checked?.full === true && !checked.complete;
  if (checked === undefined || (full && !continuesFull)) {
    return {
      state: { ...sizing, edge: null, offset: 0, margin: MIN_MARGIN },
      checkpoint: {
        version: 1,
        ...identity,
        edge: null,
        offset: 0,
        full: checked !== undefined,
        complete: false,
      },
      resumed: false,
      beginsFullPass: checked !== undefined,
    };
  }
  return {
    state: {
      ...sizing,
      edge: checked.edge,
      offset: checked.offset,
      // Wide enough to see deletes since the last run, narrow enough to
      // leave most of the window for new items.
      margin: Math.min(RESUME_MARGIN, Math.floor(sizes.maxLimit / 4)),
    },
    checkpoint: checked,
    resumed: !checked.complete,
    beginsFullPass: false,
  };
}

/** `saved` as a checkpoint of this copy, or the TypeError that refuses it. */
export function checkCheckpoint(
  saved: unknown,
  identity: SyncIdentity,
): SyncCheckpoint {
  if (!isCheckpoint(saved)) {
    throw refusal("holds a checkpoint this version cannot read");
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

/** Whether `value` has the shape of a checkpoint this version writes. */
export function isCheckpoint(value: unknown): value is SyncCheckpoint {
  if (typeof value !== "object" || value === null) return false;
  const c = value as Record<string, unknown>;
  const text = (v: unknown) => typeof v === "string";
  const edge = c.edge as Record<string, unknown> | null;
  return c.version === 1 && text(c.path) &&
    (c.sortBy === null || text(c.sortBy)) && (c.id === null || text(c.id)) &&
    typeof c.query === "object" && c.query !== null &&
    Object.values(c.query).every(text) &&
    (edge === null ||
      (typeof edge === "object" && text(edge.id) &&
        (text(edge.value) || Number.isFinite(edge.value)))) &&
    Number.isSafeInteger(c.offset) && (c.offset as number) >= 0 &&
    typeof c.full === "boolean" && typeof c.complete === "boolean" &&
    (c.accepted === undefined ||
      (Number.isSafeInteger(c.accepted) && (c.accepted as number) >= 0));
}
