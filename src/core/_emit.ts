// Internal: hands an event to a listener, frozen, and ignores what it throws.
// Callers check for a listener first, so that nobody listening costs nothing.

import type { EventListener, PartnerApiEvent } from "./events.ts";

/** Freezes `event` (and its quota) and gives it to `listener`. */
export function emit(listener: EventListener, event: PartnerApiEvent): void {
  if (event.type === "token.request" && event.quota !== undefined) {
    for (const bucket of event.quota) Object.freeze(bucket);
    Object.freeze(event.quota);
  }
  callListener(listener, Object.freeze(event));
}

/**
 * Calls a listener the user gave (`onQuota`, ...) and ignores what it
 * throws or the promise it rejects: no unhandled rejection can end the
 * process.
 */
export function callListener<T>(
  listener: (value: T) => unknown,
  value: T,
): void {
  try {
    const result = listener(value);
    if (result instanceof Promise) result.catch(() => {});
  } catch {
    // A listener's failure must never change what the module does.
  }
}
