// Internal: `sync`'s progress line, and how long the rate limit holds the run, judged from the client's events.

import type { PartnerApiEvent } from "../core/events.ts";
import type { RateLimit } from "../core/rate_limiter.ts";
import { SERVICE_RATE_LIMIT } from "../core/_rate_options.ts";
import type { SyncProgress } from "../sync/sync_options.ts";
import type { Session } from "./_session.ts";

/** Below this, a wait is pacing, not a hold worth a word. */
const SHOWN_HOLD = 1000;

/** What the run sent, as the rate limit counts it. */
export interface RateState {
  /** When the last sends went out (epoch ms), at most `limit.requests` of them, oldest first. */
  readonly sends: number[];
  /** Until when a 429 told the client to wait (epoch ms). */
  retryUntil: number;
}

/** Takes in one client event at `now`. */
export function heard(
  state: RateState,
  event: PartnerApiEvent,
  now: number,
  limit: RateLimit = SERVICE_RATE_LIMIT,
): void {
  if (event.type === "api.request") {
    state.sends.push(now);
    if (state.sends.length > limit.requests) state.sends.shift();
  } else if (event.type === "api.retry" && event.status === 429) {
    state.retryUntil = Math.max(state.retryUntil, now + event.delayMs);
  }
}

/** How long (ms) the rate limit holds the run at `now`: a full window, or a 429's wait. */

export function rateHold(
  state: RateState,
  now: number,
  limit: RateLimit = SERVICE_RATE_LIMIT,
): number {
  const { sends } = state;
  const oldest = sends.length >= limit.requests
    ? sends[sends.length - limit.requests]!
    : -Infinity;
  return Math.max(0, oldest + limit.interval - now, state.retryUntil - now);
}

/**
 * Items read (a sweep that finds nothing changed still reads) and items/s: one line kept current on a terminal, else a
 * line a second; while the rate limit holds the run, a tick a second says so and for how long.
 */
export function progressLine(
  out: Session["io"]["stderr"],
  now: () => number,
  started: number,
) {
  let shown = false;
  let lastLine = 0;
  let text = "starting";
  let holding = false;
  const rate: RateState = { sends: [], retryUntil: 0 };
  const show = (line: string) => {
    if (out.isTerminal) {
      out.write(`\r\x1b[K${line}`);
      shown = true;
    } else out.write(`${line}\n`);
  };
  const tick = () => {
    const hold = rateHold(rate, now());
    const was = holding;
    holding = hold >= SHOWN_HOLD;
    // Off a terminal: one line when a hold begins, not one a second.
    if (holding && (out.isTerminal || !was)) {
      show(`${text}; ${holdText(hold)}`);
    }
  };
  const timer = setInterval(tick, 1000);
  return {
    heard(event: PartnerApiEvent) {
      heard(rate, event, now());
      if (event.type === "api.retry") tick();
    },
    update(progress: SyncProgress) {
      const at = now();
      const seconds = Math.max((at - started) / 1000, 0.001);
      text =
        `${progress.read} items read (${progress.inserted} new, ${progress.updated} changed, ${progress.deleted} removed), ${
          Math.round(progress.read / seconds)
        } items/s, ${progress.requests} requests`;
      if (!out.isTerminal && at - lastLine < 1000) return;
      lastLine = at;
      show(text);
    },
    end() {
      clearInterval(timer);
      if (shown) out.write("\r\x1b[K");
      shown = false;
    },
  };
}

/** `waiting for the rate limit, 41 s`. */
export function holdText(ms: number): string {
  return `waiting for the rate limit, ${Math.ceil(ms / 1000)} s`;
}
