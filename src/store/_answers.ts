// Internal: a fleet limiter's answers on their way to the store: told together as they come, and those the store
// missed (out of reach) kept to tell before a later take, while their hold may still count them.

import { HOLD } from "./_window_rules.ts";

/** Answers told at once, at most (as many as a take asks for). */
const MOST_AT_ONCE = 64;

/** The answers of one process's sends, told to its store through `answer`. */
export class Answers {
  readonly #answer: (sends: readonly string[]) => Promise<void>;
  readonly #now: () => number;
  /** Answered sends not yet told to the store: told together. */
  readonly #waiting: string[] = [];
  #telling = false;
  /** Answers the store failed to take, each with when. */
  #unsaid: { readonly answer: string; readonly at: number }[] = [];

  constructor(
    answer: (sends: readonly string[]) => Promise<void>,
    now: () => number,
  ) {
    this.#answer = answer;
    this.#now = now;
  }

  /** Adds an answer; the telling that starts, if none is under way (its failures are kept, it never rejects). */
  add(send: string): Promise<void> | undefined {
    this.#waiting.push(send);
    return this.#telling ? undefined : this.#tell();
  }

  /** Tells the store of the answers, as many at once as came meanwhile. */
  async #tell(): Promise<void> {
    this.#telling = true; // at once: the first await comes after
    try {
      while (this.#waiting.length > 0) {
        const answers = this.#waiting.splice(0, MOST_AT_ONCE);
        await this.#answer(answers).catch(() => {
          const at = this.#now();
          for (const answer of answers) this.#unsaid.push({ answer, at });
        });
      }
    } finally {
      this.#telling = false;
    }
  }

  /** Before a take, up to a take's worth of the answers the store missed, while their hold counts (else held a minute). */
  async tellUnsaid(): Promise<void> {
    const now = this.#now();
    this.#unsaid = this.#unsaid.filter(({ at }) => now - at < HOLD);
    const told = new Set(this.#unsaid.slice(0, MOST_AT_ONCE));
    if (told.size === 0) return;
    await this.#answer([...told].map(({ answer }) => answer));
    this.#unsaid = this.#unsaid.filter((unsaid) => !told.has(unsaid));
  }
}
