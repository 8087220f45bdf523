// A sync sink on a JSONL file: lines appended, a side file as the commit point, all checked before anything changes.

import { unlink } from "node:fs/promises";
import type { SinkLockOptions, SyncCheckpoint, SyncSink } from "./sink.ts";
import { type FileLock, takeFileLock } from "./_file_lock.ts";
import {
  fileError,
  identityOf,
  openFile,
  openToWrite,
  readRange,
  removeFile,
  renameFile,
  replaceFile,
  statOf,
} from "./_files.ts";
import { checkLockWait, lockLost, runToken } from "./_lease.ts";
import { guardCycleEnd } from "./_deletes.ts";
import {
  optionNames,
  requireKnownOptions,
  requireText,
} from "../core/_check.ts";
import {
  checkCopy,
  type Committed,
  type CopyFiles,
  copyRows,
  EMPTY,
  endAfter,
  expectEnd,
  type FileEnd,
  itemLines,
  type KeyOf,
  rewriteIds,
  sideFileText,
  writeWithout,
} from "./_jsonl_state.ts";
import { cycleChanges } from "./_jsonl_cycle.ts";
import { UnlockedWrites } from "./_unlocked_writes.ts";
import { MAX_GUARDED_ROWS } from "./_window_guard.ts";
import { sinkMismatch, SyncError } from "./sync_error.ts";

/**
 * Options of {@linkcode createJsonlSink}.
 *
 * @example Waiting at most 5 s for another run
 * ```ts
 * import { createJsonlSink, type JsonlSinkOptions } from "@partner-api/client/sync";
 * import { equal } from "node:assert/strict";
 *
 * const options: JsonlSinkOptions = { lockWait: 5_000 };
 * const sink = createJsonlSink(".test-tmp/doc-jsonl-options.jsonl", options);
 * equal(typeof sink.lock, "function");
 * ```
 */
export type JsonlSinkOptions = SinkLockOptions;
const JSONL_OPTIONS = optionNames<JsonlSinkOptions>()(
  "lockWait onLockWait now",
);

/**
 * A sink that appends items to a JSONL file, one JSON object per line; the commit is replacing `<path>.checkpoint.json`
 * (checkpoint, committed length, first and last lines' fingerprints) once the lines are synced. `load()` changes nothing
 * and refuses a file the sink did not make, a damaged side file, or a copy cut or changed (`SyncError`
 * `"sink-mismatch"`). A sweep cycle writes `<path>.rewrite`, renamed over the copy once complete; `<path>.lock` keeps
 * runs apart. No file is opened through a link (`"link"`); new files are 0600. Needs read and write permission on the
 * path and `<path>.*`. More: docs/sync.md, "What a sink promises".
 *
 * @example Lines and checkpoint
 * ```ts
 * import { createJsonlSink } from "@partner-api/client/sync";
 * import { equal } from "node:assert/strict";
 *
 * await Deno.mkdir(".test-tmp", { recursive: true });
 * const path = ".test-tmp/doc-jsonl-sink.jsonl";
 * for (const file of [path, `${path}.checkpoint.json`]) await Deno.remove(file).catch(() => {});
 * const sink = createJsonlSink<{ n: number }>(path);
 * equal(await sink.load(), undefined); // no copy yet
 * const checkpoint = { version: 1 as const, path: "numbers", sortBy: "n", id: "n", query: {}, edge: { value: 1, id: "1" }, offset: 1, full: false, complete: true };
 * await sink.write([{ n: 1 }], checkpoint, ["1"]);
 * equal(await Deno.readTextFile(path), '{"n":1}\n');
 * equal((await sink.load())?.offset, 1);
 * ```
 */
export function createJsonlSink<T>(
  path: string,
  options: JsonlSinkOptions = {},
): SyncSink<T> {
  const context = "Cannot create JSONL sink";
  requireText(path, context, "path");
  requireKnownOptions(options, JSONL_OPTIONS, context);
  const lockWait = checkLockWait(options, context);
  const copy = new JsonlCopy(path, { ...options, lockWait });
  // A plain object: a user may spread it to wrap a method.
  return {
    load: () => copy.load(),
    lock: (run = {}) => copy.lock(run.signal),
    marksDeletes: false,
    keepsChanges: false,
    write: (...batch) => copy.write(...batch),
    liveRows: (cycle, keyOf) => copy.liveRows(cycle, keyOf),
    holds: (ids, keyOf, cycle) => copy.holds(ids, keyOf, cycle),
  };
}

