// Internal: which writes without lock() of one JSONL sink still stand on what their callers saw (through load() and
// the sink's commits; writes may be pipelined). Not knowing what a batch was built on, the sink judges by time: a write
// stands while the copy changed only by the sink's writes in line since its caller's last sight of it (never seen:
// since the sink's first look), and no write failed since its caller's last load() or commit under lock() (every
// narrower rule let an older checkpoint stand). Writes under lock() are not judged; every load() is the caller's (a
// poll while the sink writes belongs on another sink: docs/sync.md).

/** What a write in line was called after: its caller's last sight of the copy, and last load(). */
export type Sighting = Readonly<{ seen: number; loaded: number }>;

/** One sink's record of the copy's changes as it learns of them, on a clock of its own events. */
export class UnlockedWrites {
  #clock = 0;
  /** The copy's look as the sink last knew it, and when. */
  #known: { look: string; at: number } | undefined;
  /** When a caller last saw the copy (a load() or a commit ended); undefined before either. */
  #seen: number | undefined;
  #loaded = -Infinity;
  /** After when the copy changed other than by a write in line: another run, or the sink under its lock(). */
  #changed = -Infinity;
  #failed = -Infinity;

  /** The copy's look, as a check found it now: another than the one known is a change the sink did not make. */
  checked(look: string): void {
    const at = ++this.#clock;
    // Dated just before this look, not after the one before: no caller saw the change, as a caller sees the copy only
    // at a check or a commit, and a write called between the two looks would be taken for one that saw it.
    if (this.#known && this.#known.look !== look) this.#changed = at - 0.5;
    this.#known = { look, at };
  }

  /** A load() answered, with the look its check found. */
  loaded(): void {
    this.#seen = this.#loaded = this.#known!.at;
  }

  /**
   * The sink committed `look`; `locked`, under lock(): a change no write in line called before it was built on, and its
   * caller's own, as a load() is (a retry under the lock after a failure).
   */
  committed(look: string, locked: boolean): void {
    this.#known = { look, at: ++this.#clock };
    this.#seen = this.#known.at;
    if (locked) this.#changed = this.#loaded = this.#known.at;
  }

  /** A write failed (in line, or under lock()): the writes called before the next load() may have counted its items. */
  failed(): void {
    this.#failed = ++this.#clock;
  }

  /** What a write in line called now is built on: never seen, the copy as it stands at the call. */
  sighting(): Sighting {
    return { seen: this.#seen ?? ++this.#clock, loaded: this.#loaded };
  }

  /** Why a write in line called at `sighting` may not be written: undefined when it stands. */
  refusal(sighting: Sighting): "failed" | "changed" | undefined {
    if (this.#failed > sighting.loaded) return "failed";
    return this.#changed > sighting.seen ? "changed" : undefined;
  }
}
