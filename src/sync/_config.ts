// Internal: syncList's options, checked before anything is read or sent.

import {
  checkAtMost,
  checkNumber,
  optionError,
  requireOptions,
  requireText,
} from "../core/_check.ts";
import type { SyncIdentity } from "./_checkpoint.ts";
import type { SyncSink } from "./sink.ts";
import type { SyncEvent, SyncOptions, SyncProgress } from "./sync_options.ts";
import { MIN_WINDOW, type SyncKey } from "./_window.ts";
import { SyncError } from "./sync_error.ts";

const CONTEXT = "Cannot sync";

/** The checked options of one run. */
export interface SyncConfig<T> {
  readonly identity: SyncIdentity;
  readonly sink: SyncSink<T>;
  readonly limit: number;
  readonly maxLimit: number;
  readonly concurrency: number;
  /** List requests a run may spend on the sweep (Infinity: a whole cycle). */
  readonly sweep: number;
  /** `sweep: Infinity` was asked for: the copy equal to the list now. */
  readonly fresh: boolean;
  /** How long the sweep may read, in ms (Infinity: no bound). */
  readonly maxDuration: number;
  /** The list requests' priority (`"low"`: they yield to live calls). */
  readonly priority: "high" | "low" | "auto";
  readonly deletes: "remove" | "mark";
  readonly maxDeletes: number;
  readonly changes: boolean;
  readonly signal: AbortSignal | undefined;
  /** The wall clock of the run's decisions. */
  readonly now: () => number;
  readonly items: ((body: unknown) => readonly T[]) | undefined;
  readonly onProgress: ((progress: SyncProgress) => void) | undefined;
  readonly onEvent: ((event: SyncEvent) => void) | undefined;
  /** The item's place in the order. @throws {SyncError} */
  readonly keyOf: (item: T) => SyncKey;
}

/**
 * The options of a run.
 *
 * @throws {TypeError} (`option`) For a bad id, sort field, sink, query or callback.
 * @throws {RangeError} (`option`) For a bad limit, maxLimit or concurrency.
 */
export function syncConfig<T>(
  path: string,
  options: SyncOptions<T>,
): SyncConfig<T> {
  requireOptions(options, CONTEXT);
  const id = options.id;
  if (typeof id !== "function") requireText(id, CONTEXT, "id");
  const sortBy = checkSortBy(options.sortBy);
  refuseFull(options);
  for (const name of ["items", "onProgress", "onEvent", "now"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "function") {
      throw optionError(TypeError, CONTEXT, name, "must be a function");
    }
  }
  return {
    identity: {
      path: requireText(path, CONTEXT, "path").replace(/^\/+/, ""),
      sortBy: sortBy ?? (typeof id === "string" ? id : null),
      id: typeof id === "string" ? id : null,
      query: { ...checkQuery(options.query) },
      sortDirection: checkDirection(options.sortDirection),
    },
    ...sweepOptions(options),
    ...pagingOptions(options),
    sink: checkSink(options.sink),
    signal: options.signal,
    now: options.now ?? Date.now,
    items: options.items,
    onProgress: options.onProgress,
    onEvent: options.onEvent,
    keyOf: keyReader(id, sortBy),
  };
}

/** A field name to sort by; `-field` is refused with what to write instead. */
function checkSortBy(given: unknown): string | undefined {
  if (given === undefined) return undefined;
  const sortBy = requireText(given, CONTEXT, "sortBy");
  if (sortBy.startsWith("-")) {
    throw optionError(
      TypeError,
      CONTEXT,
      "sortBy",
      `must be a field name: write sortBy: ${
        JSON.stringify(sortBy.slice(1))
      }, sortDirection: "DESC"`,
      JSON.stringify(sortBy.slice(0, 40)),
    );
  }
  return sortBy;
}

/** 0.3's `full` is refused with what replaced it. */
function refuseFull(options: object): void {
  if ("full" in options && (options as { full?: unknown }).full !== undefined) {
    throw optionError(
      TypeError,
      CONTEXT,
      "full",
      "was replaced in 0.4 by 'sweep': write sweep: Infinity for a whole pass now (and deletes are removed too)",
    );
  }
}

/** A sink with `load` and `write`, and `lock` a function if it has one. */
function checkSink<T>(sink: SyncSink<T>): SyncSink<T> {
  if (
    typeof sink?.load !== "function" || typeof sink?.write !== "function" ||
    (sink.lock !== undefined && typeof sink.lock !== "function")
  ) {
    throw optionError(
      TypeError,
      CONTEXT,
      "sink",
      "must have load and write (and lock, if any, a function)",
    );
  }
  return sink;
}

/** Page size, the largest a resumed run may meet, and pages in flight. */
function pagingOptions<T>(options: SyncOptions<T>) {
  const limit = checkNumber(
    options.limit,
    50,
    "positive integer",
    CONTEXT,
    "limit",
  );
  const concurrency = checkAtMost(
    checkNumber(
      options.concurrency,
      1,
      "positive integer",
      CONTEXT,
      "concurrency",
    ),
    64,
    CONTEXT,
    "concurrency",
  );
  return {
    limit,
    maxLimit: Math.max(limit, checkMaxLimit(options.maxLimit)),
    concurrency,
  };
}