/** A copy's checkpoint as a look saw it: none (`"null"`) is a look too. */
const lookOf = (committed: Committed | undefined) =>
  JSON.stringify(committed?.checkpoint ?? null);

/** What a write is given: items, their checkpoint, their ids, the run's context. */
type Batch = Parameters<SyncSink<unknown>["write"]>;

/** Why a write without `lock()` is refused (what `UnlockedWrites` found), and what to do instead. */
const REFUSED = {
  changed:
    "it was committed to since this sink's caller last saw it (by another run, by this sink under its lock(), or by a write of this sink that failed after its commit)",
  failed:
    "a write of this sink failed since its caller's last load() or commit under lock(), and this one may count its items",
  instead: "load() again, and write from its checkpoint",
};

/** One JSONL copy, its side file and its lock, as one run sees them. */
class JsonlCopy {
  readonly #files: CopyFiles;
  /** The writes without `lock()`, one after another, each under a lock of its own, and what their callers saw. */
  #writes: Promise<unknown> = Promise.resolve();
  readonly #unlocked = new UnlockedWrites();
  /** Steps on the copy's state, one at a time: a load() read before a commit and set after put an older state back. */
  #turn: Promise<unknown> = Promise.resolve();
  /** The lock `lock()` took, while held; the writes under it, which its release waits for. */
  #userLock: FileLock | undefined;
  #userWrites: Promise<unknown> = Promise.resolve();
  readonly #options: JsonlSinkOptions & { lockWait: number };
  readonly #token = runToken();
  /** Files this run appended to, and the size its last append left each (its own lines, if not committed). */
  readonly #ours = new Map<string, number>();
  #committed: Committed | undefined;
  /** The copy's ids (null: past the guard's size): one the head brings again (its sort value moved) updates. */
  #ids: Set<string> | null | undefined;
  #loaded = false;
  #lock: FileLock | undefined;

  constructor(path: string, options: JsonlSinkOptions & { lockWait: number }) {
    const side = `${path}.checkpoint.json`;
    this.#files = { copy: path, side, rewrite: `${path}.rewrite` };
    this.#options = options;
  }

