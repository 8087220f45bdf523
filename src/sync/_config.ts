// Internal: syncList's options, checked before anything is read or sent.

import {
  checkAtMost,
  checkNumber,
  fieldsOf,
  given,
  type NumberRule,
  oneOf,
  optionNames,
  rangeError,
  requireFunction,
  requireKnownOptions,
  requireOptions,
  requireSignal,
  requireSortField,
  requireText,
  typeError,
} from "../core/_check.ts";
import type { SyncIdentity } from "./_checkpoint.ts";
import type { SyncSink } from "./sink.ts";
import type { SyncOptions } from "./sync_options.ts";
import { MIN_WINDOW, type SyncKey } from "./_window.ts";
import { DEFAULT_MAX_DELETES } from "./_deletes.ts";
import { SyncError } from "./sync_error.ts";
import { checkPriority } from "../core/_rate_options.ts";

const CONTEXT = "Cannot sync";
const SYNC_OPTIONS = optionNames<SyncOptions<unknown>>()(
  "id sortBy sink limit maxLimit concurrency signal query items sortDirection sweep deletes maxDeletes changes now priority maxDuration onProgress onEvent",
);
const FULL =
  "was replaced in 0.4 by 'sweep': write sweep: Infinity for a whole pass now (and deletes are removed too)";

/**
 * The options of a run.
 * @throws {TypeError} (`option`) For a bad id, sort field, sink, query or callback.
 * @throws {RangeError} (`option`) For a bad size, budget or share.
 */
export function syncConfig<T>(path: string, options: SyncOptions<T>) {
  requireKnownOptions(options, SYNC_OPTIONS, CONTEXT, "options", {
    full: FULL,
  });
  const id = options.id;
  if (typeof id !== "function") requireText(id, CONTEXT, "id");
  const sortBy = options.sortBy === undefined
    ? undefined
    : requireSortField(options.sortBy, CONTEXT);
  for (const name of ["items", "onProgress", "onEvent"] as const) {
    requireFunction(options[name], CONTEXT, name);
  }
  requireSignal(options.signal, CONTEXT);
  return {
    identity: {
      path: checkPath(path),
      sortBy: sortBy ?? (typeof id === "string" ? id : null),
      id: typeof id === "string" ? id : null,
      query: { ...checkQuery(options.query) },
      sortDirection: oneOf(
        options.sortDirection,
        ["ASC", "DESC"],
        CONTEXT,
        "sortDirection",
      ),
    } satisfies SyncIdentity,
    ...sweepOptions(options),
    ...pagingOptions(options),
    sink: checkSink(options.sink),
    signal: options.signal,
    now: clockOf(options.now),
    items: options.items,
    onProgress: options.onProgress,
    onEvent: options.onEvent,
    /** The item's place in the order. @throws {SyncError} */
    keyOf: keyReader(id, sortBy),
  };
}

export type SyncConfig<T> = ReturnType<typeof syncConfig<T>>;

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
    ...given({ priority: config.priority, items: config.items, signal }),
  };
}

/**
 * The run's clock, read once here: every reading whole epoch ms (the checkpoint keeps those; a fractional one would
 * leave a copy no later run loads). @throws {TypeError} (`option: "now"`) For a reading that is not epoch ms.
 */
function clockOf(now: (() => number) | undefined): () => number {
  const clock = requireFunction(now, CONTEXT, "now") ?? Date.now;
  const read = () => {
    const at: unknown = clock(); // up to 8.64e15, the last instant a Date holds
    const valid = typeof at === "number" && at >= 0 && at <= 8.64e15;
    if (valid) return Math.floor(at);
    const got = typeof at === "number" ? String(at) : typeof at; // an object's own String may throw
    throw bad("now", "must return epoch ms (0 to 8.64e15)", got);
  };
  read();
  return read;
}

function bad(option: string, rule: string, received?: string): TypeError {
  return typeError(CONTEXT, option, rule, received);
}

function checkSink<T>(sink: SyncSink<T>): SyncSink<T> {
  const rule = "must have load and write (and lock, if any, a function)";
  if (
    typeof sink?.load !== "function" || typeof sink?.write !== "function" ||
    (sink.lock !== undefined && typeof sink.lock !== "function")
  ) {
    throw bad("sink", rule);
  }
  return sink;
}

