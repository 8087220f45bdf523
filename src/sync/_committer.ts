// Internal: writes what a pass hands on, a batch at a time (while the next window is read); counts what the sink reports.

import { callListener } from "../core/_emit.ts";
import type { SyncConfig } from "./_config.ts";
import type { Committed, PassRun } from "./_pass.ts";
import type {
  SyncCheckpoint,
  SyncWriteContext,
  SyncWriteReport,
} from "./sink.ts";
import type { SyncProgress } from "./sync_options.ts";

type Phase = SyncWriteContext["phase"];
type Batch<T> = Pick<Committed<T>, "items" | "ids">;
const NOTHING = { items: [], ids: [] };

const SKIPPED_IDS_SHOWN = 100;

/** What a sweep needs of the run. */
export type SweepRun<T> = PassRun<T> & { readonly committer: Committer<T> };
/** What ending a cycle, or judging a window's list, needs of the run. */
export type CycleRun<T> = Pick<SweepRun<T>, "config" | "committer">;

/**
 * Writes batches in order, each once the one before is committed (a failed one stops the run); an empty batch only with
 * news for the next run (a pass's or cycle's end or start), or by `flush`.
 */
export class Committer<T> {
  /** What the run wrote, as the sink reported it; `read`, what its passes handed on (counted as each window arrives). */
  readonly tally = {
    ...{ written: 0, read: 0, pages: 0, inserted: 0, updated: 0, deleted: 0 },
    ...{ skipped: 0, skippedIds: [] as string[] },
  };
  /** The checkpoint of the last batch committed. */
  written: SyncCheckpoint;
  /** The checkpoint handed on last: what the next one builds on. */
  latest: SyncCheckpoint;
  lastReport: SyncWriteReport = {};
  #writing: Promise<void> = Promise.resolve();
  readonly #skipped = new Set<string>();
  readonly #config: SyncConfig<T>;
  /** The run's list requests, counted as they are sent. */
  readonly #requests: { readonly count: number };
  /** A skipped id as reported: without the client's credentials and tokens, which a service may echo in ids. */
  readonly #clean: (id: string) => string;

  constructor(
    config: SyncConfig<T>,
    saved: SyncCheckpoint,
    requests: { readonly count: number },
    clean: (id: string) => string,
  ) {
    this.#config = config;
    this.written = this.latest = saved;
    this.#requests = requests;
    this.#clean = clean;
  }

  /** `#recordNow` once the batch before settled, failed or aborted: what the run did goes on record. */
  async record(checkpoint: SyncCheckpoint): Promise<void> {
    await this.settle();
    await this.#recordNow(checkpoint, "head"); // a head's batch: no row is seen or written
  }

  /** Starts writing `batch` with `checkpoint` once the batch before is committed. */
  async commit(
    phase: Phase,
    checkpoint: SyncCheckpoint,
    batch: Batch<T> = NOTHING,
    more: Partial<SyncWriteContext> = {},
  ): Promise<void> {
    await this.#writing;
    // An abort (Ctrl-C, onProgress) stops the run before the next commit.
    this.#config.signal?.throwIfAborted();
    this.latest = checkpoint;
    if (more.beginsCycle !== true) this.tally.pages++; // else no window
    // A size refused is news too: else a run with nothing new learns it again from maxLimit every run.
    const news = more.beginsCycle === true || more.endsCycle !== undefined ||
      (checkpoint.complete && !this.written.complete) ||
      checkpoint.refusedLimit !== this.written.refusedLimit;
    if (batch.items.length === 0 && !news) return;
    this.#start(batch, checkpoint, phase, more);
  }

  /** `#recordNow` once the batch before is committed, unless aborted: checked in the write's own turn. */
  async flush(phase: Phase, checkpoint: SyncCheckpoint): Promise<void> {
    await this.#writing;
    this.#config.signal?.throwIfAborted();
    await this.#recordNow(checkpoint, phase);
  }