  load(): Promise<SyncCheckpoint | undefined> {
    return this.#exclusive(async () => {
      await this.#check();
      this.#unlocked.loaded();
      return this.#committed?.checkpoint ?? undefined;
    });
  }

  /** Runs `step` once the steps before it ended (one at a time: none sees another's state half set). */
  #exclusive<R>(step: () => Promise<R>): Promise<R> {
    const turn = this.#turn.then(step);
    this.#turn = turn.catch(() => {});
    return turn;
  }

  /** The copy checked against its side file, as it stands. */
  async #check(): Promise<void> {
    this.#committed = await checkCopy(this.#files);
    this.#unlocked.checked(lookOf(this.#committed));
    [this.#loaded, this.#ids] = [true, undefined];
    this.#ours.clear(); // a new run: lines past the committed end are a killed run's, cut once the end is checked
  }

  /** Once the run holds the copy, never from `load()`: finishes a cycle's pending rename, or records what the check decided. */
  async #settle(): Promise<void> {
    const committed = this.#committed;
    if (committed?.renaming) await this.#renameOver();
    else if (committed?.unsaved) await this.#save(committed);
  }

  async lock(signal: AbortSignal | undefined): Promise<FileLock> {
    return this.#userLock = await this.#take(signal);
  }

  /** Takes the copy's lock, checks the copy, lets `judge` refuse it before anything changes, settles it; released on a failure. */
  async #take(signal: AbortSignal | undefined, judge?: () => void) {
    const { lockWait: wait, onLockWait: onWait, now } = this.#options;
    const path = `${this.#files.copy}.lock`;
    const taken = await takeFileLock(path, { signal, wait, onWait }, now);
    // Released, it is no longer this sink's: a write after the run is one without lock(), not a lost lock.
    let released: Promise<void> | undefined; // a second release waits for the first
    const lock = {
      ...taken,
      [Symbol.asyncDispose]: () =>
        released ??= (async () => {
          if (this.#userLock === lock) {
            this.#userLock = undefined; // a write from now on takes a lock of its own, once this one is let go
            await this.#userWrites; // the rest of a write under way would go on unguarded
          }
          if (this.#lock === lock) this.#lock = undefined;
          await taken[Symbol.asyncDispose]();
        })(),
    };
    try {
      await this.#exclusive(async () => {
        this.#lock = lock;
        // A dead run's temporary side file, which only it would have renamed or removed: best effort.
        const dead = taken.previous &&
          `${this.#files.side}.${taken.previous}.tmp`;
        if (dead) await removeFile(dead).catch(() => {});
        await this.#check();
        judge?.();
        await this.#settle();
      });
    } catch (error) {
      await lock[Symbol.asyncDispose]().catch(() => {});
      throw error;
    }
    return lock;
  }

  /**
   * Which of `ids` the copy holds (its ids read once a run, the head's added), with `cycle` also its rewrite's (read
   * each time: asked only before a refusal). Unknown past the window guard's size: a million ids cost too much to hold.
   */
  holds(ids: readonly string[], keyOf: KeyOf, cycle?: number) {
    return this.#holds(ids, keyOf, cycle).catch((error) => this.#lostOr(error));
  }

  async #holds(ids: readonly string[], keyOf: KeyOf, cycle?: number) {
    if (!this.#loaded) await this.load();
    // Removed or cut since the run's look: not known here; the first write fails on it.
    const size = (await statOf(this.#files.copy))?.size ?? 0;
    if (size < (this.#committed?.end.length ?? 0)) return undefined;
    if (this.#ids === undefined) {
      const known = this.#ids = new Set<string>(); // the copy as it stands: no cycle's
      const rows = copyRows(this.#files, this.#committed, -1, keyOf);
      for await (const row of rows) {
        if (known.add(row.id).size > MAX_GUARDED_ROWS) break;
      }
    }
    if ((this.#ids?.size ?? 0) > MAX_GUARDED_ROWS) this.#ids = null;
    const known = this.#ids, committed = this.#committed;
    if (!known) return undefined;
    const read = cycle === undefined || !committed
      ? new Set<string>()
      : await rewriteIds(this.#files, committed, cycle, keyOf);
    return new Set(ids.filter((id) => known.has(id) || read.has(id)));
  }

  /** The copy's lines as rows, reading only. */
  async *liveRows(cycle: number, keyOf: KeyOf) {
    try {
      if (!this.#loaded) await this.load();
      yield* copyRows(this.#files, this.#committed, cycle, keyOf);
    } catch (error) {
      await this.#lostOr(error);
    }
  }

  /** A failed read or write of the copy: `"lock-lost"` if another run took it over meanwhile (moving lines under the read), else its own error. */
  async #lostOr(error: unknown): Promise<never> {
    const lost = await this.#lock?.assertHeld().then(() => {}, (why) => why);
    throw lost instanceof SyncError && lost.reason === "lock-lost"
      ? lost
      : error;
  }

  /**
   * A write without `lock()` takes the copy's lock for itself, one such write at a time, and writes from the copy as it
   * then stands (another process's run may hold it meanwhile); refused (`"sink-mismatch"`) when it may not stand on
   * what its caller saw (_unlocked_writes.ts), lest an older checkpoint be put back or one count items never written.
   */
  write(...batch: Batch) {
    if (this.#lock !== undefined && this.#lock === this.#userLock) {
      const done = this.#exclusive(() => this.#commitSeen(batch, true));
      this.#userWrites = this.#userWrites.then(() => done.catch(() => {}));
      return done;
    }
    const sighting = this.#unlocked.sighting();
    const judge = () => {
      const why = this.#unlocked.refusal(sighting);
      if (why) {
        throw sinkMismatch(this.#files.copy, REFUSED[why], REFUSED.instead);
      }
    };
    const write = this.#writes.then(async () => {
      try {
        judge(); // known before the lock: not waited for
        // Judged again before a pending rename is finished: refused, it changed nothing.
        const lock = await this.#take(undefined, judge);
        try {
          return await this.#exclusive(() => this.#commitSeen(batch, false));
        } finally {
          await lock[Symbol.asyncDispose]();
        }
      } catch (error) {
        this.#unlocked.failed();
        throw error;
      }
    });
    this.#writes = write.catch(() => {});
    return write;
  }

  /** A commit, which its caller sees (`locked`: under `lock()`); failed, a write built on it may count its items. */
  async #commitSeen(batch: Batch, locked: boolean) {
    try {
      const done = await this.#commit(...batch);
      this.#unlocked.committed(lookOf(this.#committed), locked);
      return done;
    } catch (error) {
      this.#unlocked.failed(); // under lock() too: for a write without it after the release
      return await this.#lostOr(error); // a cycle's end reads the copy too
    }
  }

  async #commit(...[items, checkpoint, ids, context]: Batch) {
    const { copy, rewrite: rewritePath } = this.#files;
    const now = await this.#ready();
    const keyOf = context?.keyOf;
    const batch = { ...itemLines(items, ids, keyOf), keyOf, context };
    const { lines, written, skipped: skippedIds } = batch;
    if (context?.phase !== "sweep") {
      const held = await this.#linesHeld(batch, now);
      const end = await this.#append(copy, now.end, lines + held);
      const known = written.length > 0 && keyOf &&
        await this.holds(written, keyOf);
      for (const id of written) this.#ids?.add(id); // brought again in this run: an update
      await this.#save({ ...now, checkpoint, end });
      const updated = known ? known.size : 0;
      return { inserted: written.length - updated, updated, skippedIds };
    }
    let under = now.rewrite;
    if (under?.cycle !== context.cycle) {
      // A new cycle's rewrite: an empty file of its own (a link there refused, not removed); the copy as it stands.
      await statOf(rewritePath, true);
      await unlink(rewritePath).catch(() => {});
      await (await openFile(rewritePath, "create")).close();
      under = { end: EMPTY, cycle: context.cycle, mainAt: now.end.length };
    }
    const held = await this.#linesHeld(batch, { ...now, rewrite: under });
    const end = await this.#append(rewritePath, under.end, lines + held);
    const rewrite = { ...under, end };
    if (context.endsCycle === undefined) {
      await this.#save({ ...now, checkpoint, rewrite });
      // Counted when the cycle completes: a JSONL copy has no index.
      return { inserted: 0, updated: 0, skippedIds };
    }
    // The head's lines since the cycle began follow the sweep's: all there, else they would be lost.
    await expectEnd(this.#files, copy, now.end);
    const tail = new TextDecoder().decode(
      await readRange(copy, rewrite.mainAt, now.end.length),
    );
    const changes = await cycleChanges(this.#files, rewrite, tail, keyOf);
    const { drop, ...counts } = changes;
    guardCycleEnd(counts.deleted, counts.held, context.endsCycle, copy);
    const whole = drop.length === 0
      ? await this.#append(rewritePath, rewrite.end, tail)
      : await this.#dropLines(rewrite.end, tail, drop);
    // What was committed before stands if the rewrite is gone before its rename.
    const file = identityOf(rewritePath);
    const replaces = now.checkpoint &&
      { checkpoint: now.checkpoint, end: now.end, file };
    const renaming = { renaming: true, ...(replaces ? { replaces } : {}) };
    await this.#save({ checkpoint, end: whole, ...renaming });
    await this.#renameOver();
    return { ...counts, skippedIds };
  }

  /**
   * The copy's last line of each item the batch skipped or the cycle's end keeps (`context.kept`) that the cycle has not
   * met, to write again: kept as it was, as SQL sinks keep its row, seen. Read only when a batch skips or keeps one.
   */
  async #linesHeld(
    { written, skipped, keyOf, context }: HeldBatch,
    committed: Committed,
  ): Promise<string> {
    const cycle = committed.rewrite?.cycle;
    // Not what the batch writes: its line came after the window's, and every update of the cycle's last window went.
    const wanted = new Set([...skipped, ...context?.kept ?? []]);
    for (const id of written) wanted.delete(id);
    if (wanted.size === 0 || !keyOf || cycle === undefined) return "";
    const lines = new Map<string, string>(), met = new Set<string>();
    for await (const row of copyRows(this.#files, committed, cycle, keyOf)) {
      if (!wanted.has(row.id)) continue;
      if (row.seen) met.add(row.id);
      else lines.set(row.id, `${JSON.stringify(row.item)}\n`);
    }
    return [...lines].filter(([id]) => !met.has(id)).map(([, l]) => l).join("");
  }

  /** The rewrite and `tail` without the lines `drop` names (an item's earlier lines); a run killed meanwhile begins the cycle again. */
  async #dropLines(end: FileEnd, tail: string, drop: readonly number[]) {
    const { checkpoint, end: copyEnd } = this.#committed!;
    const { sweep: _, ...before } = checkpoint!;
    await this.#save({ checkpoint: before, end: copyEnd }); // the lock still this run's
    return await writeWithout(this.#files.rewrite, end.length, tail, drop);
  }

  /** What was committed, once the copy was checked and left consistent. */
  async #ready(): Promise<Committed> {
    // A run another took the copy over from (paused past the stale time) stops here, before a file that run moved.
    await this.#lock?.assertHeld();
    // A new copy's side file first: a run killed in its first batch leaves a copy the next run knows as begun.
    if (!this.#committed) await this.#save({ checkpoint: null, end: EMPTY });
    await this.#settle(); // a cycle's rename that failed in an earlier write under this lock
    return this.#committed!;
  }

  /** Renames the finished rewrite (the record's `end`) over the copy, if it is still there, and records the copy's new end. */
  async #renameOver() {
    const { copy, rewrite } = this.#files;
    if (await statOf(rewrite) !== undefined) await renameFile(rewrite, copy);
    this.#ours.delete(copy);
    const { checkpoint, end } = this.#committed!;
    await this.#save({ checkpoint, end });
  }

  /** The commit point: only while this run still holds the copy. */
  async #save({ unsaved: _, ...next }: Committed): Promise<void> {
    await this.#lock?.assertHeld();
    const run = this.#lock?.token ?? this.#token;
    // Its temporary file gone: the run that took a paused run's lock over removed it as a dead run's.
    await replaceFile(this.#files.side, sideFileText(next), run).catch(
      (error) => this.#lostOr(error),
    );
    this.#committed = next;
  }

  /** Writes `lines` at `from.length` of `path` (cutting what a killed batch left past it), synced; the new end. */
  async #append(path: string, from: FileEnd, lines: string): Promise<FileEnd> {
    const bytes = new TextEncoder().encode(lines);
    if (bytes.length === 0) return from; // nothing checked or cut: not yet this run's file
    const file = await openToWrite(path, from.length === 0);
    try {
      // Lines past the committed end are ours from a write whose commit failed (refused: a later write may count their
      // items), else this run lost the copy.
      const size = (await file.stat()).size;
      const left = this.#ours.get(path);
      await this.#lock?.assertHeld();
      if (left !== undefined && size > from.length) {
        if (size !== left) throw lockLost(path);
        throw sinkMismatch(this.#files.copy, REFUSED.failed, REFUSED.instead);
      }
      // Shorter than committed, or its first or last line another at the run's first write: another process removed,
      // cut or replaced it. Never a write past its end: that hole would read as NUL bytes.
      const cut = "another process removed or cut it";
      if (size < from.length) throw fileError(path, "write", new Error(cut));
      if (left === undefined) await expectEnd(this.#files, path, from);
      await file.truncate(from.length);
      await file.write(bytes, 0, bytes.length, from.length);
      await file.datasync();
    } finally {
      await file.close();
    }
    this.#ours.set(path, from.length + bytes.length);
    return endAfter(from, bytes);
  }
}

/** A batch's lines, its ids as written and skipped, its run's key reader and what it hears (`kept`). */
type HeldBatch = ReturnType<typeof itemLines> & {
  keyOf: KeyOf | undefined;
  context: Batch[3];
};