/** The sweep's options: budget, what deletes do, and the guard. */
/** A sync's list requests' priority: Fetch's own values, `"low"` by default. */
function checkPriority(given: unknown): "high" | "low" | "auto" {
  const priority = given ?? "low";
  if (priority === "low" || priority === "high" || priority === "auto") {
    return priority;
  }
  throw optionError(
    TypeError,
    CONTEXT,
    "priority",
    'must be "high", "low" or "auto" (Fetch\'s RequestInit.priority)',
    String(priority),
  );
}

function sweepOptions<T>(options: SyncOptions<T>) {
  const maxDuration = checkNumber(
    options.maxDuration,
    Infinity,
    "positive time in ms, at most 2147483647",
    CONTEXT,
    "maxDuration",
  );
  // With a time bound and no count, the sweep spends what the limiter
  // leaves it (at low priority) until the cycle completes or time is up.
  const sweep = options.sweep === Infinity ? Infinity : checkNumber(
    options.sweep,
    maxDuration === Infinity ? 10 : Infinity,
    "non-negative integer",
    CONTEXT,
    "sweep",
  );
  const deletes = options.deletes ?? "remove";
  if (deletes !== "remove" && deletes !== "mark") {
    throw optionError(
      TypeError,
      CONTEXT,
      "deletes",
      'must be "remove" or "mark"',
      String(deletes),
    );
  }
  const maxDeletes = checkAtMost(
    checkNumber(
      options.maxDeletes,
      0.1,
      "non-negative finite number",
      CONTEXT,
      "maxDeletes",
    ),
    1,
    CONTEXT,
    "maxDeletes",
  );
  if (options.changes !== undefined && typeof options.changes !== "boolean") {
    throw optionError(TypeError, CONTEXT, "changes", "must be a boolean");
  }
  if (deletes === "mark" && options.sink?.marksDeletes === false) {
    throw optionError(
      TypeError,
      CONTEXT,
      "deletes",
      'cannot be "mark" for this sink (a JSONL file keeps no deleted_at): use "remove", or a SQL sink',
    );
  }
  return {
    sweep,
    fresh: options.sweep === Infinity,
    maxDuration,
    priority: checkPriority(options.priority),
    deletes,
    maxDeletes,
    changes: options.changes === true,
  };
}

/** The direction read; `sortDirection` in `query` is refused with what to write. */
function checkDirection(value: unknown): "ASC" | "DESC" {
  if (value === undefined) return "ASC";
  if (value === "ASC" || value === "DESC") return value;
  throw optionError(
    TypeError,
    CONTEXT,
    "sortDirection",
    'must be "ASC" or "DESC"',
    JSON.stringify(String(value).slice(0, 40)),
  );
}

/** The query; the paging and order parameters belong to their own options. */
function checkQuery(query: Record<string, string> | undefined) {
  for (const name of ["sortDirection", "sortBy", "limit", "page"]) {
    if (query !== undefined && name in query) {
      throw optionError(
        TypeError,
        CONTEXT,
        "query",
        `must not hold '${name}': write ${name}: ${
          JSON.stringify(query[name])
        } as an option of syncList`,
      );
    }
  }
  return query;
}

function checkMaxLimit(value: number | undefined): number {
  const maxLimit = checkNumber(
    value,
    1000,
    "positive integer",
    CONTEXT,
    "maxLimit",
  );
  if (maxLimit < MIN_WINDOW) {
    throw optionError(
      RangeError,
      CONTEXT,
      "maxLimit",
      `must be at least ${MIN_WINDOW}, so that windows can overlap at any offset`,
      String(maxLimit),
    );
  }
  return maxLimit;
}

/** Reads an item's key: its id, and its sort value (the raw id by default). */
function keyReader<T>(
  id: string | ((item: T) => string),
  sortBy: string | undefined,
): (item: T) => SyncKey {
  const field = (item: T, name: string) =>
    typeof item === "object" && item !== null
      ? (item as Record<string, unknown>)[name]
      : undefined;
  const rawId = typeof id === "function" ? id : (item: T) => field(item, id);
  return (item) => {
    const raw = rawId(item);
    if (!isValue(raw)) {
      throw new SyncError(
        `Cannot sync: an item has no id${
          typeof id === "string" ? ` in '${id}'` : ""
        }: received ${raw === null ? "null" : typeof raw}`,
        "missing-id",
      );
    }
    const value = sortBy === undefined ? raw : field(item, sortBy);
    if (!isValue(value)) {
      throw new SyncError(
        `Cannot sync: item '${raw}' has no sort value in '${sortBy}'`,
        "unordered",
      );
    }
    return { value, id: String(raw) };
  };
}

function isValue(value: unknown): value is string | number {
  return typeof value === "string" ||
    (typeof value === "number" && Number.isFinite(value));
}
