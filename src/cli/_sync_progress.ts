// Internal: `sync`'s progress line, and how long the rate limit holds the run, judged from the client's events.

import type { PartnerApiEvent } from "../core/events.ts";
import type { RateLimit } from "../core/rate_limiter.ts";
import {
  type RatePriority,
  rateShare,
  SERVICE_RATE_LIMIT,
} from "../core/_rate_options.ts";
import { emptyWindow, recordSend, slotWait } from "../core/_rate_window.ts";
import type { SyncProgress } from "../sync/sync_options.ts";
import type { Session } from "./_session.ts";
import { counted, itemsPerSecond, statusLine } from "./_render.ts";

/** What the run sent, as its limiter counts it for the run's priority. */
type RateState = ReturnType<typeof rateState>;

/** An empty state for a run of `priority` under `limit`, counted against the share the client's limiter gives it. */
export function rateState(
  priority: RatePriority | undefined = "low",
  limit: RateLimit = SERVICE_RATE_LIMIT,
) {
  return {
    /** The latest sends (epoch ms), as many as the run's share of a window: a `"low"` run (sync's default) leaves the reserve. */
    window: emptyWindow(rateShare(limit, priority)),
    interval: limit.interval,
    /** Until when a 429 told the client to wait (epoch ms). */
    retryUntil: -Infinity,
  };
}

export function heard(state: RateState, event: PartnerApiEvent, now: number) {
  if (event.type === "api.request") recordSend(state.window, now);
  else if (event.type === "api.retry" && event.status === 429) {
    state.retryUntil = Math.max(state.retryUntil, now + event.delayMs);
  }
}

/** How long (ms) the rate limit holds the run at `now`: until the oldest send of a full share leaves, or a 429's wait ends. */
export function rateHold(state: RateState, now: number): number {
  return Math.max(
    slotWait(state.window, state.interval, now),
    state.retryUntil - now,
  );
}

/**
 * Items read and items/s: one line kept current on a terminal, else a line a second from a second in (a line at the
 * start would contradict a short run's result); while the rate limit holds the run, a tick a second says for how long.
 */
export function progressLine(
  out: Session["io"]["stderr"],
  now: () => number,
  started: number,
  priority?: RatePriority,
) {
  let holding = false;
  let lastLine = started;
  let text = "starting";
  const rate = rateState(priority);
  const { show, clear } = statusLine(out);
  const tick = () => {
    const hold = rateHold(rate, now());
    const was = holding;
    holding = hold >= 1000; // a shorter wait is pacing, not a hold worth a word
    // Off a terminal: one line when a hold begins, not one a second.
    if (holding && (out.isTerminal || !was)) show(`${text}; ${holdText(hold)}`);
  };
  const timer = setInterval(tick, 1000);
  return {
    // Erases the line (another line comes, --verbose), ticking on: a hold is still said.
    clear,
    heard(event: PartnerApiEvent) {
      heard(rate, event, now());
      if (event.type === "api.retry") tick();
    },
    update(progress: SyncProgress) {
      const at = now();
      const read = counted(progress.read, "item");
      const rate = itemsPerSecond(progress.read, (at - started) / 1000);
      const requests = counted(progress.requests, "request");
      text =
        `${read} read (${progress.inserted} new, ${progress.updated} changed, ${progress.deleted} removed), ${rate}, ${requests}`;
      if (!out.isTerminal && at - lastLine < 1000) return;
      lastLine = at;
      show(text);
    },
    end() {
      clearInterval(timer);
      clear();
    },
  };
}

/** `waiting for the rate limit, 41 s`. */
export function holdText(ms: number): string {
  return `waiting for the rate limit, ${Math.ceil(ms / 1000)} s`;
}
