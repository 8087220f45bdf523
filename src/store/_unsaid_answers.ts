// Internal: answers a fleet's store failed to take (out of reach, its data kept). Unheard, their sends hold their
// slots for the hold (a minute): told again before the process's next take, and on a timer of their own (no caller
// may be left, and another process may wait for those slots), until the hold frees them anyway.

import { HOLD } from "./_window_rules.ts";

export class UnsaidAnswers {
  #answers: string[] = [];
  #since: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #tries = 0;
  readonly #retell: (answers: string[]) => void;
  readonly #pauseAfter: (tries: number) => number;

  /** `retell` gets them back when a pause (`pauseAfter` the tries so far) ends. */
  constructor(
    retell: (answers: string[]) => void,
    pauseAfter: (tries: number) => number,
  ) {
    this.#retell = retell;
    this.#pauseAfter = pauseAfter;
  }

  get size(): number {
    return this.#answers.length;
  }

  /** Keeps `answers` the store failed to take at `now`, to tell again after a pause, while the hold may count them. */
  keep(answers: readonly string[], now: number): void {
    this.#answers.push(...answers);
    this.#since ??= now;
    if (now - this.#since > HOLD) return void this.drain();
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#retell(this.#answers.splice(0));
    }, this.#pauseAfter(this.#tries++));
  }

  /** The first `most`, to tell before a take; `told` once the store took them. */
  first(most: number): string[] {
    return this.#answers.slice(0, most);
  }

  told(count: number): void {
    this.#answers.splice(0, count);
    if (this.#answers.length === 0) this.drain();
  }

  /** Every one left, forgotten here (its timer too): the store heard them, or the limiter ends. */
  drain(): string[] {
    clearTimeout(this.#timer);
    this.#timer = this.#since = undefined;
    this.#tries = 0;
    return this.#answers.splice(0);
  }
}