/** The list's path, refused with a query or fragment: filters go in `query` (the copy's identity), and a path's page parameters were replaced unseen. */
function checkPath(path: string): string {
  const text = requireText(path, CONTEXT, "path");
  const rule = "must hold no query or fragment: give filters as 'query'";
  if (/[?#]/.test(text)) throw bad("path", rule, JSON.stringify(text));
  return text.replace(/^\/+/, "");
}

/** The paging and order parameters belong to their own options. */
function checkQuery(query: Record<string, string> | undefined) {
  if (query !== undefined) requireOptions(query, CONTEXT, "query");
  for (const name of ["sortDirection", "sortBy", "limit", "page"]) {
    if (query !== undefined && name in query) {
      const value = name === "limit"
        ? Number(query[name]) || "<a number>"
        : JSON.stringify(query[name]);
      throw bad(
        "query",
        name === "page"
          ? "must not hold 'page': syncList places its own windows; remove it"
          : `must not hold '${name}': write ${name}: ${value} as an option of syncList`,
      );
    }
  }
  return query;
}

function numberOf<T>(
  options: SyncOptions<T>,
  name: keyof SyncOptions<T>,
  fallback: number,
  rule: NumberRule = "positive integer",
  most = Infinity,
): number {
  const given = options[name] as number | undefined; // checkNumber checks it
  const value = checkNumber(given, fallback, rule, CONTEXT, name);
  return checkAtMost(value, most, CONTEXT, name);
}

function pagingOptions<T>(options: SyncOptions<T>) {
  const limit = numberOf(options, "limit", 50);
  const maxLimit = numberOf(options, "maxLimit", Math.max(limit, 1000));
  if (maxLimit < MIN_WINDOW) {
    const rule =
      `must be at least ${MIN_WINDOW}, so that windows can overlap at any offset`;
    throw rangeError(CONTEXT, "maxLimit", rule, String(maxLimit));
  }
  // A limit above the windows' size is a cost bound no run can keep.
  if (limit > maxLimit) {
    const rule = `must be at most maxLimit (${maxLimit})`;
    throw rangeError(CONTEXT, "limit", rule, String(limit));
  }
  const concurrency = numberOf(options, "concurrency", 1, undefined, 64);
  return { limit, maxLimit, concurrency };
}

/** The sweep's budget, what deletes do, and the guard. */
function sweepOptions<T>(options: SyncOptions<T>) {
  const time = "positive time in ms, at most 2147483647, or Infinity";
  const maxDuration = numberOf(options, "maxDuration", Infinity, time);
  // With a time bound and no count, the sweep spends what the limiter leaves it until the cycle completes or time is up.
  const defaultSweep = maxDuration === Infinity ? 10 : Infinity;
  const sweep = options.sweep === Infinity
    ? Infinity
    : numberOf(options, "sweep", defaultSweep, "non-negative integer");
  const deletes = oneOf(
    options.deletes,
    ["remove", "mark"],
    CONTEXT,
    "deletes",
  );
  const rule = "non-negative finite number";
  const maxDeletes = numberOf(
    options,
    "maxDeletes",
    DEFAULT_MAX_DELETES,
    rule,
    1,
  );
  const changes = oneOf(options.changes, [false, true], CONTEXT, "changes");
  if (changes && options.sink?.keepsChanges === false) {
    throw bad(
      "changes",
      "cannot be true: this sink keeps no change table (a JSONL file keeps none; a PostgreSQL table none when its name passes 55 characters)",
    );
  }
  if (deletes === "mark" && options.sink?.marksDeletes === false) {
    throw bad(
      "deletes",
      'cannot be "mark" for this sink (a JSONL file keeps no deleted_at): use "remove", or a SQL sink',
    );
  }
  return {
    /** List requests the sweep may spend (Infinity: a whole cycle). */
    sweep,
    /**
     * `sweep: Infinity` was asked for: the copy equal to the list now. Not with a time bound: a run that cannot read the
     * whole cycle would begin a fresh one each run, none ending; it goes on with the cycle under way.
     */
    fresh: options.sweep === Infinity && maxDuration === Infinity,
    /** How long the sweep may read, in ms (Infinity: no bound). */
    maxDuration,
    priority: checkPriority(options.priority, "low", CONTEXT),
    deletes,
    maxDeletes,
    changes,
  };
}

/** Reads an item's key: its id, and its sort value (the raw id by default). Sinks read theirs by it too. */
function keyReader<T>(
  id: string | ((item: T) => string),
  sortBy: string | undefined,
): (item: unknown) => SyncKey {
  return (item) => {
    const raw = typeof id === "function" ? id(item as T) : fieldsOf(item)?.[id];
    if (!isValue(raw) || raw === "") {
      const got = raw === null || raw === "" ? JSON.stringify(raw) : typeof raw;
      const where = typeof id === "string" ? ` in '${id}'` : "";
      const message = `Cannot sync: an item has no id${where}: received ${got}`;
      throw new SyncError(message, "missing-id");
    }
    const value = sortBy === undefined ? raw : fieldsOf(item)?.[sortBy];
    if (!isValue(value)) {
      const message =
        `Cannot sync: item '${raw}' has no sort value in '${sortBy}'`;
      throw new SyncError(message, "unordered");
    }
    return { value, id: String(raw) };
  };
}

function isValue(value: unknown): value is string | number {
  return typeof value === "string" ||
    (typeof value === "number" && Number.isFinite(value));
}
