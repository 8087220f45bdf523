// Internal: the fake service's token quota, in UTC hour and day windows.

import type { QuotaBucket } from "../core/quota.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

interface Window {
  readonly name: string;
  readonly length: number;
  readonly limit: number;
  start: number;
  used: number;
}

/** Token quota that resets on the UTC hour and the UTC day, like the real service. */
export class QuotaCounter {
  readonly #windows: Window[];
  readonly #now: () => number;

  constructor(perHour: number, perDay: number, now: () => number) {
    this.#now = now;
    this.#windows = [
      { name: "per_hour", length: HOUR, limit: perHour, start: -1, used: 0 },
      { name: "per_day", length: DAY, limit: perDay, start: -1, used: 0 },
    ];
  }

  #current(): Window[] {
    const now = this.#now();
    for (const window of this.#windows) {
      const start = Math.floor(now / window.length) * window.length;
      if (start !== window.start) {
        window.start = start;
        window.used = 0;
      }
    }
    return this.#windows;
  }

  /** Whether every bucket has a token left. */
  available(): boolean {
    return this.#current().every((window) => window.used < window.limit);
  }

  /** Spends one token from every bucket. */
  spend(): void {
    for (const window of this.#current()) window.used++;
  }

  /** The buckets as they stand now. */
  buckets(): QuotaBucket[] {
    const now = this.#now();
    return this.#current().map((window) => ({
      bucket: window.name,
      limit: window.limit,
      remaining: Math.max(0, window.limit - window.used),
      resetAfter: Math.ceil((window.start + window.length - now) / 1000),
    }));
  }
}