  /** Makes `checkpoint` the latest, and starts writing it alone in this turn unless it was written already. */
  #recordNow(checkpoint: SyncCheckpoint, phase: Phase): Promise<void> {
    this.latest = checkpoint;
    const same = JSON.stringify(checkpoint) === JSON.stringify(this.written);
    return same ? Promise.resolve() : this.#start(NOTHING, checkpoint, phase);
  }

  /** Waits for the batch being written, whatever its outcome. */
  async settle(): Promise<void> {
    await this.#writing.catch(() => {});
  }

  /** Waits for the batch being written; rejects if it failed. */
  async done(): Promise<void> {
    await this.#writing;
  }

  /** Starts writing `batch` with `checkpoint`, and with `more`, what the sink hears of it; the write, to await. */
  #start(
    batch: Batch<T>,
    checkpoint: SyncCheckpoint,
    phase: Phase,
    more: Partial<SyncWriteContext> = {},
  ): Promise<void> {
    const { items, ids } = lastOfEachId(batch.items, batch.ids);
    const { sink, changes, keyOf } = this.#config;
    // The cycle under way, else the last completed (0 before the first).
    const cycle = checkpoint.sweep?.cycle ?? checkpoint.cycles ?? 0;
    const context = { cycle, phase, changes, keyOf, ...more };
    this.#writing = (async () => {
      const report = await sink.write(items, checkpoint, ids, context);
      this.written = checkpoint;
      this.lastReport = report ?? {};
      this.#count(items.length, this.lastReport, context.phase);
    })();
    this.#writing.catch(() => {});
    return this.#writing;
  }

  /** Counts a committed batch, and tells the listeners. */
  #count(handed: number, report: SyncWriteReport, phase: string): void {
    const tally = this.tally;
    const { onEvent } = this.#config;
    const reported = report.skippedIds ?? [];
    const stored = handed - reported.length;
    // The sweep reads a skipped item again: it counts once per run.
    const fresh = reported.filter((id) => !this.#skipped.has(id));
    for (const id of fresh) this.#skipped.add(id);
    const skippedIds = fresh.map(this.#clean);
    // A sink that does not tell inserts from updates: all were new to it.
    const inserted = report.inserted ??
      (report.updated === undefined ? stored : 0);
    const updated = report.updated ?? 0;
    // The head writes new items; the sweep, what changed (it reads all).
    tally.written += phase === "head" ? stored : inserted + updated;
    tally.inserted += inserted;
    tally.updated += updated;
    tally.deleted += report.deleted ?? 0;
    tally.skipped += skippedIds.length;
    const room = SKIPPED_IDS_SHOWN - tally.skippedIds.length;
    tally.skippedIds.push(...skippedIds.slice(0, Math.max(0, room)));
    if (skippedIds.length > 0 && onEvent !== undefined) {
      const event = { type: "sync.skipped" as const, ids: [...skippedIds] };
      callListener(onEvent, Object.freeze(event));
    }
    this.progress();
  }

  /** Tells onProgress how far the run has come: after each committed batch, and at a refusal that commits nothing. */
  progress(): void {
    const { onProgress } = this.#config;
    if (onProgress !== undefined) callListener(onProgress, this.snapshot());
  }

  /** How far the run has come, as `SyncProgress` (frozen). */
  snapshot(): SyncProgress {
    const requests = this.#requests.count;
    const { skipped: _, skippedIds: __, ...counts } = this.tally;
    return Object.freeze({ ...counts, requests });
  }
}

/** The batch with each id once, where it last occurs (the service's latest word). */
function lastOfEachId<T>(items: readonly T[], ids: readonly string[]) {
  const last = new Map(ids.map((id, i) => [id, i] as const));
  if (last.size === ids.length) return { items, ids };
  const kept = ids.flatMap((id, i) => last.get(id) === i ? [i] : []);
  return { items: kept.map((i) => items[i]!), ids: kept.map((i) => ids[i]!) };
}
